import Defaults
import DefaultsLaunchOverrideSamples
import DefaultsTestSupport
import Foundation
import Testing

/// Settings that change shape.
///
/// A file an old version wrote, opened by a new one whose keys were renamed, changed type, split,
/// merged and retired. Old and new versions are real processes.
@Suite struct MigrationTests {
    /// What the new version's file holds once it migrated the old version's (the helper's
    /// Migrations.swift), without the record.
    static let migrated: [String: JSONValue] = [
        "editor.fontSize": .number("16"), "appearance": .string("dark"), "sync": .string("automatic"),
        "refreshHours": .number("1.5"), "window.width": .number("800"), "window.height": .number("600"),
        "fullName": .string("Ada Lovelace"), "migrationRuns": .number("1"),
    ]
    static let suiteMigrations = [
        "2: count the runs", "3: window size split in two", "4: one name", "retire legacyMode",
    ]
    static let keyMigrations = [
        "editor.fontSize from fontSize", "appearance from darkMode (Bool)", "sync from sync (Bool)",
        "refreshHours from refreshMinutes (Int)",
    ]

    /// The file's members as JSON, and its record's ids.
    private func contents(of file: URL) throws -> (values: [String: JSONValue], record: [String]) {
        guard case .object(var members) = try JSONValue(parsing: String(decoding: storeFileBytes(file), as: UTF8.self))
        else { throw Defaults.MigrationError("the file is not an object") }
        let record = members.removeValue(forKey: "")
        guard case .object(let recordMembers)? = record, case .array(let ids)? = recordMembers["migrations"] else {
            return (members, [])
        }
        return (members, ids.map { if case .string(let id) = $0 { id } else { "?" } })
    }

