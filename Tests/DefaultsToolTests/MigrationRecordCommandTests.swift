import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// The record of the migrations run, carried through `defaults export` and `defaults import`:
/// the values and the record that says what they have been through travel together.
@Suite struct MigrationRecordCommandTests {
    /// Runs the test helper's new version of the program on `file`: it migrates what it must and
    /// prints what it reads (the helper's Migrations.swift); "2: count the runs" adds one to
    /// `migrationRuns` each time it runs.
    func openWithTheNewVersion(_ file: URL) async throws -> [String] {
        let result = try await HelperProcess.run(["new-version", file.path])
        #expect(result.status == 0, "\(result.errorOutput)")
        return result.lines
    }

    static let migratedLines = [
        "editor.fontSize 16 appearance dark sync automatic refreshHours 1.5",
        "window 800x600 fullName Ada Lovelace",
    ]

    @Test func anExportImportedIntoAFreshInstallIsNotMigratedAgain() async throws {
        try await withCommand { defaults in
            let old = defaults.file("old")
            try FileManager.default.createDirectory(
                at: old.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            #expect(try await HelperProcess.run(["old-version", old.path]).status == 0)
            #expect(Array(try await openWithTheNewVersion(old).dropFirst()) == Self.migratedLines)
            let backup = defaults.configHome.appendingPathComponent("backup.json")
            #expect(try await defaults.run("export", "old", backup.path).status == 0)
            #expect(String(decoding: try Data(contentsOf: backup), as: UTF8.self).contains(#""migrations""#))
            // Restored into a fresh install, which the program then opens.
            let imported = try await defaults.run("import", "restored", backup.path)
            #expect(imported.status == 0, "\(imported.errorOutput)")
            let lines = try await openWithTheNewVersion(defaults.file("restored"))
            #expect(lines.first == "applied ", "migrations ran again: \(lines)")
            #expect(Array(lines.dropFirst()) == Self.migratedLines)
            #expect(try await defaults.run("read", "restored", "migrationRuns").output == "1\n")
        }
    }

    @Test func anOlderVersionsDataImportedAfterTheNewInstallOpenedArrivesMigrated() async throws {
        try await withCommand { defaults in
            // The new install opens first: it records its keys' migrations as run, on nothing.
            let fresh = defaults.file("fresh")
            try FileManager.default.createDirectory(
                at: fresh.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            do {
                let suite = Defaults.Suite(fileURL: fresh)
                _ = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
                _ = Defaults.Key<Double>("refreshHours", default: 1, suite: suite, formerly: ["refreshMinutes"]) {
                    (minutes: Int) in Double(minutes) / 60
                }
                try suite.synchronize()
                #expect(suite.appliedMigrations.count == 2)
                #expect(suite.userStoredValues().isEmpty)
            }
            // Then the older version's values are brought in, without a record.
            let old = defaults.file("old")
            try FileManager.default.createDirectory(
                at: old.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            #expect(try await HelperProcess.run(["old-version", old.path]).status == 0)
            let backup = defaults.configHome.appendingPathComponent("old.json")
            #expect(try await defaults.run("export", "old", backup.path).status == 0)
            let imported = try await defaults.run("import", "fresh", backup.path)
            #expect(imported.status == 0, "\(imported.errorOutput)")
            #expect(Array(try await openWithTheNewVersion(fresh).dropFirst()) == Self.migratedLines)
        }
    }

    @Test func anOlderExportMergedIntoMigratedValuesIsRefusedAndReplacingMigratesIt() async throws {
        try await withCommand { defaults in
            let old = defaults.file("old")
            try FileManager.default.createDirectory(
                at: old.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            #expect(try await HelperProcess.run(["old-version", old.path]).status == 0)
            let backup = defaults.configHome.appendingPathComponent("old.json")
            #expect(try await defaults.run("export", "old", backup.path).status == 0)
            _ = try await openWithTheNewVersion(old)
            let before = try defaults.bytes("old")
            let merged = try await defaults.run("import", "old", backup.path)
            #expect(merged.status == 2)
            #expect(merged.errorOutput.contains("from before migrations"), "\(merged.errorOutput)")
            #expect(merged.errorOutput.contains("nothing was imported"), "\(merged.errorOutput)")
            #expect(try defaults.bytes("old") == before)
            let replaced = try await defaults.run("import", "old", backup.path, "--replace")
            #expect(replaced.status == 0, "\(replaced.errorOutput)")
            #expect(Array(try await openWithTheNewVersion(old).dropFirst()) == Self.migratedLines)
        }
    }

    @Test func aRecordThatIsNotOneIsRefused() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"a": 1}"#)
            let incoming = defaults.configHome.appendingPathComponent("incoming.json")
            try Data(#"{"": 5, "b": 2}"#.utf8).write(to: incoming)
            let result = try await defaults.run("import", "app", incoming.path)
            #expect(result.status == 2)
            #expect(result.errorOutput.contains("the record of the migrations run"), "\(result.errorOutput)")
            #expect(String(decoding: try defaults.bytes("app"), as: UTF8.self) == #"{"a": 1}"#)
        }
    }

    @Test func aMigratedExportMergedIntoAnOlderInstallIsRefused() async throws {
        try await withCommand { defaults in
            // The older install: values no migration ran over, and no record.
            let old = defaults.file("old")
            try FileManager.default.createDirectory(
                at: old.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            #expect(try await HelperProcess.run(["old-version", old.path]).status == 0)
            let before = try defaults.bytes("old")
            // A migrated install's export.
            let new = defaults.file("new")
            try FileManager.default.createDirectory(
                at: new.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            #expect(try await HelperProcess.run(["old-version", new.path]).status == 0)
            _ = try await openWithTheNewVersion(new)
            let backup = defaults.configHome.appendingPathComponent("new.json")
            #expect(try await defaults.run("export", "new", backup.path).status == 0)
            let merged = try await defaults.run("import", "old", backup.path)
            #expect(merged.status == 2)
            #expect(merged.errorOutput.contains("from after migrations"), "\(merged.errorOutput)")
            #expect(try defaults.bytes("old") == before)
        }
    }

    @Test func aDryRunOfAMoveThatCannotBeMadeSaysSoAsAnInvalidValue() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", MigrateCommandTests.oldFile.replacingOccurrences(of: "16", with: #""big""#))
            try MigrateCommandTests.publish("app", in: defaults)
            let before = try defaults.bytes("app")
            for arguments in [["migrate", "app", "--dry-run"], ["migrate", "app"]] {
                let result = try await defaults.run(arguments)
                #expect(result.status == 2, "\(arguments): \(result.errorOutput)")
                let errorLines = result.errorOutput.split(separator: "\n")
                #expect(errorLines.count == 1 && errorLines[0].hasPrefix("defaults: "), "\(result.errorOutput)")
                #expect(result.errorOutput.contains("editor.fontSize from fontSize"), "\(result.errorOutput)")
                #expect(!result.errorOutput.contains("runs again"), "\(result.errorOutput)")
            }
            #expect(try defaults.bytes("app") == before)
        }
    }

    @Test func theEmptyNameIsNoKeyToRead() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"": {"migrations": ["a from b"]}, "a": 1}"#)
            let result = try await defaults.run("read", "app", "")
            #expect(result.status == 2)
            #expect(result.errorOutput.contains("a key name cannot be empty"), "\(result.errorOutput)")
        }
    }
}
