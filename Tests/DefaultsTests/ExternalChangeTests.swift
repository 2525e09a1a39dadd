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
    private typealias Fixture = ExternalChangeFixture

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
}
