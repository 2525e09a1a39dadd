import Foundation
import Synchronization
import Testing

/// A program of this package (built beside the test binary) running as another process; its
/// output read line by line on a thread of its own.
final class RunningProgram: Sendable {
    private let process: Process
    private let input = Pipe()
    private let state = Mutex<(lines: [String], partial: String, ended: Bool)>(([], "", false))
    private let arrived = NSCondition()

    init(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process = Process()
        process.executableURL = builtProduct(name)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        let handle = output.fileHandleForReading
        Thread.detachNewThread { [self] in
            while true {
                let data = handle.availableData
                arrived.lock()
                state.withLock { state in
                    if data.isEmpty {
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
                if data.isEmpty { break }
            }
        }
    }

    /// Sends `line` to its standard input.
    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// Reads lines, off the pool, until `predicate` holds for all read so far; returns them.
    ///
    /// Stops at the end of the output, or after 60 s (a deadline against a hang, never a measure).
    func lines(until predicate: @escaping @Sendable ([String]) -> Bool) async -> [String] {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                let deadline = Date() + 60
                var taken: [String] = []
                arrived.lock()
                while true {
                    let (next, ended) = state.withLock { state in
                        defer { state.lines.removeAll() }
                        return (state.lines, state.ended)
                    }
                    taken += next
                    if predicate(taken) || ended || !arrived.wait(until: deadline) { break }
                }
                arrived.unlock()
                continuation.resume(returning: taken)
            }
        }
    }

    /// Ends it if it still runs (SIGKILL), and waits.
    ///
    /// NB: not SIGTERM: a helper started from a thread that blocks signals (a pool thread) inherits
    /// that mask, and one left running by a failed test here ignored SIGTERM, so waiting hung.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Waits, off the pool, for it to exit; returns its status.
    func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [process] in
                process.waitUntilExit()
                continuation.resume(returning: process.terminationStatus)
            }
        }
    }
}

/// The product `name` built beside the test binary.
func builtProduct(_ name: String) -> URL {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent(name)
}

/// Runs the root package's `defaults` command, built beside the test binary, to its end.
func runDefaults(_ arguments: [String]) async throws -> Int32 {
    let process = Process()
    process.executableURL = builtProduct("defaults")
    process.arguments = arguments
    try process.run()
    return await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            process.waitUntilExit()
            continuation.resume(returning: process.terminationStatus)
        }
    }
}

/// An X server of its own (Xvfb) for a test's GTK program, on a display number it picks itself.
final class VirtualDisplay: Sendable {
    private let process: Process
    /// The display's name, for `DISPLAY`: ":<n>".
    let name: String

    init() throws {
        let xvfb = ["/usr/bin/Xvfb", "/bin/Xvfb"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let xvfb else { throw Missing(description: "Xvfb is not installed (Debian's xvfb)") }
        process = Process()
        process.executableURL = URL(fileURLWithPath: xvfb)
        // NB: -displayfd 1: Xvfb picks a free display and writes its number to standard output.
        process.arguments = ["-displayfd", "1", "-screen", "0", "800x600x24", "-nolisten", "tcp"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = read(output.fileHandleForReading, until: "\n")
        guard let number = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw Missing(description: "Xvfb did not say which display it took: \(text)")
        }
        name = ":\(number)"
    }

    /// Ends the server, and removes the lock and socket it leaves when killed.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let number = name.dropFirst()
        try? FileManager.default.removeItem(atPath: "/tmp/.X\(number)-lock")
        try? FileManager.default.removeItem(atPath: "/tmp/.X11-unix/X\(number)")
    }

    struct Missing: Error, CustomStringConvertible {
        let description: String
    }
}

/// What `handle` gives until the text holds `marker`, or until its end.
func read(_ handle: FileHandle, until marker: String) -> String {
    var text = ""
    while !text.contains(marker) {
        let data = handle.availableData
        if data.isEmpty { break }
        text += String(decoding: data, as: UTF8.self)
    }
    return text
}

/// Runs the product `name` (built beside the test binary) with `arguments` on `display` to its
/// end: its exit status and what it wrote on standard error.
func run(_ name: String, _ arguments: [String], display: String) async throws -> (status: Int32, errors: String) {
    let process = Process()
    process.executableURL = builtProduct(name)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(["DISPLAY": display, "GDK_BACKEND": "x11"]) { $1 }
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    return await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            continuation.resume(returning: (process.terminationStatus, text))
        }
    }
}

/// A folder of its own in the temporary directory, removed by `remove()`.
func makeTemporaryFolder() throws -> URL {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("DefaultsGtkTests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}
