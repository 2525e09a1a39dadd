import Defaults
import DefaultsTestSupport
import Foundation
import Synchronization
import Testing

/// Migrations at their edges: values already in the new form, many processes at once, a rolling
/// upgrade that writes back, a record carried through export and import.
@Suite struct MigrationEdgeTests {
    /// A window as an older version stored it.
    struct WindowV1: Codable, Equatable, Defaults.Serializable {
        var width: Int
        var height: Int
    }

    /// A window as the new version stores it: one more member.
    struct Window: Codable, Equatable, Defaults.Serializable {
        var width: Int
        var height: Int
        var maximized: Bool
    }

    static func windowKey(_ suite: Defaults.Suite, isFinal: Bool = true) -> Defaults.Key<Window> {
        Defaults.Key<Window>(
            "window",
            default: Window(width: 640, height: 480, maximized: false),
            suite: suite,
            isFinal: isFinal
        ) { (old: WindowV1) in Window(width: old.width, height: old.height, maximized: false) }
    }

    @Test func aValueAlreadyOfTheNewTypeUnderTheKeysOwnNameIsKeptAsItIs() throws {
        try withTemporaryDirectory { directory in
            // Written by a config tool, or restored from a backup of the new version.
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"window": {"width": 1024, "height": 768, "maximized": true}}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let window = Self.windowKey(suite)
            #expect(suite[window] == Window(width: 1024, height: 768, maximized: true))
            try suite.synchronize()
            let stored = try #require(storeFileObject(file)["window"] as? [String: Any])
            #expect(stored["maximized"] as? Bool == true, "the stored value was converted again: \(stored)")
            #expect(suite.appliedMigrations == ["window from window (WindowV1)"])
        }
    }

    @Test func aValueOfTheOldTypeUnderTheKeysOwnNameIsStillConverted() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"window": {"width": 1024, "height": 768}}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            #expect(suite[Self.windowKey(suite)] == Window(width: 1024, height: 768, maximized: false))
            try suite.synchronize()
            let stored = try #require(storeFileObject(file)["window"] as? [String: Any])
            #expect(stored["maximized"] as? Bool == false)
        }
    }

    @Test func aFormerNamesValueIsReadAsTheOldTypeFirst() throws {
        // 90 minutes is also a Double: under a former name, only old versions wrote it.
        let suite = Defaults.Suite.inMemory()
        suite.setStoredValues(["refreshMinutes": .number("90")])
        let refresh = Defaults.Key<Double>("refreshHours", default: 1, suite: suite, formerly: ["refreshMinutes"]) {
            (minutes: Int) in Double(minutes) / 60
        }
        #expect(suite[refresh] == 1.5)
    }

    @Test func duringARollingUpgradeAProcessReadsBackItsOwnWriteOfAConvertedKey() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"window": {"width": 800, "height": 600}}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let window = Self.windowKey(suite, isFinal: false)
            #expect(suite[window] == Window(width: 800, height: 600, maximized: false))
            suite[window] = Window(width: 800, height: 600, maximized: true)
            try suite.synchronize()
            let stored = try #require(storeFileObject(file)["window"] as? [String: Any])
            #expect(stored["maximized"] as? Bool == true)
            #expect(suite[window] == Window(width: 800, height: 600, maximized: true))
            // A second process of the new version reads the same.
            let other = Defaults.Suite(fileURL: file)
            #expect(other[Self.windowKey(other, isFinal: false)] == Window(width: 800, height: 600, maximized: true))
        }
    }

    @Test func aMigrationsBodyRunsOnceInOneProcessOfTenOpeningTheFileAtOnce() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let log = directory.appendingPathComponent("runs.log")
            #expect(try await HelperProcess.run(["old-version", file.path]).status == 0)
            let environment = ["DEFAULTS_TEST_MIGRATION_RUNS_LOG": log.path]
            let processes = try (0..<10)
                .map { _ in
                    try RunningHelper(["new-version", file.path], environment: environment)
                }
            for process in processes {
                let result = await process.waitForExit()
                #expect(result.status == 0, "\(result.errorOutput)")
            }
            let runs = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
            #expect(runs.count == 1, "the body ran \(runs.count) times: \(runs)")
            // Opened again: the record says it ran, so its body does not run at all.
            #expect(try await HelperProcess.run(["new-version", file.path], environment: environment).status == 0)
            #expect(try String(contentsOf: log, encoding: .utf8).split(separator: "\n").count == 1)
        }
    }

    enum Sync: String, Defaults.Serializable { case off, manual, automatic }

    /// Replaces the file as an editor or another process does: a new file renamed over it.
    static func replace(_ file: URL, with text: String) throws {
        let temporary = file.deletingLastPathComponent().appendingPathComponent(".settings.json.new")
        try storeWriteFile(temporary, Array(text.utf8))
        guard rename(temporary.path, file.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    @Test func anOldVersionsWriteOfTheOldFormIsReadConvertedWithNoProblemReported() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"sync": true, "other": 1}"#.utf8))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let sync = Defaults.Key<Sync>("sync", default: .manual, suite: suite, isFinal: false) { (on: Bool) in
                on ? .automatic : .off
            }
            let other = Defaults.Key<Int>("other", default: 0, suite: suite)
            #expect(suite[sync] == .automatic)
            #expect(suite[other] == 1)
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            // An old version, in another process, writes the old form.
            try Self.replace(file, with: #"{"sync": false, "other": 1}"#)
            #expect(await recorder.wait { suite[sync] == .off })
            #expect(recorder.events.allSatisfy { $0.changes["sync"]?.new != .bool(false) }, "\(recorder.events)")
            // A value that is no key's type is reported, after the one above would have been.
            try Self.replace(file, with: #"{"sync": false, "other": "one"}"#)
            #expect(await errors.wait(forCount: 1))
            #expect(errors.errors.count == 1, "\(errors.errors)")
            #expect(errors.errors.first?.description.contains("\"other\"") == true, "\(errors.errors)")
            #expect(suite[sync] == .off)
        }
    }

    /// Records that are no record, as a hand edit or another tool leaves them.
    static let recordsThatAreNone = [
        #"5"#, #"null"#, #"["editor.fontSize from fontSize"]"#, #"{"migrations": "editor.fontSize from fontSize"}"#,
        #"{"migrations": ["other from elsewhere", 7]}"#,
    ]

    @Test(arguments: recordsThatAreNone)
    func aRecordThatIsNoRecordIsReplacedAndWhatItHeldIsReported(record: String) async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"": \#(record), "fontSize": 12}"#.utf8))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
            #expect(suite[fontSize] == 12)
            try suite.synchronize()
            // The value moved, and the record says so now.
            #expect(try storeFileObject(file).keys.sorted() == ["", "editor.fontSize"])
            #expect(suite.appliedMigrations.contains("editor.fontSize from fontSize"))
            // What the record held is in the report, so nothing of it is lost; reported once.
            #expect(await errors.wait(forCount: 1))
            #expect(errors.errors.count == 1, "\(errors.errors)")
            // As the test writes it, but for spaces (the report quotes it compact).
            let held = record.replacingOccurrences(of: " ", with: "")
            let report = errors.errors.first?.description ?? ""
            #expect(report.contains("record of migrations"), "\(report)")
            // Replaced, not read as a default as another unreadable value is.
            #expect(report.contains("it was replaced") && !report.contains("reads its default"), "\(report)")
            #expect(
                report.replacingOccurrences(of: " ", with: "").contains(held.replacingOccurrences(of: " ", with: "")),
                "\(report) should quote \(held)"
            )
            // The file's record is one now: an object listing strings.
            let stored = try #require(storeFileObject(file)[""] as? [String: Any])
            let ids = try #require(stored["migrations"] as? [Any])
            #expect(
                ids.allSatisfy { $0 is String } && ids.contains { $0 as? String == "editor.fontSize from fontSize" }
            )
        }
    }

    @Test func aFormerNamesValueWrittenAfterAFinalMoveIsMovedAtTheNextOpen() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let record = #""": {"migrations": ["editor.fontSize from fontSize"]}"#
            // An old version, still running, wrote its name after the move.
            try storeWriteFile(file, Array("{\(record), \"fontSize\": 12}".utf8))
            let suite = Defaults.Suite(fileURL: file)
            let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
            #expect(suite[fontSize] == 12)
            try suite.synchronize()
            #expect(try storeFileObject(file).keys.sorted() == ["", "editor.fontSize"])
            #expect(try storeFileObject(file)["editor.fontSize"] as? Int == 12)
            #expect(suite.appliedMigrations == ["editor.fontSize from fontSize"])
        }
    }

    @Test func aRenamedKeyWhoseValueIsUnderItsNameAndNowhereElseOpensWithNoWriteAndStillMovesALaterOne() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            // A config tool (or a newer version) wrote the new names; no record, no former name.
            let before = Array(#"{"editor.fontSize": 16, "refreshHours": 2.5}"#.utf8)
            try storeWriteFile(file, before)
            do {
                let suite = Defaults.Suite(fileURL: file)
                let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
                let refresh = Defaults.Key<Double>(
                    "refreshHours",
                    default: 1,
                    suite: suite,
                    formerly: ["refreshMinutes"]
                ) { (minutes: Int) in Double(minutes) / 60 }
                #expect(suite[fontSize] == 16)
                #expect(suite[refresh] == 2.5)
                try suite.synchronize()
                // Nothing to move: nothing was written, not even the record.
                #expect(try storeFileBytes(file) == before)
                #expect(suite.fileReplacementCount == 0)
            }
            // An old version writes the former names: the next launch of the new version moves
            // them away, and the values under the new names stay.
            try Self.replace(
                file,
                with: #"{"editor.fontSize": 16, "fontSize": 12, "refreshHours": 2.5, "refreshMinutes": 30}"#
            )
            let next = try await HelperProcess.run(["new-version", file.path])
            #expect(next.status == 0, "\(next.errorOutput)")
            #expect(
                next.lines.contains { $0.hasPrefix("editor.fontSize 16 ") && $0.hasSuffix(" refreshHours 2.5") },
                "\(next.lines)"
            )
            let stored = try storeFileObject(file)
            #expect(stored["fontSize"] == nil && stored["refreshMinutes"] == nil, "\(stored)")
            #expect(stored["editor.fontSize"] as? Int == 16)
            #expect(stored["refreshHours"] as? Double == 2.5)
        }
    }

    @Test func aFormerNamesValueWrittenAfterAFinalMoveGoesWhereTheNewNameHoldsOne() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let record = #""": {"migrations": ["editor.fontSize from fontSize"]}"#
            try storeWriteFile(file, Array("{\(record), \"editor.fontSize\": 16, \"fontSize\": 12}".utf8))
            let suite = Defaults.Suite(fileURL: file)
            let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
            #expect(suite[fontSize] == 16)
            try suite.synchronize()
            #expect(try storeFileObject(file).keys.sorted() == ["", "editor.fontSize"])
            #expect(try storeFileObject(file)["editor.fontSize"] as? Int == 16)
        }
    }

    @Test func duringARollingUpgradeAnObserverOfAConvertedKeyIsToldWhatItReadBefore() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"sync": false}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let sync = Defaults.Key<Sync>("sync", default: .manual, suite: suite, isFinal: false) { (on: Bool) in
                on ? .automatic : .off
            }
            #expect(suite[sync] == .off)
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            try Self.replace(file, with: #"{"sync": true}"#)
            // Waited for by its event, not by a read: the layer is taken in before its event is
            // delivered (on the delivery queue), so a read may see "automatic" first.
            let toAutomatic = {
                recorder.events.compactMap { $0.changes["sync"] }.filter { $0.new == .string("automatic") }
            }
            #expect(await recorder.wait { !toAutomatic().isEmpty })
            #expect(suite[sync] == .automatic)
            // (The key's creation, reading "off" through, may reach the recorder too: the change
            // looked at is the one to "automatic".)
            let changes = toAutomatic()
            #expect(changes.count == 1, "\(changes)")
            #expect(changes.first?.old == .string("off"), "\(changes)")
        }
    }

    @Test func anOlderFormAnOldVersionStoresUnderAConvertedKeyAfterTheConversionRanIsConvertedAtTheNextOpen() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let record = #""": {"migrations": ["sync from sync (Bool)"]}"#
            try storeWriteFile(file, Array("{\(record), \"sync\": true}".utf8))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let sync = Defaults.Key<Sync>("sync", default: .manual, suite: suite) { (on: Bool) in
                on ? .automatic : .off
            }
            #expect(suite[sync] == .automatic)
            try suite.synchronize()
            #expect(try storeFileObject(file)["sync"] as? String == "automatic")
            #expect(errors.errors.isEmpty, "\(errors.errors)")
        }
    }

    @Test func aResetRightAfterTheKeyIsCreatedReadsTheDefaultFromThenOn() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"fontSize": 16}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
            #expect(suite[fontSize] == 16)
            fontSize.reset()
            #expect(suite[fontSize] == 13)
            try suite.synchronize()
            #expect(suite[fontSize] == 13)
            #expect(try storeFileObject(file).keys.sorted() == [""])
            let again = Defaults.Suite(fileURL: file)
            #expect(
                again[Defaults.Key<Int>("editor.fontSize", default: 13, suite: again, formerly: ["fontSize"])] == 13
            )
        }
    }

    @Test func twoKeysThatWouldTakeEachOthersValueAreBothRefusedAndNothingIsLost() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"cycA": 1, "cycB": 2}"#.utf8))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let first = Defaults.Key<Int>("cycA", default: 0, suite: suite, formerly: ["cycB"])
            let second = Defaults.Key<Int>("cycB", default: 0, suite: suite, formerly: ["cycA"])
            #expect(suite[first] == 1)
            #expect(suite[second] == 2)
            try suite.synchronize()
            #expect(await errors.wait(forCount: 2))
            #expect(errors.errors.allSatisfy { "\($0)".contains("neither is run") }, "\(errors.errors)")
            let stored = try storeFileObject(file)
            #expect(stored["cycA"] as? Int == 1 && stored["cycB"] as? Int == 2, "\(stored)")
            #expect(suite.appliedMigrations.isEmpty)
        }
    }

    @Test func twoKeysWithTheSameFormerNameAreRefusedAndTheValueStaysWhereItIs() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"old": 7}"#.utf8))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            _ = Defaults.Key<Int>("twinA", default: 0, suite: suite, formerly: ["old"])
            _ = Defaults.Key<Int>("twinB", default: 0, suite: suite, formerly: ["old"])
            try suite.synchronize()
            #expect(await errors.wait(forCount: 2))
            #expect(try storeFileObject(file)["old"] as? Int == 7)
            #expect(suite.appliedMigrations.isEmpty)
        }
    }

    /// A key's conversion is handed the old value every time it is called, and the stored value
    /// is converted once: called to read the value through and again to move it, 90 minutes are
    /// 1.5 hours, never 0.025.
    ///
    /// Probe: the conversion was called twice in the process that moved the value (and once in
    /// each other process), which the article said ran once.
    @Test func aConversionIsHandedTheOldValueEachTimeAndTheValueIsConvertedOnce() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"refreshMinutes": 90}"#.utf8))
            let inputs = Mutex<[Int]>([])
            let suite = Defaults.Suite(fileURL: file)
            let hours = Defaults.Key<Double>("refreshHours", default: 1, suite: suite, formerly: ["refreshMinutes"]) {
                (minutes: Int) in
                inputs.withLock { $0.append(minutes) }
                return Double(minutes) / 60
            }
            #expect(suite[hours] == 1.5)
            try suite.synchronize()
            #expect(suite[hours] == 1.5)
            #expect(try storeFileObject(file)["refreshHours"] as? Double == 1.5)
            let seen = inputs.withLock { $0 }
            #expect(!seen.isEmpty)
            #expect(seen.allSatisfy { $0 == 90 }, "\(seen)")
        }
    }

    /// A renamed key with no value under any of its names, in a recorded store, writes nothing.
    ///
    /// The store records migrations already, so there is nothing to move: nothing is written or
    /// recorded. An old version's later value is still moved at the next open.
    @Test func aRenamedKeyWithNothingToMoveInARecordedStoreWritesNothingAndStillMovesALaterValue() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let seed = Array(#"{"" : {"migrations" : ["other from x"]}, "unrelated" : 1}"#.utf8)
            try storeWriteFile(file, seed)
            do {
                let suite = Defaults.Suite(fileURL: file)
                let key = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
                #expect(suite[key] == 13)
                try suite.synchronize()
                #expect(suite.fileReplacementCount == 0)
                #expect(suite.appliedMigrations == ["other from x"])
            }
            #expect(try storeFileBytes(file) == seed)
            // An old version writes the former name; the next open moves it.
            try storeWriteFile(file, Array(#"{"" : {"migrations" : ["other from x"]}, "fontSize" : 16}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let key = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
            #expect(suite[key] == 16)
            try suite.synchronize()
            let stored = try storeFileObject(file)
            #expect(stored["editor.fontSize"] as? Int == 16)
            #expect(stored["fontSize"] == nil)
        }
    }
}