    @Test func anOldVersionsFileOpenedByTheNewVersionKeepsEveryValueAndMigratesOnce() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let old = try await HelperProcess.run(["old-version", file.path])
            #expect(old.status == 0, "\(old.errorOutput)")
            let new = try await HelperProcess.run(["new-version", file.path])
            #expect(new.status == 0, "\(new.errorOutput)")
            #expect(
                new.lines == [
                    "applied " + Self.suiteMigrations.joined(separator: "|"),
                    "editor.fontSize 16 appearance dark sync automatic refreshHours 1.5",
                    "window 800x600 fullName Ada Lovelace",
                ]
            )
            let (values, record) = try contents(of: file)
            #expect(values == Self.migrated)
            #expect(record == Self.suiteMigrations + Self.keyMigrations)
            // Again: nothing runs, the file is not even rewritten.
            let before = try storeFileBytes(file)
            let again = try await HelperProcess.run(["new-version", file.path])
            #expect(again.lines.first == "applied ")
            #expect(Array(again.lines.dropFirst()) == Array(new.lines.dropFirst()))
            #expect(try storeFileBytes(file) == before)
        }
    }

    @Test func tenProcessesOpeningAnOldFileAtOnceMigrateItOnce() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            #expect(try await HelperProcess.run(["old-version", file.path]).status == 0)
            let processes = try (0..<10).map { _ in try RunningHelper(["new-version", file.path]) }
            var ran = 0
            for process in processes {
                let result = await process.waitForExit()
                #expect(result.status == 0, "\(result.errorOutput)")
                #expect(Array(result.lines.dropFirst()).count == 2 && !result.lines.contains { $0.hasPrefix("error") })
                #expect(
                    result.lines.dropFirst().first
                        == "editor.fontSize 16 appearance dark sync automatic refreshHours 1.5"
                )
                if result.lines.first != "applied " { ran += 1 }
            }
            #expect(ran == 1, "the suite's migrations ran in \(ran) processes")
            let (values, record) = try contents(of: file)
            #expect(values == Self.migrated, "migrationRuns counts the runs")
            #expect(Set(record) == Set(Self.suiteMigrations + Self.keyMigrations))
            #expect(record.count == Self.suiteMigrations.count + Self.keyMigrations.count)
        }
    }

    @Test func aValueThatCannotBeConvertedChangesNothingAndIsReported() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"fontSize": "sixteen", "darkMode": true}"#.utf8))
            let before = try storeFileBytes(file)
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
            #expect(suite[fontSize] == 13)
            let report = await errors.waitForReport()
            guard case .migrationFailed(let migration, let reason)? = report else {
                Issue.record("reported \(String(describing: report))")
                return
            }
            #expect(migration == "editor.fontSize from fontSize")
            #expect(reason == #""fontSize" holds "sixteen", which is not a value of type Int"#)
            #expect(suite.storedValue(named: "fontSize") == .string("sixteen"), "still readable under its old name")
            #expect(suite.appliedMigrations.isEmpty)
            try suite.synchronize()
            #expect(try storeFileBytes(file) == before)
        }
    }

    @Test func aMigrationThatThrowsKeepsNothingAnEarlierOneOfTheSameCallChanged() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"a": 1, "legacy": true}"#.utf8))
            let before = try storeFileBytes(file)
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            let failing = Defaults.Migration("2: fails") { _ in throw Defaults.MigrationError("no way") }
            #expect(throws: Defaults.StorageError.self) {
                try suite.migrate([.retiring(["legacy"]), failing])
            }
            #expect(suite.storedValue(named: "legacy") == .bool(true))
            #expect(suite.appliedMigrations.isEmpty)
            try suite.synchronize()
            #expect(try storeFileBytes(file) == before)
            #expect(recorder.events.isEmpty)
            guard case .migrationFailed("2: fails", "no way")? = await errors.waitForReport() else {
                Issue.record("reported \(errors.errors)")
                return
            }
        }
    }

    @Test func aValueTheNewVersionStoredIsNeverReplacedByAnOldOne() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"fontSize": 16, "editor.fontSize": 20}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
            #expect(suite[fontSize] == 20)
            #expect(suite.storedValue(named: "fontSize") == nil)
            try suite.synchronize()
            let (values, record) = try contents(of: file)
            #expect(values == ["editor.fontSize": .number("20")])
            #expect(record == ["editor.fontSize from fontSize"])
        }
    }

    @Test func aKeyASystemFileLocksIsLeftAsItIsReadThroughAndMovedOnceTheLockIsLifted() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let site = directory.appendingPathComponent("site.json")
            // The former name is locked (with no value of the system's): the rename would remove it.
            try storeWriteFile(site, Array(#"{"": {"locked": ["fontSize"]}}"#.utf8))
            try storeWriteFile(file, Array(#"{"fontSize": 16}"#.utf8))
            let before = try storeFileBytes(file)
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, systemFiles: [site], errorHandler: errors.handler)
            let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
            #expect(suite[fontSize] == 16, "read through in memory")
            #expect(suite.appliedMigrations.isEmpty)
            try suite.synchronize()
            #expect(try storeFileBytes(file) == before)
            #expect(errors.errors.isEmpty, "being locked is no problem: \(errors.errors)")
            // The lock lifted, the next creation of the key (the next launch) moves the value.
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            try storeWriteFile(site, Array(#"{}"#.utf8))
            let lifted = await recorder.wait {
                if case .userFile = suite.source(ofValueNamed: "fontSize") { return true }
                return false
            }
            #expect(lifted, "\(suite.source(ofValueNamed: "fontSize"))")
            let again = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
            #expect(suite[again] == 16)
            try suite.synchronize()
            #expect(try storeFileObject(file).keys.sorted() == ["", "editor.fontSize"])
            #expect(suite.appliedMigrations == ["editor.fontSize from fontSize"])
            // No longer read through: a reset reads the default, not the former value.
            again.reset()
            #expect(suite[again] == 13)
        }
    }

    @Test func aSystemFileThatIsAlsoSomeSuitesOwnKeepsItsLocksBesideTheRecord() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let site = directory.appendingPathComponent("site.json")
            try storeWriteFile(
                site,
                Array(#"{"": {"locked": ["theme"], "migrations": ["x from y"]}, "theme": "dark"}"#.utf8)
            )
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, systemFiles: [site], errorHandler: errors.handler)
            #expect(suite.source(ofValueNamed: "theme") == .locked(by: site, valueFrom: site))
            #expect(errors.errors.isEmpty, "\(errors.errors)")
        }
    }

    @Test func aKeyCreatedInsideATransactionReadsItsMigrationThroughAndMovesItAfterIt() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"fontSize": 16}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let other = Defaults.Key<Int>("other", default: 0, suite: suite)
            try suite.exclusiveTransaction {
                let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
                #expect(suite[fontSize] == 16)
                // Not inside the transaction: nothing is written under its lock but what it wrote.
                #expect(suite.storedValue(named: "fontSize") == .number("16"))
            }
            suite.transaction {
                let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
                #expect(suite[fontSize] == 16)
                suite[other] = 1
            }
            // After them, in a transaction of its own.
            try suite.synchronize()
            #expect(try storeFileObject(file).keys.sorted() == ["", "editor.fontSize", "other"])
            #expect(suite.appliedMigrations == ["editor.fontSize from fontSize"])
        }
    }

    @Test func removeAllTellsNoOneOfTheRecord() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"fontSize": 16}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
            #expect(suite[fontSize] == 16)
            try suite.synchronize()
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            suite.removeAll()
            #expect(await recorder.waitForEvents(1))
            #expect(recorder.changedKeySets == [["editor.fontSize"]])
            // The record stays, in memory and in the file: the migration is not run again.
            #expect(suite.appliedMigrations == ["editor.fontSize from fontSize"])
            try suite.synchronize()
            #expect(try storeFileObject(file).keys.sorted() == [""])
            // Nor does an exclusive transaction's removeAll tell of it.
            suite[fontSize] = 20
            try suite.exclusiveTransaction { suite.removeAll() }
            #expect(await recorder.waitForEvents(3))
            #expect(recorder.changedKeySets.last == ["editor.fontSize"])
            #expect(suite.appliedMigrations == ["editor.fontSize from fontSize"])
        }
    }

    @Test func aDryRunSaysWhatWouldChangeAndChangesNothing() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"windowSize": [800, 600], "legacyMode": true}"#.utf8))
            let before = try storeFileBytes(file)
            let suite = Defaults.Suite(fileURL: file)
            let report = try suite.migrate(Array(NewVersionMigrations.all), dryRun: true)
            #expect(report.applied == ["3: window size split in two", "retire legacyMode"])
            #expect(report.deferred.isEmpty)
            let expected: [String: Defaults.JSONValue?] = [
                "window.width": .number("800"), "window.height": .number("600"), "windowSize": nil, "legacyMode": nil,
            ]
            #expect(report.changes == expected)
            try suite.synchronize()
            #expect(try storeFileBytes(file) == before)
            #expect(suite.appliedMigrations.isEmpty)
        }
    }

    @Test func observersSeeOneChangeForTheWholeMigrationWithoutTheRecord() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"windowSize": [800, 600], "legacyMode": true, "kept": 1}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            try suite.migrate(Array(NewVersionMigrations.all))
            #expect(await recorder.waitForEvents(1))
            #expect(recorder.changedKeySets == [["window.width", "window.height", "windowSize", "legacyMode"]])
            #expect(suite.userStoredValues().keys.sorted() == ["kept", "window.height", "window.width"])
            #expect(suite.storedValues()[""] == nil)
            #expect(suite.appliedMigrations == ["3: window size split in two", "retire legacyMode"])
        }
    }
}

