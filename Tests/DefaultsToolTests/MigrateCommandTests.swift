import Defaults
import DefaultsLaunchOverrideSamples
import DefaultsTestSupport
import Foundation
import Testing

/// `defaults migrate` and `defaults describe` over a suite whose program declares migrations in
/// its published schema.
@Suite struct MigrateCommandTests {
    enum Theme: String, Defaults.Serializable { case light, dark }

    /// Publishes the schema of the new version of `name`'s program, as it would, from keys on a
    /// suite of its own (keys on the suite's file would migrate it from this process).
    static func publish(_ name: String, in defaults: DefaultsCommand, renameIsFinal: Bool = true) throws {
        let suite = Defaults.Suite.inMemory()
        let migrations = [
            MigrationSamples.windowSplit,
            .retiring(["legacyMode"]),
        ]
        let document = suite.schema(
            for: [
                Defaults.Key<Int>(
                    "editor.fontSize",
                    default: 13,
                    suite: suite,
                    summary: "Font size in points",
                    formerly: ["fontSize"],
                    isFinal: renameIsFinal
                ),
                Defaults.Key<Theme>("appearance", default: .light, suite: suite, formerly: ["darkMode"]) {
                    (dark: Bool) in dark ? .dark : .light
                },
            ],
            migrations: migrations
        )
        let url = Defaults.Suite.schemaFileURL(forSettingsFile: defaults.file(name))
        try Data(document.description.utf8).write(to: url)
    }

    static let oldFile = #"{"fontSize": 16, "darkMode": true, "windowSize": [800, 600], "legacyMode": true}"#

    @Test func aDryRunShowsWhatWouldRunAndChangesNothing() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", Self.oldFile)
            try Self.publish("app", in: defaults)
            let before = try Data(contentsOf: defaults.file("app"))
            let result = try await defaults.run("migrate", "app", "--dry-run")
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(
                result.output == """
                    left for the program: 3: window size split in two (it runs code only the program has)
                    left for the program: retire legacyMode (it runs after one left for the program)
                    left for the program: appearance from darkMode (Bool) (it runs code only the program has)
                    would run: editor.fontSize from fontSize
                      editor.fontSize: 16
                      fontSize: (removed)

                    """
            )
            #expect(try Data(contentsOf: defaults.file("app")) == before)
        }
    }

    @Test func migrateRunsTheRenamesRecordsThemAndTheProgramDoesNotRunThemAgain() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"fontSize": 16, "editor.fontSize": 18, "legacyMode": true}"#)
            try Self.publish("app", in: defaults)
            let result = try await defaults.run("migrate", "app")
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(
                result.output.contains("ran: editor.fontSize from fontSize\n  fontSize: (removed)\n"),
                "\(result.output)"
            )
            let file = try Defaults.JSONValue(
                parsing: String(decoding: Data(contentsOf: defaults.file("app")), as: UTF8.self)
            )
            guard case .object(let members) = file else { throw Defaults.MigrationError("not an object") }
            #expect(members["editor.fontSize"] == .number("18"), "the new version's value is kept")
            #expect(members["fontSize"] == nil)
            #expect(members[""] == .object(["migrations": .array([.string("editor.fontSize from fontSize")])]))
            let described = try await defaults.run("describe", "app", "editor.fontSize")
            #expect(
                described.output.contains("  formerly: fontSize\n  migration: editor.fontSize from fontSize (run)\n")
            )
            let again = try await defaults.run("migrate", "app")
            #expect(!again.output.contains("ran:"), "\(again.output)")
            // The program, final now, finds the rename recorded and changes nothing.
            let bytes = try Data(contentsOf: defaults.file("app"))
            let suite = Defaults.Suite(fileURL: defaults.file("app"))
            let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
            #expect(suite[fontSize] == 18)
            try suite.synchronize()
            #expect(try Data(contentsOf: defaults.file("app")) == bytes)
        }
    }

    @Test func aRenameNotFinalYetIsLeftForTheProgram() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"fontSize": 16}"#)
            try Self.publish("app", in: defaults, renameIsFinal: false)
            let before = try Data(contentsOf: defaults.file("app"))
            let result = try await defaults.run("migrate", "app")
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(
                result.output.contains(
                    "left for the program: editor.fontSize from fontSize (not final: old versions still use its former names)"
                ),
                "\(result.output)"
            )
            #expect(!result.output.contains("ran:"))
            #expect(try Data(contentsOf: defaults.file("app")) == before)
        }
    }

    @Test func theRecordIsNoSettingForReadOrKeysAndTravelsWithAnExport() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"": {"migrations": ["editor.fontSize from fontSize"]}, "editor.fontSize": 16}"#)
            let read = try await defaults.run("read", "app")
            #expect(read.output == "{\n  \"editor.fontSize\" : 16\n}\n")
            let keys = try await defaults.run("keys", "app")
            #expect(keys.output == "editor.fontSize\n")
            // What the values have been through goes with them, so a restored backup is not
            // migrated again.
            let export = try await defaults.run("export", "app")
            #expect(
                export.output
                    == "{\n  \"\" : {\n    \"migrations\" : [\n      \"editor.fontSize from fontSize\"\n    ]\n  },\n  \"editor.fontSize\" : 16\n}\n"
            )
        }
    }

    @Test func aFormerValueThatDoesNotFitTheKeyIsNotMoved() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"fontSize": "big"}"#)
            try Self.publish("app", in: defaults)
            let before = try Data(contentsOf: defaults.file("app"))
            let result = try await defaults.run("migrate", "app")
            // A stored value the move cannot take: an invalid value, as for `write`.
            #expect(result.status == 2)
            #expect(
                result.errorOutput.contains(
                    #"editor.fontSize from fontSize cannot run: "fontSize" cannot move: editor.fontSize: must be"#
                ),
                "\(result.errorOutput)"
            )
            #expect(try Data(contentsOf: defaults.file("app")) == before)
        }
    }
}
