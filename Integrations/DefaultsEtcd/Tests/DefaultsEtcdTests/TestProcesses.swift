import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs `etcdctl` against `server` and returns what it printed.
func etcdctl(_ server: EtcdServer, _ arguments: [String]) throws -> String {
    guard let files = server.certificates else { return try etcdctl(endpoints: [server.clientURL], arguments) }
    let tls = [
        "--cacert", files.authority.path, "--cert", files.clientCertificate.path, "--key", files.clientKey.path,
    ]
    return try etcdctl(endpoints: [server.clientURL], tls + arguments)
}

/// Runs `etcdctl` against `endpoints` and returns what it printed; `input` is its standard input.
func etcdctl(endpoints: [URL], _ arguments: [String], input: String? = nil) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/etcdctl")
    process.arguments = ["--endpoints", endpoints.map(\.absoluteString).joined(separator: ",")] + arguments
    process.environment = ["ETCDCTL_API": "3"]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    let standardInput = Pipe()
    process.standardInput = standardInput
    try process.run()
    // NB: small enough for the pipe's buffer; closed so etcdctl sees the end.
    standardInput.fileHandleForWriting.write(Data((input ?? "").utf8))
    try standardInput.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    guard process.terminationStatus == 0 else {
        throw EtcdServer.ServerError(description: "etcdctl \(arguments) failed: \(text)")
    }
    return text
}

/// Runs `count` helpers at once, the one numbered `index` with `arguments(index)`; returns what each
/// printed and how it ended.
func runHelpers(
    _ server: EtcdServer,
    count: Int,
    environment: [String: String] = [:],
    arguments: @escaping @Sendable (Int) -> [String]
) async throws -> [(status: Int32, output: String)] {
    try await withThrowingTaskGroup(of: (status: Int32, output: String).self) { group in
        for index in 0..<count {
            group.addTask { try await runHelper(server, arguments(index), environment: environment) }
        }
        return try await group.reduce(into: []) { $0.append($1) }
    }
}

/// Runs the `etcd-test-helper` built beside the test binary with `arguments`, its cache of values
/// in `server`'s folder; returns its output.
func runHelper(
    _ server: EtcdServer,
    _ arguments: [String],
    environment: [String: String] = [:]
) async throws -> (status: Int32, output: String) {
    let cacheHome = server.directory.appendingPathComponent("cache").path
    return try await withCheckedThrowingContinuation { continuation in
        // NB: on a thread of its own: waiting for the process must not hold a thread of the pool.
        Thread.detachNewThread {
            do {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
                    .deletingLastPathComponent().appendingPathComponent("etcd-test-helper")
                process.arguments = arguments
                process.environment = ProcessInfo.processInfo.environment
                    .merging(["XDG_CACHE_HOME": cacheHome]) { $1 }.merging(environment) { $1 }
                let output = Pipe()
                process.standardOutput = output
                process.standardError = output
                try process.run()
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: (process.terminationStatus, String(decoding: data, as: UTF8.self)))
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}

/// The product `name` built beside the test binary.
func builtProduct(_ name: String) -> URL {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent(name)
}

/// Runs the product `name` with `arguments` to its end; returns its status and output.
func runProduct(
    _ name: String,
    _ arguments: [String],
    environment: [String: String] = [:]
) async throws -> (status: Int32, output: String) {
    let running = try RunningProduct(name, arguments, environment: environment)
    let status = await running.exitStatus()
    return (status, running.rest())
}

/// A product of this package running as another process, its output read line by line.
final class RunningProduct: Sendable {
    private let process: Process
    private let lines = Mutex<(lines: [String], partial: String, ended: Bool)>(([], "", false))
    private let arrived = NSCondition()

    init(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process = Process()
        process.executableURL = builtProduct(name)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        readToTheEnd(output.fileHandleForReading) { [self] data in
            arrived.lock()
            lines.withLock { state in
                guard let data else {
                    if !state.partial.isEmpty { state.lines.append(state.partial) }
                    state.partial = ""
                    state.ended = true
                    return
                }
                state.partial += String(decoding: data, as: UTF8.self)
                while let newline = state.partial.firstIndex(of: "\n") {
                    state.lines.append(String(state.partial[..<newline]))
                    state.partial.removeSubrange(...newline)
                }
            }
            arrived.broadcast()
            arrived.unlock()
        }
        try process.run()
    }

    deinit {
        stop()
    }

    /// Ends the process (SIGTERM) if it still runs, and waits for it.
    ///
    /// NB: a test must call it for a process that would run on: the thread reading its output holds
    /// this object until the output ends, so the deinit does not come first.
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// Sends `signal` to the process: SIGSTOP holds it up as a stalled machine would, SIGCONT lets
    /// it go on.
    func send(_ signal: Int32) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
    }

    /// The next line it prints, waited for off the pool for up to 120 s (a deadline that only
    /// stops a hang); `nil` if none came.
    func nextLine() async -> String? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                let deadline = Date() + 120
                arrived.lock()
                var line: String?
                while true {
                    let (next, ended) = lines.withLock { state -> (String?, Bool) in
                        state.lines.isEmpty ? (nil, state.ended) : (state.lines.removeFirst(), state.ended)
                    }
                    if let next {
                        line = next
                        break
                    }
                    if ended || !arrived.wait(until: deadline) { break }
                }
                arrived.unlock()
                continuation.resume(returning: line)
            }
        }
    }

    /// Waits off the pool for the process to exit and its output to end; returns its status.
    func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                process.waitUntilExit()
                let deadline = Date() + 120
                arrived.lock()
                while !lines.withLock({ $0.ended }), arrived.wait(until: deadline) {}
                arrived.unlock()
                continuation.resume(returning: process.terminationStatus)
            }
        }
    }

    /// The lines not read yet.
    func rest() -> String {
        lines.withLock { state in state.lines.map { $0 + "\n" }.joined() + state.partial }
    }
}

/// Reads `handle` on a thread of its own until its end, handing each piece to `receive`, then `nil`.
///
/// NB: not a `readabilityHandler`: a pipe's FileHandle released (with its Process, on Foundation's
/// own thread) while Dispatch still watched its descriptor crashed the tests in
/// `_dispatch_event_loop_drain`. The thread holds the handle until the end has been read.
func readToTheEnd(_ handle: FileHandle, _ receive: @escaping @Sendable (Data?) -> Void) {
    Thread.detachNewThread {
        while true {
            let data = handle.availableData
            if data.isEmpty { break }
            receive(data)
        }
        receive(nil)
    }
}
