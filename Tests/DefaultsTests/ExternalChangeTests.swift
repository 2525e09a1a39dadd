import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Changes made outside this process — another process, an editor, `rm` — reach memory and the
/// change sinks as one `.external` event each, with the old and new values.
///
/// Events of one suite arrive in order, so "exactly these events" is checked by a last change that
/// must be the next event: anything spurious would have arrived before it.
@Suite struct ExternalChangeTests {
    /// A suite on `directory/app/settings.json`, recording its events.
    private struct Fixture {
        let file: URL
        let suite: Defaults.Suite
        let recorder: StoreChangeRecorder
        let errors = StoreErrorCollector()

        init(in directory: URL, folder: String = "app", seed: String? = nil) throws {
            file = storeSettingsURL(in: directory.appendingPathComponent(folder, isDirectory: true))
            if let seed {
                try FileManager.default.createDirectory(
                    at: file.deletingLastPathComponent(),
                    withIntermediateDirectories: true
                )
                try storeWriteFile(file, Array(seed.utf8))
            }
            suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            recorder = StoreChangeRecorder(suite)
        }

        func key(_ name: String, default value: Int = 0) -> Defaults.Key<Int> {
            Defaults.Key<Int>(name, default: value, suite: suite)
        }

        /// Another process writes `values` to `name`, one after the other.
        func writeFromAnotherProcess(_ name: String, _ values: Int...) async throws {
            let result = try await HelperProcess.run(["write", file.path, name] + values.map(String.init))
            #expect(result.status == 0, "\(result.errorOutput)")
        }

        /// Saves `text` the way most editors do: a new file, renamed over the old one.
        func saveLikeAnEditor(_ text: String) throws {
            let temporary = file.deletingLastPathComponent().appendingPathComponent(".settings.json.swp")
            try storeWriteFile(temporary, Array(text.utf8))
            guard rename(temporary.path, file.path) == 0 else {
                throw StoreSystemError(operation: "rename", code: errno)
            }
        }

        /// Rewrites the file in place, the way `nano` or `echo >` do: same inode, new bytes.
        ///
        /// NB: with broken-file retries held, so a pause between the two steps on a busy machine
        /// is never taken for a finished, broken save.
        func rewriteInPlace(_ text: String) throws {
            try suite.holdingBrokenFileRetries {
                let handle = try FileHandle(forWritingTo: file)
                try handle.truncate(atOffset: 0)
                try handle.write(contentsOf: Data(text.utf8))
                try handle.close()
            }
        }

        func waitForEvents(_ count: Int) async {
            #expect(await recorder.waitForEvents(count), "expected \(count) events, got \(recorder.changedKeySets)")
        }
    }

    @Test func aWriteByAnotherProcessIsOneExternalEventWithOldAndNewValues() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, seed: #"{"port" : 80, "host" : "a"}"#)
            defer { fixture.recorder.stop() }
            let port = fixture.key("port")
            #expect(fixture.suite[port] == 80)

            try await fixture.writeFromAnotherProcess("port", 8080)
            await fixture.waitForEvents(1)
            #expect(fixture.suite[port] == 8080)
            let event = try #require(fixture.recorder.events.first)
            #expect(event.origin == .external)
            #expect(!event.isPropagationSuppressed)
            #expect(event.valueChanges == ["port": StoreValueChange(.number("80"), .number("8080"))])