/// Two of the helper's new version's migrations, for tests in this process.
enum NewVersionMigrations {
    static let all: [Defaults.Migration] = [
        MigrationSamples.windowSplit,
        .retiring(["legacyMode"]),
    ]
}

/// Migrations that cannot be stored, or are not final yet, read through in memory.
@Suite struct MigrationReadThroughTests {
    @Test func aFileThisProcessMayNotWriteIsReadAsMigratedAndLeftAsItIs() async throws {
        try await withTemporaryDirectory { directory in
            let folder = directory.appendingPathComponent("etc-app", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let file = folder.appendingPathComponent("settings.json")
            #expect(try await HelperProcess.run(["old-version", file.path]).status == 0)
            chmod(directory.path, 0o755)
            chmod(folder.path, 0o755)
            chmod(file.path, 0o644)
            let before = try storeFileBytes(file)
            let listing = try storeDirectoryListing(folder)
            let result = try await HelperProcess.runAsNobody(["new-version", file.path], copyingInto: directory)
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(
                result.lines == [
                    "applied ",
                    "editor.fontSize 16 appearance dark sync automatic refreshHours 1.5",
                    "window 800x600 fullName Ada Lovelace",
                ]
            )
            #expect(try storeFileBytes(file) == before)
            #expect(try storeDirectoryListing(folder) == listing)
        }
    }

    @Test func aRollingUpgradeFollowsWhatTheOldVersionWritesUntilTheNewOneWritesItsOwn() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"fontSize": 16}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let fontSize = Defaults.Key<Int>(
                "editor.fontSize",
                default: 13,
                suite: suite,
                formerly: ["fontSize"],
                isFinal: false
            )
            #expect(suite[fontSize] == 16)
            #expect(suite.appliedMigrations.isEmpty)
            #expect(suite.source(of: fontSize) == .userFile(file))
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            // The old version, in another process, writes its name: the new one follows.
            #expect(try await HelperProcess.run(["write", file.path, "fontSize", "17"]).status == 0)
            // Waited for by its event: a read may see the new value before it is delivered.
            #expect(await recorder.wait { recorder.externalEvents.contains { $0.changes["editor.fontSize"] != nil } })
            #expect(suite[fontSize] == 17)
            #expect(try storeFileObject(file).keys.sorted() == ["fontSize"], "nothing stored by the new version")
            // The new version writes its own: from then on it reads that.
            suite[fontSize] = 20
            try suite.synchronize()
            #expect(try await HelperProcess.run(["write", file.path, "fontSize", "18"]).status == 0)
            #expect(await recorder.wait { suite.storedValue(named: "fontSize") == .number("18") })
            #expect(suite[fontSize] == 20)
            #expect(try storeFileObject(file)["fontSize"] as? Int == 18, "the old version reads its own")
            // Declared final (every old version gone): the rename is stored, the new value kept.
            let final = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
            #expect(suite[final] == 20)
            try suite.synchronize()
            #expect(try storeFileObject(file).keys.sorted() == ["", "editor.fontSize"])
            #expect(suite.appliedMigrations == ["editor.fontSize from fontSize"])
        }
    }

    @Test func declaredFinalAfterARollingUpgradeTheMoveIsNoChangeForReadersOfTheKey() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"fontSize": 16}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            let rolling = Defaults.Key<Int>(
                "editor.fontSize",
                default: 13,
                suite: suite,
                formerly: ["fontSize"],
                isFinal: false
            )
            #expect(suite[rolling] == 16)
            let final = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
            #expect(suite[final] == 16)
            #expect(suite[rolling] == 16)
            #expect(await recorder.waitForEvents(2))
            // The read-through made the key read 16 (from its default: other readers are told),
            // then the move changed nothing a reader of the key sees: only the former name went.
            #expect(recorder.changedKeySets == [["editor.fontSize"], ["fontSize"]])
            #expect(recorder.events.first?.changes["editor.fontSize"]?.old == nil)
            #expect(recorder.events.first?.changes["editor.fontSize"]?.new == .number("16"))
            try suite.synchronize()
            #expect(try storeFileObject(file)["editor.fontSize"] as? Int == 16)
        }
    }

    @Test func aTypeChangeReadThroughConvertsEachValueTheOldVersionWrites() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"refreshMinutes": 90}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let refresh = Defaults.Key<Double>(
                "refreshHours",
                default: 1,
                suite: suite,
                formerly: ["refreshMinutes"],
                isFinal: false
            ) { (minutes: Int) in Double(minutes) / 60 }
            #expect(suite[refresh] == 1.5)
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            #expect(try await HelperProcess.run(["write", file.path, "refreshMinutes", "30"]).status == 0)
            #expect(await recorder.wait { suite[refresh] == 0.5 })
            #expect(suite.storedValues()["refreshHours"] == .number("0.5"))
            #expect(try storeFileObject(file).keys.sorted() == ["refreshMinutes"])
        }
    }
}

