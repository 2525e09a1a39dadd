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

    init(_ name: String, _ arguments: [String]) throws {
        process = Process()
        process.executableURL = builtProduct(name)
        process.arguments = arguments
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

/// The values one kind of observer reported, in order, and whether all came on the main thread.
func reports(of kind: String, in lines: [String]) -> (values: [Int], allOnMain: Bool) {
    let mine = lines.map { $0.split(separator: " ") }.filter { $0.count == 3 && $0[0] == kind }
    return (mine.compactMap { Int($0[1]) }, mine.allSatisfy { $0[2] == "main" })
}

/// Every kind of observer, in a program whose main thread runs GLib's main loop, is called on that
/// thread: for writes from a background thread, and for a write from another process.
@Suite struct MainLoopDeliveryTests {
    static let kinds = ["observe", "observe(keys:)", "updates", "tracking", "Observations"]

    @Test func everyObserverKindRunsOnTheMainLoopInOrderAndWithoutPropagationIsHonoured() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("DefaultsGtkTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("settings.json")
        let program = try RunningProgram("defaults-gtk-test-helper", ["delivery", file.path])
        defer { program.stop() }
        let start = await program.lines { $0.contains("ready") && $0.contains("Observations 12 main") }
        #expect(start.contains("ready"), "\(start)")

        // Writes from a background thread of the program, three in a row.
        program.send("write 20 21 22")
        let burst = await program.lines { lines in
            Self.kinds.allSatisfy { reports(of: $0, in: lines).values.last == 22 }
                && reports(of: "debounced", in: lines).values == [22]
        }
        // One call per change, in order, with each change's value.
        #expect(reports(of: "observe", in: burst).values == [20, 21, 22], "\(burst)")
        #expect(reports(of: "observe", in: burst).allOnMain, "\(burst)")
        // One call per change; the handler reads the suite when the main loop runs it.
        let keys = reports(of: "observe(keys:)", in: burst)
        #expect(keys.values.count == 3 && keys.values == keys.values.sorted() && keys.values.last == 22, "\(burst)")
        #expect(keys.allOnMain, "\(burst)")
        // The rest give the latest value when the main loop gets to them (`updates` keeps the
        // newest one), ending at the last.
        for kind in ["updates", "tracking", "Observations", "debounced"] {
            let (values, onMain) = reports(of: kind, in: burst)
            #expect(values.last == 22, "\(kind): \(burst)")
            #expect(values == values.sorted() && Set(values).isSubset(of: [20, 21, 22]), "\(kind): \(burst)")
            #expect(onMain, "\(kind): \(burst)")
        }
        #expect(reports(of: "debounced", in: burst).values == [22], "one call for the burst: \(burst)")

        // A write kept from observers, then one that is not: only the second is delivered.
        program.send("quiet 30")
        program.send("write 31")
        let quiet = await program.lines { lines in Self.kinds.allSatisfy { reports(of: $0, in: lines).values == [31] } }
        for kind in Self.kinds {
            #expect(reports(of: kind, in: quiet).values == [31], "\(kind): \(quiet)")
        }
        program.send("sync")
        _ = await program.lines { $0.contains("synced") }

        // Another process's write.
        #expect(try await runDefaults(["write", file.path, "fontSize", "40"]) == 0)
        let outside = await program.lines { lines in
            Self.kinds.allSatisfy { reports(of: $0, in: lines).values == [40] }
        }
        for kind in Self.kinds {
            let (values, onMain) = reports(of: kind, in: outside)
            #expect(values == [40], "\(kind): \(outside)")
            #expect(onMain, "\(kind): \(outside)")
        }

        program.send("exit")
        #expect(await program.exitStatus() == 0)
    }
}