            try await fixture.writeFromAnotherProcess("port", 8081)
            await fixture.waitForEvents(2)
            #expect(fixture.recorder.events.count == 2)
            #expect(fixture.suite[port] == 8081)
        }
    }

    @Test func aValueOfTheWrongTypeFromElsewhereIsReportedAndTheLastGoodValueKeptUntilAGoodOneComes() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, seed: #"{"rateLimit" : 10000, "port" : 1}"#)
            defer { fixture.recorder.stop() }
            let rateLimit = fixture.key("rateLimit", default: 100)
            let level = Defaults.Key<String>("level", default: "info", suite: fixture.suite)
            #expect(fixture.suite[rateLimit] == 10000)
            // A key only written here, never read from the file, is known by its type too.
            fixture.suite[level] = "debug"
            try fixture.suite.synchronize()

            // A hand edit breaks both values: the event carries only the port, which changed.
            // (The events are this process's write of the level, then the edit's.)
            try fixture.saveLikeAnEditor(#"{"rateLimit" : "lots", "level" : 5, "port" : 2}"#)
            await fixture.waitForEvents(2)
            #expect(fixture.recorder.events.last?.origin == .external)
            #expect(
                fixture.recorder.events.last?.valueChanges == ["port": StoreValueChange(.number("1"), .number("2"))]
            )
            #expect(fixture.suite[rateLimit] == 10000)
            #expect(fixture.suite[level] == "debug")
            #expect(await fixture.errors.wait(forCount: 2))
            let reports = fixture.errors.errors.map(\.description)
            #expect(reports.count == 2, "\(reports)")
            #expect(
                reports.contains {
                    $0.contains(#""rateLimit" was changed elsewhere to "lots", which is not a value of type Swift.Int"#)
                },
                "\(reports)"
            )
            // The bad values stay in the file until they are mended; nothing here writes over them.
            fixture.suite[fixture.key("other")] = 1
            try fixture.suite.synchronize()
            let text = try String(contentsOf: fixture.file, encoding: .utf8)
            #expect(text.contains(#""lots""#) && text.contains(#""level" : 5"#), "\(text)")

            // The next good value is taken.
            try fixture.saveLikeAnEditor(#"{"rateLimit" : 20000, "level" : 5, "port" : 2, "other" : 1}"#)
            await fixture.waitForEvents(4)
            #expect(
                fixture.recorder.events.last?.valueChanges == [
                    "rateLimit": StoreValueChange(.string("lots"), .number("20000"))
                ]
            )
            #expect(fixture.suite[rateLimit] == 20000)
            #expect(fixture.errors.errors.count == 2)
        }
    }

    @Test func anEditorStyleSaveAndAnInPlaceRewriteAreEachOneEvent() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, seed: #"{"a" : 1, "b" : 2, "c" : 3}"#)
            defer { fixture.recorder.stop() }

            try fixture.saveLikeAnEditor(#"{"a" : 10, "b" : 2, "c" : 3, "d" : 4}"#)
            await fixture.waitForEvents(1)
            try fixture.rewriteInPlace(#"{"a" : 10, "c" : 30, "d" : 4}"#)
            await fixture.waitForEvents(2)
            try await fixture.writeFromAnotherProcess("last", 1)
            await fixture.waitForEvents(3)

            #expect(fixture.recorder.changedKeySets == [["a", "d"], ["b", "c"], ["last"]])
            #expect(fixture.recorder.events.allSatisfy { $0.origin == .external })
            #expect(fixture.suite[fixture.key("c")] == 30)
            #expect(fixture.suite[fixture.key("b", default: -1)] == -1)
            #expect(fixture.errors.errors.isEmpty, "\(fixture.errors.errors)")
        }
    }

    @Test func thisProcesssOwnWritesMakeNoExternalEvents() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory)
            defer { fixture.recorder.stop() }
            for value in 1...20 {
                fixture.suite[fixture.key("mine")] = value
                if value % 5 == 0 { try fixture.suite.synchronize() }
            }
            try fixture.suite.exclusiveTransaction { fixture.suite[fixture.key("mine")] = 21 }
            // The marker comes from outside; it must be the first external event.
            try await fixture.writeFromAnotherProcess("marker", 1)
            await fixture.waitForEvents(22)
            #expect(fixture.recorder.events.filter { $0.origin == .local }.count == 21)
            #expect(fixture.recorder.externalEvents.map { Set($0.changes.keys) } == [["marker"]])
        }
    }

    @Test func anUnflushedLocalChangeWinsUntilItsFlush() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"shared" : 1}"#.utf8))
            // The other process's change to "shared" cannot be written (its disk is full), so it
            // is still pending when a person edits the file, changing the same key and another.
            let writer = try RunningHelper(["pending-wins", file.path])
            #expect(await writer.nextLine() == "pending")
            let temporary = directory.appendingPathComponent(".settings.json.swp")
            try storeWriteFile(temporary, Array(#"{"shared" : 99, "other" : 5}"#.utf8))
            #expect(rename(temporary.path, file.path) == 0)
            // The edit reaches it as one change to "other"; its own "shared" wins until its flush.
            #expect(await writer.nextLine() == "external other shared=2")
            #expect(await writer.nextLine() == "synchronized")
            let result = await writer.waitForExit()
            #expect(result.status == 0, "\(result.errorOutput)")
            let members = try storeFileObject(file)
            #expect(members["shared"] as? Int == 2, "the pending change is written by its flush")
            #expect(members["other"] as? Int == 5)
        }
    }

    @Test func aFailedWriteOverABrokenFileLosesNoKey() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"a" : 1, "b" : 2}"#.utf8))
            let result = try await HelperProcess.run(["broken-full-disk", file.path, "{"])
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(result.lines == ["failed", "synchronized"])
            // Moved aside with its broken text; memory (the last good state) written back whole.
            let members = try storeFileObject(file)
            #expect(members["a"] as? Int == 1)
            #expect(members["b"] as? Int == 2)
            #expect(members["c"] as? Int == 3)
            let aside = try storeDirectoryListing(directory).filter { $0.contains(".corrupt-") }
            #expect(aside.count == 1)
            #expect(try aside.map { try storeFileText(directory.appendingPathComponent($0)) } == ["{"])
        }
    }

    @Test func keysAnotherProcessWroteJoinMemoryWhenThisOneFlushes() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory)
            defer { fixture.recorder.stop() }
            try await fixture.writeFromAnotherProcess("theirs", 7)
            fixture.suite[fixture.key("mine")] = 1
            try fixture.suite.synchronize()
            // Whether the watcher or the flush brought it in first, it arrives once.
            await fixture.waitForEvents(2)
            try await fixture.writeFromAnotherProcess("marker", 1)
            await fixture.waitForEvents(3)
            #expect(fixture.recorder.externalEvents.map { Set($0.changes.keys) } == [["theirs"], ["marker"]])
            #expect(fixture.suite[fixture.key("theirs")] == 7)
            let members = try storeFileObject(fixture.file)
            #expect(members["theirs"] as? Int == 7)
            #expect(members["mine"] as? Int == 1)
        }
    }

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
