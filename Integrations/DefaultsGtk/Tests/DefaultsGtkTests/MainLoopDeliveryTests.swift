import Foundation
import Testing

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
        let directory = try makeTemporaryFolder()
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
                && reports(of: "debounced", in: lines).values.last == 22
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
        // NB: the debounced handler is checked above as the others are (in order, on the main
        // loop, ending at 22), not for one call: on the real clock the burst makes two if the
        // writing thread is held up between two writes for longer than the 300 ms quiet period
        // (a loaded machine). One call per quiet period is shown on a clock of the test's own, in
        // the core package's DebounceTests.

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
