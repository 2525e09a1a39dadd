import Defaults
import DefaultsTestSupport
import Foundation
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
}
