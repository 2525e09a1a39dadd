// The example service as its users run it: a process of its own on a free loopback port, asked
// over real HTTP, its settings changed by the repository's `defaults` command (another process)
// while it runs, and stopped with SIGTERM.
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite(.serialized) struct GreeterServiceTests {
    @Test func answersFollowTheSettingsWhileItRuns() async throws {
        try await withService { service in
            #expect(try await service.get("/greet?name=Ada") == (200, "Hello, Ada!\n"))

            try await service.defaults("write", "greeting", #""Welcome""#, thenLine: "greeting Welcome")
            #expect(try await service.get("/greet?name=Ada") == (200, "Welcome, Ada!\n"))

            try await service.defaults("write", "shout", "true", thenLine: "shout true")
            #expect(try await service.get("/greet?name=Ada") == (200, "WELCOME, ADA!\n"))

            // Lowered while it runs: the third request of the minute is refused.
            try await service.defaults("write", "rateLimit", "2", thenLine: "rate limit now 2")
            #expect(try await service.get("/greet").status == 200)
            #expect(try await service.get("/greet").status == 200)
            #expect(try await service.get("/greet").status == 429)
            try await service.defaults("write", "rateLimit", "100", thenLine: "rate limit now 100")

            // The log level set to debug from another process: a debug line per answer; set back
            // to info, none. The line this service prints for a change comes from another observer
            // of the key than the log handler's, called in the same delivery: a later change's
            // line shows every observer of the level's change has run (one delivery queue).
            try await service.defaults("write", "logLevel", #""debug""#, thenLine: "settings changed")
            try await service.defaults("write", "greeting", #""Hey""#, thenLine: "greeting Hey")
            #expect(try await service.get("/greet?name=Loud").status == 200)
            await service.waitForLine(containing: "name=Loud")
            try await service.defaults("write", "logLevel", #""info""#, thenLine: "settings changed")
            try await service.defaults("write", "greeting", #""Hi""#, thenLine: "greeting Hi")
            #expect(try await service.get("/greet?name=Quiet") == (200, "HI, QUIET!\n"))
            // Printed after the answer's debug line would have been: a line of the same output.
            try await service.defaults("write", "greeting", #""Hello""#, thenLine: "greeting Hello")
            #expect(!service.lines.all.contains { $0.contains("name=Quiet") }, "a debug line at info")
        }
    }

    @Test func aSecretFromTheCredentialsDirectoryIsUsedAndNeverShown() async throws {
        let password = "hunter2-\(UUID().uuidString.prefix(8))"
        // What an older version stored in the settings file under the name: never used, never shown.
        let stale = "stale-\(UUID().uuidString.prefix(8))"
        try await withService(
            credentials: ["database.password": password + "\n"],
            settings: #"{"database.password": "\#(stale)"}"#
        ) { service in
            // Every line the service logs from now on, debug ones too.
            try await service.defaults("write", "logLevel", #""debug""#, thenLine: "settings changed")
            #expect(
                try await service.get("/database")
                    == (200, "database: connecting with a \(password.count)-character password\n")
            )
            await service.waitForLine(containing: "connecting to the database")
            let write = try service.runDefaults("write", "database.password", #""typed""#)
            #expect(write.status == 2)
            #expect(write.output.contains("is a secret"))
            var shown = write.output
            for arguments in [
                ["read"], ["read", "--merged"], ["read", "database.password"], ["export"], ["describe"],
            ] {
                let result = try service.runDefaults(arguments[0], Array(arguments.dropFirst()))
                #expect(result.status == 0, "defaults \(arguments): \(result.output)")
                shown += result.output
            }
            #expect(shown.contains("<secret>"))
            try await service.defaults("write", "greeting", #""Hi""#, thenLine: "greeting Hi")
            service.terminate()
            #expect(await service.exitStatus() == 0)
            let stored = try String(contentsOf: service.settingsFile, encoding: .utf8)
            #expect(stored.contains("\"Hi\""))
            #expect(!shown.contains(stale), "the stale value is in the defaults output")
            for (place, text) in [
                ("defaults output", shown), ("settings file", stored),
                ("log", service.lines.all.joined(separator: "\n")),
            ] {
                #expect(!text.contains(password), "the secret is in the \(place)")
            }
        }
    }

    /// Issue 51, item 1: `mkfifo D/database.password; CREDENTIALS_DIRECTORY=D greeter-service`
    /// never printed "listening": the secret key's initializer waited in `open` for a writer.
    @Test func aFIFOWhereTheCredentialShouldBeDoesNotKeepItFromStarting() async throws {
        try await withService(credentials: [:], fifos: ["database.password"]) { service in
            // Started: `withService` saw "listening on". The FIFO is no password. (A good file
            // that replaces it later is read at once: SecretFileKindTests, in the root package.)
            let answer = try await service.get("/database")
            #expect(answer == (503, "database: no password\n"))
        }
    }

    @Test func sigtermStoresAWriteStillPending() async throws {
        try await withService { service in
            let visit = try await service.get("/visits", method: "POST")
            #expect(visit == (200, "1\n"))
            // At once: the write may still be in memory, waiting for the coalescing timer. (The
            // shutdown takes longer than that timer here, so this shows the value stored, not who
            // stored it: DefaultsServiceTests' shutdownStoresWhatIsPending shows the service's part.)
            service.terminate()
            #expect(await service.exitStatus() == 0)
            let stored = try Data(contentsOf: service.settingsFile)
            let object = try JSONSerialization.jsonObject(with: stored) as? [String: Any]
            #expect(object?["visits"] as? Int == 1)
        }
    }
}

/// Runs `body` with the example service started on a free port over a settings file in a new
/// directory; stops the service and removes the directory afterwards.
///
/// With `settings`, the settings file holds that text when the service starts. With
/// `credentials`, the service finds those files in `$CREDENTIALS_DIRECTORY`, as systemd's
/// `LoadCredential=` gives them, and a FIFO named by each of `fifos` there.
///
/// With `etcd`, the service's settings are in etcd at that address rather than in the file.
func withService(
    credentials: [String: String]? = nil,
    fifos: [String] = [],
    settings: String? = nil,
    etcd: String? = nil,
    _ body: (RunningService) async throws -> Void
) async throws {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("GreeterServiceTests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    if let settings { try Data(settings.utf8).write(to: directory.appendingPathComponent("settings.json")) }
    var environment: [String: String] = [:]
    if let credentials {
        let folder = directory.appendingPathComponent("credentials", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, contents) in credentials {
            try Data(contents.utf8).write(to: folder.appendingPathComponent(name))
        }
        for name in fifos { #expect(mkfifo(folder.appendingPathComponent(name).path, 0o600) == 0) }
        environment["CREDENTIALS_DIRECTORY"] = folder.path
    }
    let service = try RunningService(
        settings: directory.appendingPathComponent("settings.json"),
        etcd: etcd,
        environment: environment
    )
    do {
        try await service.started()
        try await body(service)
    } catch {
        await service.stop()
        throw error
    }
    await service.stop()
}

/// The `greeter-service` executable, running.
final class RunningService: Sendable {
    let settingsFile: URL
    /// Its standard output, line by line.
    let lines = Lines()
    private let process: Process
    /// Kept for as long as the service runs: a pipe released closes its ends.
    private let output = Pipe()
    /// Signalled when the process exits.
    private let exited = DispatchSemaphore(value: 0)
    private let port = Mutex<Int?>(nil)

    init(settings: URL, etcd: String? = nil, environment: [String: String] = [:]) throws {
        settingsFile = settings
        let process = Process()
        process.executableURL = built("greeter-service")
        process.arguments = ["--port", "0"] + (etcd.map { ["--etcd", $0] } ?? ["--settings", settings.path])
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = output
        // Not the test runner's own: a service left behind must not hold CI's log open.
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let exited = exited
        process.terminationHandler = { _ in exited.signal() }
        self.process = process
        try process.run()
        let lines = lines
        let reading = output.fileHandleForReading
        // On a thread of its own: reads until the process closes its end.
        Thread.detachNewThread {
            var partial: [UInt8] = []
            while true {
                let data = reading.availableData
                if data.isEmpty { break }
                partial += data
                while let newline = partial.firstIndex(of: 0x0A) {
                    lines.append(String(decoding: partial[..<newline], as: UTF8.self))
                    partial.removeSubrange(...newline)
                }
            }
            lines.close()
        }
    }

    /// Waits for the line that says which port it listens on.
    func started() async throws {
        let line = await lines.wait { $0.hasPrefix("listening on ") }
        let number = try #require(line.flatMap { Int($0.dropFirst("listening on ".count)) }, "it did not start")
        port.withLock { $0 = number }
    }

    /// Waits for a line containing `text`, among those after the first `after`.
    func waitForLine(containing text: String, after: Int = 0) async {
        let line = await lines.wait(after: after) { $0.contains(text) }
        #expect(line != nil, "no line containing \(text)")
    }

    /// Asks the service for `path`; the status and the body.
    func get(_ path: String, method: String = "GET") async throws -> (status: Int, body: String) {
        let port = try #require(port.withLock { $0 })
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    /// Runs the `defaults` command on the service's settings file, as a person would, then waits
    /// for the service to print a line containing `line` (one printed after the command started).
    func defaults(_ command: String, _ arguments: String..., thenLine line: String) async throws {
        let before = lines.all.count
        let result = try runDefaults(command, arguments)
        #expect(result.status == 0, "defaults \(command) \(arguments): \(result.output)")
        await waitForLine(containing: line, after: before)
    }

    /// Runs the `defaults` command on the service's settings file and waits for it; its exit
    /// status, and its standard output and error together.
    func runDefaults(_ command: String, _ arguments: String...) throws -> (status: Int32, output: String) {
        try runDefaults(command, arguments)
    }

    /// ``runDefaults(_:_:)-(String,String...)`` with the arguments as an array.
    func runDefaults(_ command: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = built("defaults")
        process.arguments = [command, settingsFile.path] + arguments
        process.standardInput = FileHandle.nullDevice
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("defaults-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        try handle.close()
        return (process.terminationStatus, try String(contentsOf: output, encoding: .utf8))
    }

    /// Sends SIGTERM, as systemd and Kubernetes stop a service.
    func terminate() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
    }

    /// Waits at most 30 s for the process to exit; its exit status, or `nil` when it did not.
    func exitStatus() async -> Int32? {
        let exited = exited
        let inTime = await withCheckedContinuation { continuation in
            DispatchQueue.global()
                .async { continuation.resume(returning: exited.wait(timeout: .now() + 30) == .success) }
        }
        guard inTime else { return nil }
        exited.signal()  // for a later call
        return process.terminationStatus
    }

    /// Stops the service: SIGTERM, then SIGKILL if it has not exited within 30 s.
    func stop() async {
        terminate()
        if await exitStatus() == nil {
            kill(process.processIdentifier, SIGKILL)
            _ = await exitStatus()
        }
    }
}

/// A product built beside these tests.
func built(_ name: String) -> URL {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent(name)
}

/// Lines as they arrive, and waits for one, with no polling.
final class Lines: Sendable {
    private typealias Waiter = (
        after: Int, predicate: @Sendable (String) -> Bool, continuation: CheckedContinuation<String?, Never>,
        deadline: DispatchTime
    )
    /// How long a wait for a line lasts at most.
    static let deadlineSeconds = 60
    private let state = Mutex<(lines: [String], closed: Bool, waiters: [Waiter])>(([], false, []))

    var all: [String] { state.withLock { $0.lines } }

    func append(_ line: String) {
        let ready = state.withLock { state -> [(CheckedContinuation<String?, Never>, String)] in
            state.lines.append(line)
            let index = state.lines.count - 1
            let ready = state.waiters.filter { index >= $0.after && $0.predicate(line) }
            state.waiters.removeAll { index >= $0.after && $0.predicate(line) }
            return ready.map { ($0.continuation, line) }
        }
        for (continuation, line) in ready { continuation.resume(returning: line) }
    }

    func close() {
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiters = [] }
            return state.waiters.map(\.continuation)
        }
        for continuation in waiting { continuation.resume(returning: nil) }
    }

    /// The first line after the first `after` that `predicate` accepts; `nil` once the output
    /// closed without one.
    func wait(after: Int = 0, _ predicate: @escaping @Sendable (String) -> Bool) async -> String? {
        await withCheckedContinuation { continuation in
            let found = state.withLock { state -> String?? in
                if let line = state.lines.dropFirst(after).first(where: predicate) { return .some(line) }
                if state.closed { return .some(nil) }
                state.waiters.append(
                    (after, predicate, continuation, .now() + .seconds(Lines.deadlineSeconds))
                )
                return nil
            }
            if let found {
                continuation.resume(returning: found)
                return
            }
            // Never forever: a line that does not come fails the test instead of hanging the run.
            DispatchQueue.global()
                .asyncAfter(deadline: .now() + .seconds(Lines.deadlineSeconds)) { [self] in
                    let expired = state.withLock { state -> [CheckedContinuation<String?, Never>] in
                        let expired = state.waiters.filter { $0.deadline <= DispatchTime.now() }
                        state.waiters.removeAll { $0.deadline <= DispatchTime.now() }
                        return expired.map(\.continuation)
                    }
                    for continuation in expired { continuation.resume(returning: nil) }
                }
        }
    }
}