/// Migrations on the suites that are not files: in memory, and over `UserDefaults`.
@Suite struct MigrationOtherSuiteTests {
    @Test func anInMemorySuiteMigratesOnceAndRecordsIt() throws {
        let suite = Defaults.Suite.inMemory()
        suite.setStoredValues(["fontSize": .number("16")])
        let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
        #expect(suite[fontSize] == 16)
        #expect(suite.userStoredValues() == ["editor.fontSize": .number("16")])
        #expect(suite.appliedMigrations == ["editor.fontSize from fontSize"])
    }

    @Test func aSuiteOverUserDefaultsMigratesAndKeepsTheRecordInTheDomain() throws {
        let domain = "DefaultsMigrationTests.\(UUID().uuidString)"
        let userDefaults = try #require(UserDefaults(suiteName: domain))
        defer { UserDefaults.standard.removePersistentDomain(forName: domain) }
        userDefaults.set(true, forKey: "darkMode")
        let suite = Defaults.Suite(userDefaults: userDefaults)
        let appearance = Defaults.Key<MigrateCommandLessTheme>(
            "appearance",
            default: .light,
            suite: suite,
            formerly: ["darkMode"]
        ) { (dark: Bool) in dark ? .dark : .light }
        #expect(suite[appearance] == .dark)
        #expect(userDefaults.string(forKey: "appearance") == "dark")
        #expect(userDefaults.object(forKey: "darkMode") == nil)
        #expect(suite.appliedMigrations == ["appearance from darkMode (Bool)"])
        // A second suite over the same domain finds the record.
        let again = Defaults.Suite(userDefaults: userDefaults)
        #expect(again.appliedMigrations == ["appearance from darkMode (Bool)"])
    }
}

/// A theme for the tests in this file.
enum MigrateCommandLessTheme: String, Defaults.Serializable { case light, dark }
