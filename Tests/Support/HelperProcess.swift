// Runs the `defaults-test-helper` executable as a second (third, fourth…) process.
import Defaults
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What a run of the helper printed and how it ended.
package struct HelperProcessResult: Sendable {
    package var status: Int32
    package var output: String
    package var errorOutput: String

    /// The non-empty lines of standard output.
    package var lines: [String] { output.split(separator: "\n").map(String.init) }
}

/// Why the helper could not be run.
package struct HelperProcessError: Error, CustomStringConvertible {
    package var description: String
}

/// The `defaults-test-helper` executable that `swift build --build-tests` puts next to the test binary.
package enum HelperProcess {
    /// How long a helper may run before it is ended, in seconds: only a hang takes this long, so
    /// it is longer than a whole run of the suite under a sanitizer on a loaded machine.
    package static let hangDeadline: Double = 600
    /// How long a test waits for a helper's next line, in seconds; a deadline that only stops a hang.
    package static let lineDeadline: Double = 120

    /// Where the helper is expected: beside the running test binary.
    package static var executableURL: URL { builtProduct("defaults-test-helper") }

    /// The product `name` that the build put beside the running test binary.
    package static func builtProduct(_ name: String) -> URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent(name, isDirectory: false)
    }

    /// Runs the helper as the user `nobody`, through `setpriv`, with `arguments`; waits for it to
    /// exit and returns what it printed.
    ///
    /// For what a process that may not write a file does with it (the tests run as root, whom
    /// permissions do not stop). The helper is copied into `directory` first, made readable and
    /// executable by everyone, since the build folder may sit where `nobody` cannot reach.
    package static func runAsNobody(
        _ arguments: [String],
        copyingInto directory: URL,
        environment: [String: String] = [:],
        deadline: Double = HelperProcess.hangDeadline,
        program: String = "defaults-test-helper"
    ) async throws -> HelperProcessResult {
        let running = try startAsNobody(
            arguments,
            copyingInto: directory,
            environment: environment,
            deadline: deadline,
            program: program
        )
        var result = await running.waitForExit()
        // NB: another test's child, forked while the copy was open for writing, may still hold it
        // open for the moment before its own exec; exec then fails with ETXTBSY. Again, a few times:
        // on a loaded machine that moment can outlast a start or two.
        for _ in 0..<5 where result.status == 126 && result.errorOutput.contains("Text file busy") {
            result = try await startAsNobody(
                arguments,
                copyingInto: directory,
                environment: environment,
                deadline: deadline,
                program: program
            )
            .waitForExit()
        }
        return result
    }

    /// Copies the executable at `source` to `destination` through a descriptor closed on exec, so
    /// no process another thread starts meanwhile keeps it open (which would make executing the
    /// copy fail with ETXTBSY).
    private static func copyClosingOnExec(_ source: URL, to destination: URL) throws {
        let bytes = try Data(contentsOf: source)
        let partial = destination.deletingLastPathComponent()
            .appendingPathComponent(".\(destination.lastPathComponent).partial")
        let descriptor = open(partial.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        guard descriptor >= 0 else {
            throw HelperProcessError(description: "cannot create \(partial.path): errno \(errno)")
        }
        let written = bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if count <= 0 { return false }
                offset += count
            }
            return true
        }
        close(descriptor)
        guard written, rename(partial.path, destination.path) == 0 else {
            throw HelperProcessError(description: "cannot write \(destination.path): errno \(errno)")
        }
    }

    /// Starts the helper as the user `nobody`, as ``runAsNobody(_:copyingInto:deadline:)`` does,
    /// and returns it running.
    package static func startAsNobody(
        _ arguments: [String],
        copyingInto directory: URL,
        environment: [String: String] = [:],
        deadline: Double = HelperProcess.hangDeadline,
        program: String = "defaults-test-helper"
    ) throws -> RunningHelper {
        let folder = directory.appendingPathComponent("helper-bin", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let copy = folder.appendingPathComponent(program)
        if !FileManager.default.fileExists(atPath: copy.path) {
            try copyClosingOnExec(builtProduct(program), to: copy)
        }
        for path in [directory.path, folder.path, copy.path] { chmod(path, 0o755) }
        var environment = environment
        // NB: under AddressSanitizer, LeakSanitizer's suppressions file sits in the checkout, which
        // `nobody` may not be able to read; LeakSanitizer then stops the helper at exit. Leak
        // checks stay on for every helper run as this user.
        if ProcessInfo.processInfo.environment["LSAN_OPTIONS"] != nil { environment["LSAN_OPTIONS"] = "detect_leaks=0" }
        return try RunningHelper(
            ["--reuid=nobody", "--regid=nogroup", "--clear-groups", copy.path] + arguments,
            environment: environment,
            deadline: deadline,
            executable: URL(fileURLWithPath: "/usr/bin/setpriv")
        )
    }

    /// Runs the helper with `arguments`, waits for it to exit, and returns what it printed.
    ///
    /// `environment` entries are added to this process's environment. A helper still running after
    /// `deadline` seconds is killed (a hang then shows as a SIGKILL status, not a stuck test).
    package static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        deadline: Double = HelperProcess.hangDeadline
    ) throws -> HelperProcessResult {
        let running = try RunningHelper(arguments, environment: environment, deadline: deadline)
        return running.waitForExit()
    }

    /// ``run(_:environment:deadline:)`` for async tests: waits for the helper without blocking a
    /// thread of the cooperative pool.
    package static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        deadline: Double = HelperProcess.hangDeadline
    ) async throws -> HelperProcessResult {
        let running = try RunningHelper(arguments, environment: environment, deadline: deadline)
        return await running.waitForExit()
    }
}

