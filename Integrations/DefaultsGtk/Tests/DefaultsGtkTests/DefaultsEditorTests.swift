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

/// A schema written by hand for `mytool`, with values of every composite shape, and a file that
/// holds a bad value of each kind.
private let toolSchema = #"""
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {
      "fontSize": {"type": "integer", "minimum": 8, "maximum": 72, "default": 12, "description": "Font size"},
      "theme": {"enum": ["light", "dark", "solarized"], "default": "light", "description": "Theme"},
      "volume": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5, "description": "Volume"},
      "name": {"type": "string", "pattern": "^[a-z]+$", "default": "tool", "description": "Name"},
      "nickname": {"type": ["string", "null"], "default": null, "description": "Nickname"},
      "recentFiles": {"type": "array", "items": {"type": "string"}, "default": [], "description": "Recent files"},
      "window": {"type": "object", "description": "Window",
                 "properties": {"width": {"type": "integer", "minimum": 100}, "height": {"type": "integer", "minimum": 100},
                                "title": {"type": "string", "minLength": 1}},
                 "default": {"width": 640, "height": 480}},
      "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}, "description": "Matrix"},
      "build": {"type": "string", "readOnly": true, "default": "1.0", "description": "Build"}
    }}
    """#
private let badValues = #"""
    {"$schema": "./settings.schema.json", "fontSize": 100, "theme": "purple", "volume": "loud", "name": "Tool 2"}
    """#

/// A schema written to catch an editor out: values its controls cannot hold, choices whose
/// readable names collide, Boolean schemas, a reference, a default that breaks its own rule.
private let edgeSchema = #"""
    {"type": "object", "$defs": {"port": {"type": "integer", "default": 8080}}, "properties": {
      "big": {"type": "integer"}, "ratio": {"type": "number"}, "huge": {"type": "number"},
      "label": {"type": "string"},
      "mode": {"enum": ["a", "A"]}, "style": {"enum": ["dark mode", "Dark mode"]},
      "layout": {"enum": ["grid", "compactList"]},
      "build": {"type": "integer", "readOnly": true},
      "rtl": {"type": "string", "pattern": "^[a-z]*$"},
      "anything": true, "nothing": false,
      "port": {"$ref": "#/$defs/port"},
      "capped": {"type": "integer", "maximum": 5, "default": 10},
      "nullInt": {"type": ["integer", "null"], "minimum": 0},
      "anyInt": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
      "slow": {"type": "string", "pattern": "(a*)*b"},
      "tiny": {"type": "number"}, "almost": {"type": "number", "exclusiveMaximum": 1},
      "site": {"type": "string"}, "space": {"enum": ["a b", "a\u00a0b", "a\u200bb"]},
      "database.password": {"type": "string", "x-secret": true},
      "maybe": {"type": ["integer", "null"]},
      "\#(String(repeating: "k", count: 300))": {"type": "integer"}
    }}
    """#
private let edgeValues = #"""
    {"big": 3000000000, "ratio": 0.125, "huge": 1e400, "label": "a\u0000b", "mode": "A", "style": "dark mode",
     "build": 7, "rtl": "x\u202Eevil", "anything": {"x": 1}, "nothing": 1, "nullInt": -5, "anyInt": -5,
     "slow": "\#(String(repeating: "a", count: 60))", "tiny": 1e-400, "almost": 0.99999999999999999,
     "site": "\u202emoc.elgoog", "space": "a\u00a0b", "database": {"password": "hunter2", "host": "db"},
     "maybe": null}
    """#

/// The window `defaults-editor` shows for a suite: made from the schema its program published,
/// live both ways; and the program itself, from a terminal.
@Suite struct DefaultsEditorTests {
    /// A stored value that breaks its schema is shown as it is stored, with the rule and what the
    /// program reads instead, never as a clamped value or a default; `$schema` is not a setting.
    @Test func aBadStoredValueIsShownAsStoredWithItsRuleAndAReset() async throws {
        let session = try await BoundWindowSession(mode: "editor") { directory in
            try Data(toolSchema.utf8).write(to: directory.appendingPathComponent("settings.schema.json"))
            try Data(badValues.utf8).write(to: directory.appendingPathComponent("settings.json"))
        }
        defer { session.close() }
        let before = try Data(contentsOf: session.file)
        var shown = await windowRows(session)
        #expect(shown["$schema"] == nil, "the file's reference to its schema is not a setting: \(shown)")
        let expected = [
            "fontSize": [
                "Stored:_100", "fontSize:_100_is_greater_than_the_maximum_72", "The_program_reads_it_as_stored",
            ],
            "theme": [
                #"Stored:_"purple""#, #"theme:_"purple"_is_not_one_of_"light",_"dark",_"solarized""#,
                #"reads_its_default,_"light",_instead"#,
            ],
            "volume": [
                #"Stored:_"loud""#, #"volume:_must_be_a_number,_not_"loud""#, "reads_its_default,_0.5,_instead",
            ],
            "name": [#"Stored:_"Tool_2""#, #"name:_"Tool_2"_does_not_match_the_pattern_^[a-z]+$"#],
        ]
        for (name, words) in expected {
            let row = shown[name] ?? [:]
            #expect(
                row["hidden"] == "true",
                "\(name): the editor's row, which would show a value not stored, is hidden"
            )
            for word in words {
                #expect(
                    row["problem"]?.contains(word) == true,
                    "\(name): \(word) in \(row["problem"] ?? "no problem row")"
                )
            }
        }
        #expect(shown["autosave"] == nil && shown["nickname"]?["problem"] == nil, "\(shown)")
        #expect(try Data(contentsOf: session.file) == before, "the file is left as it is")

        // The problem row's Reset: the key reads its default, and its own row is back.
        await session.run("resetproblem fontSize")
        #expect(try await session.stored()["fontSize"] == nil)
        shown = await windowRows(session)
        #expect(shown["fontSize"]?["hidden"] == "false" && shown["fontSize"]?["value"] == "12.0", "\(shown)")
        #expect(shown["fontSize"]?["problem"] == nil)

        // A bad value written from outside while the window is open: said at once.
        _ = try await session.outside(["write", "fontSize", "5", "--force"], until: "changed")
        shown = await windowRows(session)
        #expect(shown["fontSize"]?["problem"]?.contains("fontSize:_5_is_less_than_the_minimum_8") == true, "\(shown)")
        // And a good one: the row is back with it.
        _ = try await session.outside(["write", "theme", #""dark""#], until: "changed")
        shown = await windowRows(session)
        #expect(shown["theme"]?["hidden"] == "false" && shown["theme"]?["name"] == "Dark", "\(shown)")
        await screenshot(session, "bad-values")
    }

    /// Each composite value is edited and written back: a nullable one, an array, an object, and
    /// anything else as JSON text; a value the schema refuses is not written, and the row says so.
    @Test func eachCompositeValueIsEditedAndWrittenBack() async throws {
        let session = try await BoundWindowSession(mode: "editor") { directory in
            try Data(toolSchema.utf8).write(to: directory.appendingPathComponent("settings.schema.json"))
            try Data(#"{"recentFiles": ["a.txt", "b.txt"]}"#.utf8)
                .write(to: directory.appendingPathComponent("settings.json"))
        }
        defer { session.close() }
        var shown = await windowRows(session)
        // Every value the schema describes has a row that edits it, but the read-only one.
        #expect(shown["nickname"]?["kind"] == "optional" && shown["nickname"]?["set"] == "false", "\(shown)")
        #expect(shown["recentFiles"]?["kind"] == "list" && shown["recentFiles"]?["elements"] == "a.txt,b.txt")
        #expect(shown["window"]?["kind"] == "group", "\(shown)")
        #expect(shown["window"]?["members"] == "height:480.0,title:,width:640.0", "the schema's default: \(shown)")
        #expect(shown["window"]?["subtitle"]?.contains("(default)") == true)
        #expect(shown["matrix"]?["kind"] == "jsonText")
        #expect(
            shown["build"]?["kind"] == "json" && shown["build"]?["subtitle"] == #"build/"1.0"_(default)"#,
            "\(shown)"
        )

        // Nullable: set, then not set (null).
        await session.run("set nickname Ada")
        #expect(try await session.stored()["nickname"] as? String == "Ada")
        await session.run("set nickname null")
        #expect(try await session.stored()["nickname"] is NSNull)

        // An array: add, change, move, remove.
        await session.run("list recentFiles add")
        await session.run("list recentFiles set 3 c.txt")
        #expect(try await session.stored()["recentFiles"] as? [String] == ["a.txt", "b.txt", "c.txt"])
        await session.run("list recentFiles up 3")
        #expect(try await session.stored()["recentFiles"] as? [String] == ["a.txt", "c.txt", "b.txt"])
        await session.run("list recentFiles remove 1")
        #expect(try await session.stored()["recentFiles"] as? [String] == ["c.txt", "b.txt"])

        // An object: a member changed keeps the others (the default's while none was stored).
        // (Its member rows are titled by name: the schema gives them no description.)
        await session.run("member window width 800")
        var window = try await session.stored()["window"] as? [String: Any]
        #expect(window?["width"] as? Int == 800 && window?["height"] as? Int == 480, "\(String(describing: window))")
        // A member the schema refuses (minLength 1): nothing written, and the row says why.
        await session.run("member window title x")
        await session.run("member window title \"\"")
        window = try await session.stored()["window"] as? [String: Any]
        #expect(window?["title"] as? String == "x", "\(String(describing: window))")
        shown = await windowRows(session)
        #expect(shown["window"]?["error"] == "true", "\(shown)")
        #expect(shown["window"]?["rowtip"]?.contains("window.title:") == true, "\(shown)")

        // JSON text: applied when it fits, refused when it does not or is not JSON.
        await session.run("set matrix [[1,2],[3]]")
        #expect(try await session.stored()["matrix"] as? [[Int]] == [[1, 2], [3]])
        await session.run("set matrix [1]")
        shown = await windowRows(session)
        #expect(shown["matrix"]?["error"] == "true", "\(shown)")
        #expect(shown["matrix"]?["rowtip"]?.contains("matrix[0]:_must_be_an_array,_not_1") == true, "\(shown)")
        await session.run("set matrix [[")
        #expect(try await session.stored()["matrix"] as? [[Int]] == [[1, 2], [3]], "nothing refused was written")

        // From outside: the rows follow.
        _ = try await session.outside(["write", "recentFiles", #"["z"]"#], until: "changed")
        shown = await windowRows(session)
        #expect(shown["recentFiles"]?["elements"] == "z", "\(shown)")
        await session.run("expand recentFiles")
        await session.run("expand window")
        await screenshot(session, "composites")
    }

    /// What a row's control cannot hold is shown as it is stored, as JSON text, never clamped or
    /// cut; choices are shown as they are when readable names would merge them; what the program
    /// marks read-only has no reset; text that would reorder itself is escaped; every described
    /// key has a row, whatever its schema; and whether the program reads a bad value does not
    /// hang on how the schema spells its type.
    @Test func whatNoControlCanHoldIsShownAsItIsStored() async throws {
        let session = try await BoundWindowSession(mode: "editor") { directory in
            try Data(edgeSchema.utf8).write(to: directory.appendingPathComponent("settings.schema.json"))
            try Data(edgeValues.utf8).write(to: directory.appendingPathComponent("settings.json"))
        }
        defer { session.close() }
        let before = try Data(contentsOf: session.file)
        var shown = await windowRows(session)
        for (name, text, why) in [
            (
                "big", "3000000000",
                "3000000000_is_past_what_its_control_holds,_whole_numbers_from_-2147483648_to_2147483647"
            ),
            ("ratio", "0.125", "0.125_is_not_what_its_control_shows_(2_decimals"),
            ("tiny", "1e-400", "1e-400_is_not_what_its_control_shows"),
            ("almost", "0.99999999999999999", "0.99999999999999999_is_not_what_its_control_shows"),
            (
                "site", #""\u202Emoc.elgoog""#,
                #"it_holds_characters_an_entry_would_hide_or_reorder_(\u{202E}moc.elgoog)"#
            ),
            ("huge", "1e400", "1e400_is_past_what_a_floating-point_number_holds"),
            ("label", #""a\u0000b""#, "an_entry_cannot_hold_its_NUL_character"),
        ] {
            let row = shown[name] ?? [:]
            #expect(row["hidden"] == "true" && row["alternate"] == text, "\(name): \(row)")
            #expect(row["alternatetip"]?.contains("Shown_as_JSON:_" + why) == true, "\(name): \(row)")
        }
        #expect(shown["mode"]?["name"] == "A" && shown["style"]?["name"] == "dark_mode", "\(shown)")
        #expect(shown["layout"]?["name"] == "Grid", "identifiers keep their readable names: \(shown)")
        #expect(shown["space"]?["name"] == #"a\u{A0}b"#, "a no-break space is told from a space: \(shown)")
        #expect(
            shown["database"]?["subtitle"] == #"{"host":"db","password":"<secret>"}"#,
            "a secret nested in a value no key describes is not shown: \(shown)"
        )
        #expect(shown["maybe"]?["set"] == "false" && shown["maybe"]?["editorshown"] == "false", "\(shown)")
        #expect(shown["build"]?["kind"] == "json" && shown["build"]?["reset"] == "false", "\(shown)")
        #expect(shown["rtl"]?["problem"]?.contains(#"Stored:_"x\u{202E}evil""#) == true, "\(shown)")
        #expect(shown["anything"]?["kind"] == "jsonText" && shown["anything"]?["value"] == #"{"x":1}"#, "\(shown)")
        #expect(shown["nothing"]?["problem"]?.contains("no_value_is_allowed_here") == true, "\(shown)")
        #expect(shown["port"]?["kind"] == "number" && shown["port"]?["value"] == "8080.0", "\(shown)")
        #expect(shown["capped"]?["kind"] == "jsonText" && shown["capped"]?["value"] == "10", "\(shown)")
        #expect(
            shown["capped"]?["rowtip"]?.contains("The_schema's_default,_10,_is_shown_as_JSON:_it_breaks_the_schema")
                == true,
            "\(shown)"
        )
        for name in ["nullInt", "anyInt"] {
            #expect(shown[name]?["problem"]?.contains("The_program_reads_it_as_stored") == true, "\(name): \(shown)")
        }
        #expect(
            shown["slow"]?["status"] == "true" && shown["slow"]?["tip"]?.hasPrefix("Not_checked:") == true,
            "\(shown)"
        )
        let long = String(repeating: "k", count: 300)
        #expect(shown[long]?["title"] == String(repeating: "k", count: 199) + "…", "a long name is cut in the title")
        #expect(try Data(contentsOf: session.file) == before, "showing writes nothing")

        // A value the control holds, from outside: the row is back with it.
        _ = try await session.outside(["write", "big", "5"], until: "changed")
        shown = await windowRows(session)
        #expect(shown["big"]?["hidden"] == "false" && shown["big"]?["value"] == "5.0", "\(shown)")
        #expect(shown["big"]?["alternate"] == nil, "\(shown)")
        await screenshot(session, "edges")
    }

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
        #expect(shown["nickname"]?["kind"] == "optional" && shown["nickname"]?["set"] == "false", "\(shown)")
        #expect(shown["recent"]?["kind"] == "list" && shown["recent"]?["elements"] == "a.txt", "\(shown)")
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
            Defaults.Key<Int>("threads", default: 4, suite: program),
            Defaults.Key<Int>("count", default: 2, suite: program, summary: "Count"),
        ]
        #expect(try program.publishSchema(for: keys))
        let system = root.appendingPathComponent("xdg/program/settings.json")
        try FileManager.default.createDirectory(
            at: system.deletingLastPathComponent(),
            withIntermediateDirectories: true
        )
        try Data(#"{"": {"locked": ["count", "threads"]}, "count": 9, "threads": "many", "gain": "loud"}"#.utf8)
            .write(to: system)

        let session = try await BoundWindowSession(mode: "editor", suiteName: "program", environment: environment)
        defer { session.close() }
        let shown = await windowRows(session)
        #expect(shown["ratio"]?["kind"] == "number" && shown["ratio"]?["value"] == "1.5", "\(shown)")
        // A bad value from the system file, locked or not: said to be the system file's, with no
        // Reset, which could not change what the program reads.
        let threads = shown["threads"] ?? [:]
        #expect(
            threads["problem"]?.contains("Locked_by_\(system.path)") == true && threads["problemreset"] == "false",
            "\(threads)"
        )
        let gain = shown["gain"] ?? [:]
        #expect(
            gain["problem"]?.contains("From_the_system_file_\(system.path)") == true && gain["problemreset"] == "false",
            "\(gain)"
        )
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
        // A keyword the window's checks cannot apply: named before the window opens.
        try Data(#"{"required": ["interval"], "properties": {"interval": {"type": "integer", "maximun": 5}}}"#.utf8)
            .write(to: elsewhere)
        result = try await runEditor(
            [file.path, "--schema", elsewhere.path, "--picture", picture.path],
            display: display.name
        )
        #expect(
            result.status == 0
                && result.errors.contains(
                    #"defaults-editor: warning: the schema's "maximun" at /properties/interval is not checked: this checker does not know the keyword"#
                )
                && result.errors.contains(
                    #"defaults-editor: warning: the schema's "required" at its root is not checked: values are checked key by key"#
                ),
            "\(result.errors)"
        )
        result = try await runEditor(
            [file.path, "--schema", "/nonexistent/schema.json", "--picture", picture.path],
            display: display.name
        )
        #expect(
            result.status == 0
                && result.errors.contains("/nonexistent/schema.json: no such file; its values are shown as JSON"),
            "\(result.errors)"
        )
        #expect(try Data(contentsOf: file) == Data(settings.utf8), "the editor still wrote nothing")

        // A settings file that is not one: refused, and left where it is as it is (a suite opened
        // by a program would move it aside).
        let broken = Data(#"{"interval": 30, "#.utf8)
        try broken.write(to: file)
        result = try await runEditor([file.path, "--picture", picture.path], display: display.name)
        #expect(
            result.status == 1
                && result.errors.contains("\(file.path) is not a settings file: invalid JSON at line 1")
                && result.errors.contains("nothing was changed"),
            "\(result.errors)"
        )
        #expect(try Data(contentsOf: file) == broken)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!left.contains { $0.contains(".corrupt") }, "\(left)")
        try Data(settings.utf8).write(to: file)
        // A folder where the settings file should be: refused, not opened as defaults.
        let folder = directory.appendingPathComponent("folder/settings.json")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        result = try await runEditor([folder.path, "--picture", picture.path], display: display.name)
        #expect(
            result.status == 1 && result.errors.contains("\(folder.path) is a directory, not a settings file"),
            "\(result.errors)"
        )
        // A picture that cannot be saved: said before anything is drawn.
        result = try await runEditor([file.path, "--picture", "/nonexistent/editor.png"], display: display.name)
        #expect(
            result.status == 2 && result.errors.contains("cannot save the picture at /nonexistent/editor.png"),
            "\(result.errors)"
        )
        // A schema that describes the name the file keeps for its own record; a key's name that
        // would move the terminal's cursor.
        try Data(#"{"properties": {"": {"type": "string"}, "a\u001b[2Jb": {"type": "integer", "maximun": 1}}}"#.utf8)
            .write(to: elsewhere)
        result = try await runEditor(
            [file.path, "--schema", elsewhere.path, "--picture", picture.path],
            display: display.name
        )
        #expect(result.errors.contains(#"the schema describes "", the name a settings file keeps"#), "\(result.errors)")
        #expect(!result.errors.contains("\u{1B}") && result.errors.contains(#"a\u001b[2Jb"#), "\(result.errors)")
        // A folder whose name holds the same: said escaped.
        let odd = directory.appendingPathComponent("x\u{1B}[2Jy")
        try FileManager.default.createDirectory(at: odd, withIntermediateDirectories: true)
        result = try await runEditor(
            [odd.appendingPathComponent("settings.json").path, "--picture", picture.path],
            display: display.name
        )
        #expect(result.errors.contains(#"no schema at \#(directory.path)/x\u{1B}[2Jy/"#), "\(result.errors)")
        #expect(!result.errors.contains("\u{1B}"), "\(result.errors)")

        result = try await runEditor(["etcd://localhost:2379/app"], display: display.name)
        #expect(result.status == 2 && result.errors.contains("only suites kept in files"), "\(result.errors)")
        result = try await runEditor([], display: display.name)
        #expect(result.status == 2 && result.errors.contains("usage: defaults-editor"), "\(result.errors)")
        result = try await runEditor([file.path, "--schema"], display: display.name)
        #expect(result.status == 2 && result.errors.contains("--schema needs a file's path"), "\(result.errors)")
    }
}

/// A picture of the window, in the folder `DEFAULTS_SCREENSHOTS` names (none when unset), to look at.
func screenshot(_ session: BoundWindowSession, _ name: String) async {
    guard let folder = ProcessInfo.processInfo.environment["DEFAULTS_SCREENSHOTS"] else { return }
    // NB: a window laying itself out anew (an expander just opened) has no picture to give until
    // it is drawn: tried again after the main loop's next turns.
    var lines: [String] = []
    for _ in 0..<20 {
        lines = await session.run("screenshot \(folder)/\(name).png")
        if lines.contains("saved") { return }
        _ = await session.run("rows")
    }
    Issue.record("no picture of the window: \(lines)")
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
