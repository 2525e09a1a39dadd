import Foundation
import Synchronization

/// A product of this package (or of the root package) that the build put beside the test binary.
func builtProduct(_ name: String) -> URL {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent(name)
}

/// What a finished process printed, and its exit status.
struct Finished: Sendable {
    var status: Int32
    var output: String
    var errorOutput: String
}

/// Runs `program` (a built product) with `arguments` and waits for it to exit, without holding a
/// thread: the wait is a termination handler, not a blocking call.
func run(_ program: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> Finished {
    let process = Process()
    process.executableURL = builtProduct(program)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = FileHandle.nullDevice
    let status = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do { try process.run() } catch { continuation.resume(throwing: error) }
    }
    // NB: the outputs of these short commands fit their pipes' buffers, so this reads what is there.
    return Finished(
        status: status,
        output: String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
        errorOutput: String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    )
}

/// A built product running while a test talks to it: its standard output arrives line by line.
final class RunningProcess: Sendable {
    private let process: Process
    /// The lines it printed, in order.
    let lines = Mailbox<String>()
    private let exit = Mailbox<Int32>()

    init(_ program: String, _ arguments: [String] = [], environment: [String: String] = [:]) throws {
        let process = Process()
        process.executableURL = builtProduct(program)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        let lines = lines
        let partial = Mutex<[UInt8]>([])
        // NB: read on a thread of its own, not by a `readabilityHandler`: a pipe's FileHandle released
        // with its Process (on Foundation's own thread) while Dispatch still watched its descriptor
        // crashed libdispatch in `_dispatch_event_loop_drain` (seen in DefaultsEtcd's tests, which
        // read their children's output the same way). The thread holds the handle to its end.
        let reader = output.fileHandleForReading
        Thread.detachNewThread {
            while true {
                let data = reader.availableData
                if data.isEmpty { break }
                let complete = partial.withLock { partial -> [String] in
                    var complete: [String] = []
                    for byte in data {
                        if byte == UInt8(ascii: "\n") {
                            complete.append(String(decoding: partial, as: UTF8.self))
                            partial.removeAll()
                        } else {
                            partial.append(byte)
                        }
                    }
                    return complete
                }
                for line in complete { lines.put(line) }
            }
        }
        let exit = exit
        process.terminationHandler = { exit.put($0.terminationStatus) }
        try process.run()
        self.process = process
    }

    /// Asks it to stop (SIGTERM) and waits for its exit status; `nil` if it has not exited in time.
    func stop() async -> Int32? {
        if process.isRunning { process.terminate() }
        return await exit.take()
    }
}