/// Runs `body`, which blocks, on a Dispatch thread, and waits for it without holding a thread of the
/// cooperative pool: with two cores the pool has two threads, and tasks of other tests need them.
package func offThePool<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: body()) }
    }
}

/// A helper process that runs while the test talks to it: its output arrives line by line.
package final class RunningHelper: Sendable {
    private let process: Process
    /// The helper's standard input, when it was started with one (`takesInput`).
    private let input: Pipe?
    private let output = LineQueue()
    private let errorOutput = LineQueue()
    /// Set once the helper has exited, so the watchdog leaves it alone.
    private let exited = Atomic<Bool>(false)

    /// Starts the helper with `arguments`; it is terminated if still running after `deadline` seconds.
    ///
    /// Deadlines here only stop a hang, so they are longer than a whole run of the suite under a
    /// sanitizer on a loaded machine (600 s for a helper, 120 s for a line): four helpers making a
    /// thousand fsynced commits under one lock can take longer than 60 s on a busy disk.
    ///
    /// `program` names another product of the package to run instead (the `defaults` command);
    /// `executable`, a program outside it.
    package init(
        _ arguments: [String],
        environment: [String: String] = [:],
        deadline: Double = HelperProcess.hangDeadline,
        program: String = "defaults-test-helper",
        executable: URL? = nil,
        takesInput: Bool = false
    ) throws {
        let executable = executable ?? HelperProcess.builtProduct(program)
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw HelperProcessError(
                description: "\(program) not found at \(executable.path); build with `swift build --build-tests`"
            )
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        let input = takesInput ? Pipe() : nil
        process.standardInput = input ?? FileHandle.nullDevice
        self.input = input
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        try process.run()
        self.process = process
        output.drain(stdout.fileHandleForReading)
        errorOutput.drain(stderr.fileHandleForReading)
        // NB: SIGKILL: a helper started from a Dispatch thread inherits its mask, which blocks
        // SIGTERM, so `terminate()` left a helper stuck in `open` of a FIFO running for ever.
        DispatchQueue.global()
            .asyncAfter(deadline: .now() + deadline) { [self] in
                if !exited.load(ordering: .acquiring), process.isRunning { kill(process.processIdentifier, SIGKILL) }
            }
    }

    /// The helper's process id.
    package var processIdentifier: Int32 { process.processIdentifier }

    /// The next line the helper prints; `nil` if it ends, or prints nothing for `timeout` seconds.
    package func nextLine(timeout: Double = HelperProcess.lineDeadline) -> String? {
        output.next(timeout: timeout)
    }

    /// The next line the helper prints on standard error; `nil` as for ``nextLine(timeout:)``.
    package func nextErrorLine(timeout: Double = HelperProcess.lineDeadline) async -> String? {
        await offThePool { self.errorOutput.next(timeout: timeout) }
    }

    /// Reads lines until one satisfies `predicate`, and returns it; `nil` as for ``nextLine(timeout:)``.
    package func line(timeout: Double = HelperProcess.lineDeadline, where predicate: (String) -> Bool) -> String? {
        while let line = nextLine(timeout: timeout) {
            if predicate(line) { return line }
        }
        return nil
    }

    /// ``nextLine(timeout:)`` for async tests: waits on a Dispatch thread, not a thread of the
    /// cooperative pool (which tasks of other tests may need meanwhile).
    package func nextLine(timeout: Double = HelperProcess.lineDeadline) async -> String? {
        await offThePool { self.nextLine(timeout: timeout) }
    }

    /// ``line(timeout:where:)`` for async tests.
    package func line(
        timeout: Double = HelperProcess.lineDeadline,
        where predicate: @escaping @Sendable (String) -> Bool
    ) async -> String? {
        await offThePool { self.line(timeout: timeout, where: predicate) }
    }

    /// ``waitForExit()`` for async tests.
    package func waitForExit() async -> HelperProcessResult {
        await offThePool { self.waitForExit() }
    }

    /// Writes `line` and a newline to the helper's standard input (see `takesInput`).
    package func send(line: String) {
        input?.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// Sends `signal` to the helper.
    package func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits for the helper to exit and returns everything it printed that was not read yet.
    package func waitForExit() -> HelperProcessResult {
        process.waitUntilExit()
        exited.store(true, ordering: .releasing)
        return HelperProcessResult(
            status: process.terminationStatus,
            output: output.rest().map { $0 + "\n" }.joined(),
            errorOutput: errorOutput.rest().map { $0 + "\n" }.joined()
        )
    }
}

/// Lines read from a pipe on a thread of their own, waited for with a timeout.
private final class LineQueue: Sendable {
    private struct State {
        var lines: [String] = []
        var partial: [UInt8] = []
        var ended = false
    }

    private let state = Lock(State())
    private let available = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Reads `handle` to its end on a new thread.
    func drain(_ handle: FileHandle) {
        let thread = Thread { [self] in
            while true {
                let data = handle.availableData
                let complete = state.withLock { state -> Int in
                    guard !data.isEmpty else {
                        if !state.partial.isEmpty { state.lines.append(String(decoding: state.partial, as: UTF8.self)) }
                        state.partial = []
                        state.ended = true
                        return 0
                    }
                    var count = 0
                    for byte in data {
                        if byte == UInt8(ascii: "\n") {
                            state.lines.append(String(decoding: state.partial, as: UTF8.self))
                            state.partial = []
                            count += 1
                        } else {
                            state.partial.append(byte)
                        }
                    }
                    return count
                }
                for _ in 0..<complete { available.signal() }
                if data.isEmpty {
                    available.signal()
                    finished.signal()
                    return
                }
            }
        }
        thread.start()
    }

    /// The next line, waiting up to `timeout` seconds; `nil` at the end or on timeout.
    func next(timeout: Double) -> String? {
        let deadline = DispatchTime.now() + timeout
        while true {
            let taken = state.withLock { state -> (line: String?, ended: Bool) in
                if !state.lines.isEmpty { return (state.lines.removeFirst(), false) }
                return (nil, state.ended)
            }
            if let line = taken.line { return line }
            if taken.ended { return nil }
            if available.wait(timeout: deadline) == .timedOut { return nil }
        }
    }

    /// Every line not taken yet, once the pipe has ended.
    func rest() -> [String] {
        finished.wait()
        finished.signal()
        return state.withLock { state in
            defer { state.lines = [] }
            return state.lines
        }
    }
}
