import Defaults
import Foundation
import Testing

/// A schema and a settings file of a program this project never built, written by hand: a key of
/// each schema type, a secret, and in the file a value the schema does not describe.
private let schema = #"""
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {
      "autosave": {"type": "boolean", "default": true, "description": "Save automatically"},
      "interval": {"type": "integer", "minimum": 1, "maximum": 120, "default": 5, "description": "Minutes between saves"},
      "opacity": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.9, "description": "Window opacity"},
      "layout": {"enum": ["grid", "list", "compactList"], "default": "grid", "description": "How files are shown"},
      "greeting": {"type": "string", "default": "Hello"},
      "nickname": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "What to call you"},
      "recent": {"type": "array", "items": {"type": "string"}, "description": "Recent files"},
      "token": {"type": "string", "x-secret": true, "readOnly": true}
    }}
    """#
private let settings = #"{"interval": 30, "layout": "list", "recent": ["a.txt"], "legacyFlag": {"on": true}}"#

/// The window `defaults-editor` shows for a suite: made from the schema its program published,
/// live both ways; and the program itself, from a terminal.
@Suite struct DefaultsEditorTests {
    @Test func theEditorMakesEachSchemaTypesRowAndShowsWhatItDoesNotDescribeAsJSON() async throws {
        let session = try await BoundWindowSession(mode: "editor") { directory in
            try Data(schema.utf8).write(to: directory.appendingPathComponent("settings.schema.json"))
            try Data(settings.utf8).write(to: directory.appendingPathComponent("settings.json"))
        }
        defer { session.close() }
        var shown = await windowRows(session)
        #expect(
            shown.keys.sorted() == [
                "autosave", "greeting", "interval", "layout", "legacyFlag", "nickname", "opacity", "recent",
            ]
        )
        #expect(shown["autosave"]?["kind"] == "toggle" && shown["autosave"]?["value"] == "true")
        #expect(shown["autosave"]?["title"] == "Save_automatically" && shown["autosave"]?["subtitle"] == "autosave")
        #expect(shown["interval"]?["bounds"] == "1.0..120.0" && shown["interval"]?["value"] == "30.0", "\(shown)")
        #expect(shown["interval"]?["reset"] == "true" && shown["autosave"]?["reset"] == "false")
        #expect(shown["opacity"]?["bounds"] == "0.0..1.0" && shown["opacity"]?["value"] == "0.9", "\(shown)")
        #expect(shown["layout"]?["kind"] == "choice" && shown["layout"]?["name"] == "List", "\(shown)")
        #expect(shown["greeting"]?["kind"] == "text" && shown["greeting"]?["title"] == "greeting")
        #expect(shown["nickname"]?["kind"] == "text" && shown["nickname"]?["value"] == "\"\"")
        #expect(shown["recent"]?["kind"] == "json" && shown["recent"]?["subtitle"] == #"recent/["a.txt"]"#)
        #expect(shown["legacyFlag"]?["kind"] == "json" && shown["legacyFlag"]?["subtitle"] == #"{"on":true}"#)
        #expect(shown["token"] == nil, "a secret is left out")

        // The person picks "Compact list": the file takes it, and keeps what the schema does not describe.
        let lines = await session.run("set layout 2")
        #expect(lines.contains { $0.hasPrefix("changed") }, "\(lines)")
        let stored = try await session.stored()
        #expect(stored["layout"] as? String == "compactList" && stored["interval"] as? Int == 30, "\(stored)")
        #expect((stored["legacyFlag"] as? [String: Bool]) == ["on": true] && stored["recent"] as? [String] == ["a.txt"])

        // Another process writes: the row follows; and a value nobody described changes in its JSON row.
        _ = try await session.outside(["write", "interval", "45"], until: "changed")
        _ = try await session.outside(["write", "legacyFlag", #"{"on":false}"#], until: "changed")
        shown = await windowRows(session)
        #expect(
            shown["interval"]?["value"] == "45.0" && shown["legacyFlag"]?["subtitle"] == #"{"on":false}"#,
            "\(shown)"
        )

        // A value stored under a name nobody described after the editor opened: a JSON row in
        // that group, whose "Reset all" resets it too.
        _ = try await session.outside(["write", "addedLater", #"{"a":1}"#], until: "changed")
        shown = await windowRows(session)
        #expect(shown["addedLater"]?["kind"] == "json" && shown["addedLater"]?["subtitle"] == #"{"a":1}"#, "\(shown)")
        _ = await session.run("resetall 1")
        let left = try await session.stored()
        #expect(left["addedLater"] == nil && left["legacyFlag"] == nil && left["interval"] as? Int == 45, "\(left)")
    }

    /// The schema as `publishSchema` writes it (not by hand): unranged `Double` and `Float`, an
    /// unsigned integer, a summary with "&"; and a suite by name, whose system file locks a key.
    @Test func aPublishedSchemaAndASuiteByNameWithItsSystemFile() async throws {
        let root = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: root) }
        let environment = [
            "XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
            "XDG_CONFIG_DIRS": root.appendingPathComponent("xdg").path,
        ]
        let program = Defaults.Suite(fileURL: root.appendingPathComponent("config/program/settings.json"))
        let keys: [Defaults.Keys] = [
            Defaults.Key<Double>("ratio", default: 1.5, suite: program, summary: "Ratio & scale <x>"),
            Defaults.Key<Float>("gain", default: 0.5, suite: program),
            Defaults.Key<UInt8>("level", default: 3, suite: program, summary: "Level"),
            Defaults.Key<Int>("count", default: 2, suite: program, summary: "Count"),
        ]
        #expect(try program.publishSchema(for: keys))
        let system = root.appendingPathComponent("xdg/program/settings.json")
        try FileManager.default.createDirectory(
            at: system.deletingLastPathComponent(),
            withIntermediateDirectories: true
        )
        try Data(#"{"": {"locked": ["count"]}, "count": 9}"#.utf8).write(to: system)

        let session = try await BoundWindowSession(mode: "editor", suiteName: "program", environment: environment)
        defer { session.close() }
        let shown = await windowRows(session)
        #expect(shown["ratio"]?["kind"] == "number" && shown["ratio"]?["value"] == "1.5", "\(shown)")
        #expect(shown["ratio"]?["title"] == "Ratio_&_scale_<x>", "text, not markup: \(shown)")
        #expect(shown["gain"]?["kind"] == "number" && shown["gain"]?["value"] == "0.5", "\(shown)")
        #expect(shown["level"]?["bounds"] == "0.0..255.0", "an unsigned key never goes below 0: \(shown)")
        let count = shown["count"] ?? [:]
        #expect(count["value"] == "9.0" && count["sensitive"] == "false" && count["tip"] == "Locked_by_\(system.path)")
        #expect(shown["extra"] == nil)

        // Nothing undescribed at first, then a value: the group for it is made with its row.
        _ = try await session.outside(["write", "extra", "5"], until: "changed")
        #expect(await windowRows(session)["extra"]?["subtitle"] == "5")
        _ = await session.run("resetall 1")
        #expect(try await session.stored()["extra"] == nil, "the new group's Reset all")
    }

    @Test func theProgramDrawsItsWindowAndRefusesWhatItCannotOpen() async throws {
        let directory = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(schema.utf8).write(to: directory.appendingPathComponent("settings.schema.json"))
        let file = directory.appendingPathComponent("settings.json")
        try Data(settings.utf8).write(to: file)
        let display = try VirtualDisplay()
        defer { display.stop() }
        let picture = directory.appendingPathComponent("editor.png")
        var result = try await runEditor([file.path, "--picture", picture.path], display: display.name)
        #expect(result.status == 0, "\(result.errors)")
        let png = try Data(contentsOf: picture)
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG")
        #expect(try Data(contentsOf: file) == Data(settings.utf8), "opening the editor writes nothing")

        // A schema that is not JSON: said, and the values shown as JSON all the same.
        try Data("{ not json".utf8).write(to: directory.appendingPathComponent("settings.schema.json"))
        result = try await runEditor([file.path, "--picture", picture.path], display: display.name)
        #expect(result.status == 0 && result.errors.contains("settings.schema.json: invalid JSON"), "\(result.errors)")
        // The schema from a file of the person's choice (as for a suite that has no file beside
        // which to publish one), and one that is not there.
        let elsewhere = directory.appendingPathComponent("published.json")
        try Data(schema.utf8).write(to: elsewhere)
        result = try await runEditor(
            [file.path, "--schema", elsewhere.path, "--picture", picture.path],
            display: display.name
        )
        #expect(
            result.status == 0 && !result.errors.split(separator: "\n").contains { $0.hasPrefix("defaults-editor: ") },
            "nothing to say: \(result.errors)"
        )
        result = try await runEditor(
            [file.path, "--schema", "/nonexistent/schema.json", "--picture", picture.path],
            display: display.name
        )
        #expect(result.status == 0 && result.errors.contains("/nonexistent/schema.json: "), "\(result.errors)")
        #expect(try Data(contentsOf: file) == Data(settings.utf8), "the editor still wrote nothing")

        result = try await runEditor(["etcd://localhost:2379/app"], display: display.name)
        #expect(result.status == 2 && result.errors.contains("only suites kept in files"), "\(result.errors)")
        result = try await runEditor([], display: display.name)
        #expect(result.status == 2 && result.errors.contains("usage: defaults-editor"), "\(result.errors)")
        result = try await runEditor([file.path, "--schema"], display: display.name)
        #expect(result.status == 2 && result.errors.contains("--schema needs a file's path"), "\(result.errors)")
    }
}

/// The rows of the helper's preferences window or editor (see its Preferences.swift), read through
/// GTK's and libadwaita's API: each row's words by key.
func windowRows(_ session: BoundWindowSession) async -> [String: [String: String]] {
    let lines = await session.run("rows")
    var rows: [String: [String: String]] = [:]
    for line in lines where line.hasPrefix("row ") {
        let words = line.split(separator: " ")
        rows[String(words[1])] = Dictionary(
            words.dropFirst(2)
                .compactMap { word -> (String, String)? in
                    let parts = word.split(separator: "=", maxSplits: 1)
                    return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
                },
            uniquingKeysWith: { $1 }
        )
    }
    return rows
}

/// Runs `defaults-editor` (built beside the test binary) on `display` to its end.
private func runEditor(_ arguments: [String], display: String) async throws -> (status: Int32, errors: String) {
    try await run("defaults-editor", arguments, display: display)
}
