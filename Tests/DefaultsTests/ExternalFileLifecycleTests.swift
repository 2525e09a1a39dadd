import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A file deleted, its directory deleted and made again, a file that breaks while open or is
/// written in pieces, a machine without inotify: each reaches memory as the person expects, and
/// the suite keeps following the file.
@Suite struct ExternalFileLifecycleTests {
    private typealias Fixture = ExternalChangeFixture

    @Test func aDeletedFileBringsTheDefaultsBackInOneEvent() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, seed: #"{"a" : 1, "b" : "two"}"#)
            defer { fixture.recorder.stop() }
            let a = fixture.key("a", default: -1)
            #expect(fixture.suite[a] == 1)
            try FileManager.default.removeItem(at: fixture.file)
            await fixture.waitForEvents(1)
            #expect(fixture.suite[a] == -1)
            let event = try #require(fixture.recorder.events.first)
            #expect(event.origin == .external)
            #expect(
                event.valueChanges == [
                    "a": StoreValueChange(.number("1"), nil), "b": StoreValueChange(.string("two"), nil),
                ]
            )
            try await fixture.writeFromAnotherProcess("a", 5)
            await fixture.waitForEvents(2)
            #expect(fixture.recorder.events.count == 2)
            #expect(fixture.suite[a] == 5)
        }
    }

    @Test func aFileDeletedJustBeforeAWriteLeavesOnlyWhatWasWrittenSince() throws {
        try withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, seed: #"{"a" : 1, "b" : "two"}"#)
            defer { fixture.recorder.stop() }
            let (a, c) = (fixture.key("a", default: -1), fixture.key("c", default: -1))
            #expect(fixture.suite[a] == 1)
            // NB: written and flushed at once, most often before the watcher has seen the file go:
            // the new file then holds only "c", and memory must come to hold the same.
            try FileManager.default.removeItem(at: fixture.file)
            fixture.suite[c] = 3
            try fixture.suite.synchronize()
            #expect(try storeFileObject(fixture.file).keys.sorted() == ["c"])
            #expect(fixture.suite.storedValues().keys.sorted() == ["c"])
            #expect(fixture.suite[a] == -1)
        }
    }

    @Test func aDirectoryDeletedAndCreatedAgainIsStillWatched() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, seed: #"{"a" : 1}"#)
            defer { fixture.recorder.stop() }
            try FileManager.default.removeItem(at: fixture.file.deletingLastPathComponent())
            await fixture.waitForEvents(1)
            #expect(fixture.suite[fixture.key("a")] == 0)
            try FileManager.default.createDirectory(
                at: fixture.file.deletingLastPathComponent(),
                withIntermediateDirectories: false
            )
            try fixture.saveLikeAnEditor(#"{"a" : 2}"#)
            await fixture.waitForEvents(2)
            #expect(fixture.suite[fixture.key("a")] == 2)
            #expect(fixture.recorder.changedKeySets == [["a"], ["a"]])
        }
    }

    /// Directories vanishing while the watcher adds or moves a watch (a race every test run that
    /// removes its temporary directories has): the watcher looks further up instead of falling
    /// back to polling, and its report of a fallback never runs under its own lock (which crashed).
    @Test func suitesOpenedAndReleasedWhileTheirDirectoriesVanishNeverFallBackToPolling() async throws {
        try await withTemporaryDirectory(prefix: "DefaultsStoreTests") { directory in
            let errors = StoreErrorCollector()
            let threads = (0..<4)
                .map { thread in
                    StoreThread {
                        for round in 0..<150 {
                            let folder = directory.appendingPathComponent("t\(thread)/r\(round)", isDirectory: true)
                            let file = storeSettingsURL(in: folder.appendingPathComponent("app", isDirectory: true))
                            do {
                                let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
                                suite[Defaults.Key<Int>("n", default: 0, suite: suite)] = round
                                try? suite.synchronize()
                            }
                            try? FileManager.default.removeItem(at: folder)
                        }
                    }
                }
            for thread in threads { await thread.join() }
            let polling = errors.errors.filter {
                if case .pollingForChanges = $0 { return true }
                return false
            }
            #expect(polling.isEmpty, "\(polling)")
        }
    }

    @Test func aFileWhoseDirectoriesAppearAfterTheSuiteOpenedIsWatched() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, folder: "not/yet/there")
            defer { fixture.recorder.stop() }
            try await fixture.writeFromAnotherProcess("late", 3)
            await fixture.waitForEvents(1)
            #expect(fixture.suite[fixture.key("late")] == 3)
            #expect(fixture.recorder.externalEvents.count == 1)
        }
    }

    @Test func aFileThatBreaksWhileOpenIsMovedAsideAndMemoryIsWrittenBack() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, seed: #"{"kept" : 1, "also" : [1, 2]}"#)
            defer { fixture.recorder.stop() }
            let broken = #"{"kept" : 2, "also" : [1, "#
            try fixture.rewriteInPlace(broken)
            // Once moved aside, the values in memory come back as a good file.
            let report = try #require(await fixture.errors.waitForReport())
            guard case .corruptFileRewritten(let url, let movedTo, _) = report else {
                Issue.record("expected corruptFileRewritten, got \(report)")
                return
            }
            #expect(url.path == fixture.file.path)
            #expect(try storeFileText(movedTo) == broken, "moved aside intact")
            #expect(fixture.suite[fixture.key("kept")] == 1, "memory is kept, not the defaults")
            let members = try storeFileObject(fixture.file)
            #expect(members["kept"] as? Int == 1)
            #expect(members["also"] as? [Int] == [1, 2])
            #expect(fixture.recorder.events.isEmpty, "nothing changed in memory")
        }
    }

    @Test func aFileWrittenInPiecesIsNotMovedAsideWhenItEndsWhole() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, seed: #"{"n" : 1}"#)
            defer { fixture.recorder.stop() }
            // An editor that closes the file half-written, then finishes it (quickly: the retries
            // are held only so a busy machine cannot stretch the gap past them).
            try fixture.suite.holdingBrokenFileRetries {
                try fixture.rewriteInPlace(#"{"n" : "#)
                try fixture.rewriteInPlace(#"{"n" : 2}"#)
            }
            await fixture.waitForEvents(1)
            #expect(fixture.suite[fixture.key("n")] == 2)
            try await fixture.writeFromAnotherProcess("marker", 1)
            await fixture.waitForEvents(2)
            #expect(fixture.errors.errors.isEmpty, "\(fixture.errors.errors)")
            #expect(
                try storeDirectoryListing(fixture.file.deletingLastPathComponent())
                    .allSatisfy { !$0.contains("corrupt") }
            )
        }
    }

    @Test func anOldValueAnOutsideChangeReplacesIsReleasedAfterTheSuitesLock() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"p" : {"n" : 1}, "q" : 1}"#.utf8))
            // NB: in a process of its own, with no sink that gets every change: there the change of
            // "p", which nobody observes, is in no event, and memory alone holds the old value.
            let helper = try RunningHelper(["release-outside-lock", file.path])
            #expect(await helper.nextLine() == "ready")
            let next = directory.appendingPathComponent("next.json")
            try storeWriteFile(next, Array(#"{"p" : {"n" : 2}, "q" : 2}"#.utf8))
            #expect(rename(next.path, file.path) == 0)
            // The old value's deinit reads the suite: under the suite's lock, it would stop the process.
            #expect(await helper.nextLine() == "released")
            #expect(await helper.nextLine() == "changed n=2")
            let result = await helper.waitForExit()
            #expect(result.status == 0, "\(result.errorOutput)")
        }
    }

    @Test func whereInotifyIsUnavailableTheFileIsPolledAndThatIsReportedOnce() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"port" : 1}"#.utf8))
            let watcher = try RunningHelper(["watch", file.path], environment: ["DEFAULTS_WATCHER": "poll"])
            var lines: [String] = []
            /// Reads lines into `lines` until `wanted` comes; whether it did.
            func readUntil(_ wanted: String) async -> Bool {
                while let line = await watcher.nextLine() {
                    lines.append(line)
                    if line == wanted { return true }
                }
                return false
            }
            // NB: the report comes from a queue of its own, so it may come before "ready" or after.
            let ready = await readUntil("ready")
            #expect(ready, "\(lines)")
            for port in [2, 3] {
                let result = try await HelperProcess.run(["write", file.path, "port", "\(port)"])
                #expect(result.status == 0, "\(result.errorOutput)")
                let seen = await readUntil("external port=\(port)")
                #expect(seen, "port \(port) not seen: \(lines)")
            }
            watcher.send(SIGKILL)
            _ = await watcher.waitForExit()
            let reports = lines.filter { $0.hasPrefix("error ") }
            #expect(reports.count == 1, "\(lines)")
            #expect(reports.first?.contains("polling it every second") == true)
        }
    }
}
