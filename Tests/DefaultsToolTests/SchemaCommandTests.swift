import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `defaults` over a suite whose program published a schema: describe, checked writes and edits,
/// reset, and the keys completion offers.
@Suite struct SchemaCommandTests {
    enum Theme: String, CaseIterable, Defaults.Serializable {
        case light, dark
    }

    /// Publishes the schema of the suite `name`'s keys, as its program would.
    static func publish(_ name: String, in defaults: DefaultsCommand) throws {
        let suite = Defaults.Suite(fileURL: defaults.file(name))
        try suite.publishSchema(
            for: Defaults.Key<Int>(
                "fontSize",
                default: 13,
                suite: suite,
                summary: "Font size in points",
                range: 6...72
            ),
            Defaults.Key<Theme>("theme", default: .light, suite: suite, summary: "Colours"),
            Defaults.Key<String?>("nickname", suite: suite)
        )
    }

    @Test func describePrintsTypeRangeDefaultSummaryValueAndWhereItComesFrom() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"fontSize": 20, "theme": "sepia"}"#)
            try Self.publish("app", in: defaults)
            let one = try await defaults.run("describe", "app", "fontSize")
            #expect(one.status == 0, "\(one.errorOutput)")
            #expect(
                one.output == """
                    fontSize: Font size in points
                      type:    Int
                      range:   6...72
                      default: 13
                      value:   20
                      from:    the user's file \(defaults.file("app").path)

                    """
            )
            let all = try await defaults.run("describe", "app")
            #expect(all.status == 0, "\(all.errorOutput)")
            #expect(
                all.output.hasSuffix(
                    """
                    nickname
                      type:    Optional<String>
                      default: null
                      value:   (default)
                      from:    the program's default

                    theme: Colours
                      type:    Theme
                      cases:   "light", "dark"
                      default: "light"
                      value:   "sepia"  (does not fit: reads the default)
                      from:    the user's file \(defaults.file("app").path)

                    """
                ),
                "\(all.output)"
            )
        }
    }

    @Test func describeWithoutASchemaOrOfAnUndescribedKeyIsNotFound() async throws {
        try await withCommand { defaults in
            try defaults.seed("plain", #"{"fontSize": 20}"#)
            let none = try await defaults.run("describe", "plain")
            #expect(none.status == 1)
            expectOneErrorLine(none, containing: "suite plain has no published schema at ")
            try Self.publish("app", in: defaults)
            let unknown = try await defaults.run("describe", "app", "colour")
            #expect(unknown.status == 1)
            expectOneErrorLine(unknown, containing: #"the schema of suite app does not describe "colour""#)
        }
    }

    @Test(arguments: [
        ("fontSize", #""big""#, #"fontSize: must be an integer, not "big" (the key is Int in 6...72)"#),
        ("fontSize", "100", "fontSize: 100 is greater than the maximum 72 (the key is Int in 6...72)"),
        ("fontSize", "12.5", "fontSize: must be an integer, not 12.5 (the key is Int in 6...72)"),
        ("theme", #""sepia""#, #"theme: "sepia" is not one of "light", "dark" (the key is Theme)"#),
        ("nickname", "7", "nickname: must be a string or null, not 7 (the key is Optional<String>)"),
    ])
    func writeRefusesAValueThatDoesNotFitAndForceWritesIt(key: String, json: String, message: String) async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"fontSize": 20}"#)
            try Self.publish("app", in: defaults)
            let before = try defaults.bytes("app")
            let refused = try await defaults.run("write", "app", key, json)
            #expect(refused.status == 2)
            expectOneErrorLine(refused, containing: message + "; nothing was written (--force writes it anyway)")
            #expect(try defaults.bytes("app") == before)
            let forced = try await defaults.run("write", "app", key, json, "--force")
            #expect(forced.status == 0, "\(forced.errorOutput)")
            #expect(try await defaults.run("read", "app", key).output == json + "\n")
        }
    }

    struct Point: Codable, Defaults.Serializable {
        var x: Int8
        var label: String?
    }

    /// Keys of the shapes whose checks are easiest to get wrong, and values each must refuse and take.
    static let shapes: [(key: String, refused: [String], taken: [String])] = [
        ("small", ["128", "1.5", #""1""#], ["-128", "127", "3.0"]),
        ("huge", ["-1", "18446744073709551616"], ["18446744073709551615", "0"]),
        ("ratio", [#""nan""#, "true"], [#""NaN""#, #""-Infinity""#, "1e300"]),
        ("scale", ["1e39", #""inf""#], ["3.4028234e38", #""Infinity""#]),
        ("blob", [#""not base64!""#, #""abc""#], [#""AAEC/w==""#, #""""#]),
        ("id", [#""not-a-uuid""#], [#""E621E1F8-C36C-495A-93FC-0C247A3E6E5F""#]),
        ("counts", [#"{"one": 1}"#, #"{"1": "x"}"#], [#"{"-1": 0.5, "7": "Infinity"}"#, "{}"]),
        ("span", ["[1]", "[1, 2, 3]", #"[1, "2"]"#], ["[-5, 5]"]),
        ("maybe", [#"[1, "two"]"#], ["[1, null, 3]", "[]"]),
        (
            "point", [#"{"label": "a"}"#, #"{"x": 300}"#, #"{"x": 1, "label": 2}"#],
            [#"{"x": 1}"#, #"{"x": 1, "label": null}"#]
        ),
        ("since", ["true", #"["2020"]"#], [#""2001-01-01T00:00:00.100Z""#, "-3.5"]),
    ]

    @Test func writeChecksEveryShapeAsTheJSONSchemaValidatorDoes() async throws {
        try await withCommand { defaults in
            let suite = Defaults.Suite(fileURL: defaults.file("app"))
            try suite.publishSchema(
                for: Defaults.Key<Int8>("small", default: 0, suite: suite),
                Defaults.Key<UInt64>("huge", default: 0, suite: suite),
                Defaults.Key<Double>("ratio", default: 0, suite: suite),
                Defaults.Key<Float>("scale", default: 0, suite: suite),
                Defaults.Key<Data>("blob", default: Data(), suite: suite),
                Defaults.Key<UUID>("id", default: UUID(), suite: suite),
                Defaults.Key<[Int: Double]>("counts", default: [:], suite: suite),
                Defaults.Key<ClosedRange<Int>>("span", default: 0...1, suite: suite),
                Defaults.Key<[Int?]>("maybe", default: [], suite: suite),
                Defaults.Key<Point>("point", default: Point(x: 0), suite: suite),
                Defaults.Key<Date>("since", default: .distantPast, suite: suite)
            )
            let schema = try #require(suite.schemaFileURL)
            for (key, refused, taken) in Self.shapes {
                for json in refused {
                    let result = try await defaults.run("write", "app", key, json)
                    #expect(result.status == 2, "\(key) \(json) was taken")
                    // The real validator agrees.
                    let file = defaults.configHome.appendingPathComponent("check.json")
                    try Data(#"{ "\#(key)" : \#(json) }"#.utf8).write(to: file)
                    #expect(try await !SchemaValidator.failures(of: [file], against: schema).isEmpty, "\(key) \(json)")
                }
                for json in taken {
                    let result = try await defaults.run("write", "app", key, json)
                    #expect(result.status == 0, "\(key) \(json): \(result.errorOutput)")
                }
            }
            #expect(try await SchemaValidator.failures(of: [defaults.file("app")], against: schema).isEmpty)
        }
    }

    /// A schema written by hand for another program, with the keywords the old checker let
    /// through: each refusal names the rule and where in the value it is broken.
    static let handWrittenSchema = #"""
        {"properties": {
          "name": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
          "port": {"type": "integer", "exclusiveMinimum": 1024},
          "step": {"type": "integer", "multipleOf": 2},
          "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true, "maxItems": 2},
          "window": {"type": "object", "additionalProperties": false,
                     "properties": {"width": {"type": "integer", "minimum": 100}}},
          "colour": {"type": "string", "fromat": "color"}
        }}
        """#

    @Test(arguments: [
        ("name", #""a""#, #"name: "a" has 1 character, fewer than the minimum length 2"#),
        ("name", #""ABC""#, #"name: "ABC" does not match the pattern ^[a-z]+$"#),
        ("port", "1023", "port: 1023 is not greater than the exclusive minimum 1024"),
        ("step", "2001", "step: 2001 is not a multiple of 2"),
        ("tags", #"["a", "a"]"#, #"tags: elements [0] and [1] are both "a"; uniqueItems forbids repeats"#),
        ("tags", #"["a", "b", "c"]"#, "tags: has 3 elements, more than the maximum 2 (maxItems)"),
        ("tags", #"["a", 2]"#, "tags[1]: must be a string, not 2"),
        (
            "window", #"{"width": 200, "extra": 1}"#,
            #"window.extra: the member "extra" is not allowed (additionalProperties)"#
        ),
        ("window", #"{"width": 5}"#, "window.width: 5 is less than the minimum 100"),
    ])
    func writeAndImportNameTheRuleBrokenAndWhere(key: String, json: String, message: String) async throws {
        try await withCommand { defaults in
            try defaults.seed("tool", "{}")
            let schema = Defaults.Suite.schemaFileURL(forSettingsFile: defaults.file("tool"))
            try Data(Self.handWrittenSchema.utf8).write(to: schema)
            let before = try defaults.bytes("tool")
            let refused = try await defaults.run("write", "tool", key, json)
            #expect(refused.status == 2)
            expectOneErrorLine(refused, containing: "defaults: " + message + "; nothing was written")
            let file = defaults.configHome.appendingPathComponent("import.json")
            try Data(#"{"\#(key)": \#(json)}"#.utf8).write(to: file)
            let notImported = try await defaults.run("import", "tool", file.path)
            #expect(notImported.status == 2)
            expectOneErrorLine(notImported, containing: "defaults: " + message + "; nothing was imported")
            #expect(try defaults.bytes("tool") == before)
            let forced = try await defaults.run("import", "tool", file.path, "--force")
            #expect(forced.status == 0, "\(forced.errorOutput)")
        }
    }

    @Test func aKeywordTheCheckCannotApplyIsNamedAndTheValueWritten() async throws {
        try await withCommand { defaults in
            try defaults.seed("tool", "{}")
            let schema = Defaults.Suite.schemaFileURL(forSettingsFile: defaults.file("tool"))
            try Data(Self.handWrittenSchema.utf8).write(to: schema)
            let written = try await defaults.run("write", "tool", "colour", #""red""#)
            #expect(written.status == 0)
            expectOneErrorLine(
                written,
                containing:
                    #"defaults: warning: the schema's "fromat" at /properties/colour is not checked: this checker does not know the keyword"#
            )
            #expect(try await defaults.run("read", "tool", "colour").output == "\"red\"\n")
        }
    }

    /// What the black-box probe of the checker found, each now a case: schemas and names that
    /// stalled the command, passed in silence, or broke its one line.
    @Test func hostileSchemasAndNamesGetAClearAnswerAtOnce() async throws {
        try await withCommand { defaults in
            try defaults.seed("tool", "{}")
            let schemaFile = Defaults.Suite.schemaFileURL(forSettingsFile: defaults.file("tool"))
            func schema(_ text: String) throws { try Data(text.utf8).write(to: schemaFile) }

            // A pattern that backtracks without end: stopped, said, written (it took 54 s for 100 characters).
            try schema(#"{"properties": {"k": {"pattern": "(a*)*b"}}}"#)
            let slow = try await defaults.run("write", "tool", "k", "\"" + String(repeating: "a", count: 100) + "!\"")
            #expect(slow.status == 0)
            expectOneErrorLine(slow, containing: #"matching "(a*)*b" took too long"#)

            // `properties` that is not an object: said, not passed in silence.
            try schema(#"{"properties": [{"type": "integer"}]}"#)
            let noKeys = try await defaults.run("write", "tool", "k", #""x""#)
            expectOneErrorLine(
                noKeys,
                containing: #"warning: the schema's "properties" is not an object: no key is checked"#
            )

            // A rule of the whole file: said not checked.
            try schema(#"{"required": ["k"], "properties": {"k": {"type": "integer"}}}"#)
            let root = try await defaults.run("write", "tool", "k", "1")
            expectOneErrorLine(root, containing: #"warning: the schema's "required" at its root is not checked"#)

            // A name with a control character is quoted, so the refusal stays one line and the
            // terminal is not told to do anything.
            try schema(#"{"properties": {"x\ny": {"type": "integer"}, "\u001b]0;t\u0007": {"type": "integer"}}}"#)
            let newline = try await defaults.run("write", "tool", "x\ny", #""s""#)
            expectOneErrorLine(newline, containing: #"defaults: "x\ny": must be an integer, not "s""#)
            let escape = try await defaults.run("write", "tool", "\u{1b}]0;t\u{07}", #""s""#)
            expectOneErrorLine(escape, containing: #"defaults: "\u001b]0;t\u0007": must be an integer"#)

            // Names that would move the cursor or reorder text, stored by hand: keys lists one a
            // line, read and a missing key's error write them escaped (found by the editor's probe:
            // keys split a name at its line feed and sent U+202E and ESC to the terminal).
            try defaults.seed("odd", #"{"a\u001b[31mX": 1, "b\nc": 2, "\u202eabc": "x\u202ey"}"#)
            let keys = try await defaults.run("keys", "odd")
            #expect(keys.output == "a\\u001B[31mX\n\"b\\nc\"\n\\u202Eabc\n", "\(keys.output)")
            let whole = try await defaults.run("read", "odd")
            #expect(!whole.output.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{202E}" }, "\(whole.output)")
            #expect(
                try Defaults.JSONValue(parsing: whole.output)
                    == Defaults.JSONValue(parsing: Array(Data(contentsOf: defaults.file("odd"))))
            )
            let missing = try await defaults.run("read", "odd", "z\u{1B}[2J")
            expectOneErrorLine(missing, containing: #"no key "z\u001B[2J" in suite odd"#)

            // A long enum and many broken elements are cut to one readable line.
            let cases = (0..<10_000).map(String.init).joined(separator: ", ")
            try schema(#"{"properties": {"k": {"enum": [\#(cases)]}, "l": {"items": {"type": "string"}}}}"#)
            let notACase = try await defaults.run("write", "tool", "k", "-1")
            expectOneErrorLine(notACase, containing: "... (10000 values in all); nothing was written")
            #expect(notACase.errorOutput.utf8.count < 400, "\(notACase.errorOutput.utf8.count) bytes")
            let many = try await defaults.run(
                "write",
                "tool",
                "l",
                "[" + (0..<2_000).map(String.init).joined(separator: ",") + "]"
            )
            expectOneErrorLine(many, containing: "l[9]: must be a string, not 9; and 1990 more; nothing was written")

            // A value 510 levels deep through a recursive reference: checked, not a crash (435
            // levels overflowed the stack).
            try schema(
                ##"{"$defs": {"t": {"type": "object", "properties": {"kid": {"$ref": "#/$defs/t"}, "n": {"type": "integer"}}}}, "properties": {"k": {"$ref": "#/$defs/t"}}}"##
            )
            let tree = String(repeating: #"{"kid": "#, count: 509) + #"{"n": "x"}"# + String(repeating: "}", count: 509)
            let deepTree = try await defaults.run("write", "tool", "k", tree)
            #expect(deepTree.status == 2)
            expectOneErrorLine(deepTree, containing: #".kid.n: must be an integer, not "x"; nothing was written"#)

            // `true` is a schema: it describes no key, and blocks nothing.
            try schema("true")
            #expect(try await defaults.run("write", "tool", "k", "1").status == 0)

            // A value deeper than a file holds is said to be that, not "not JSON".
            let deep = try await defaults.run(
                "write",
                "tool",
                "k",
                String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
            )
            #expect(deep.status == 2)
            expectOneErrorLine(deep, containing: "is nested deeper than 511 levels, the most a settings file holds")
        }
    }

    @Test func writeTakesValuesThatFitKeysNotDescribedAndSuitesWithoutASchema() async throws {
        try await withCommand { defaults in
            try Self.publish("app", in: defaults)
            for (key, json) in [("fontSize", "72"), ("fontSize", "6.0"), ("theme", #""dark""#), ("other", #""big""#)] {
                let written = try await defaults.run("write", "app", key, json)
                #expect(written.status == 0, "\(key) \(json): \(written.errorOutput)")
            }
            #expect(try await defaults.run("write", "app", "nickname", "--string", "Ada").status == 0)
            #expect(try await defaults.run("write", "plain", "fontSize", #""big""#).status == 0)
        }
    }

    @Test func editRefusesACopyWhoseChangedValueDoesNotFitAndAppliesOneThatFits() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"fontSize": 12, "theme": "sepia"}"#)
            try Self.publish("app", in: defaults)
            let before = try defaults.bytes("app")
            let script = defaults.configHome.appendingPathComponent("editor.sh")
            // NB: read by the shell, not executed (see DefaultsCommandTests.editorScript).
            try Data("sed -i 's/\"fontSize\" : 12/\"fontSize\" : 99/' \"$1\"\n".utf8).write(to: script)
            let refused = try await defaults.run(["edit", "app"], environment: ["VISUAL": "/bin/sh " + script.path])
            #expect(refused.status == 2)
            // Only the changed key is checked: "theme" was already wrong, and is left to the person.
            expectOneErrorLine(
                refused,
                containing:
                    "fontSize: 99 is greater than the maximum 72 (the key is Int in 6...72); nothing was applied"
            )
            #expect(try defaults.bytes("app") == before)
            try Data("sed -i 's/\"fontSize\" : 12/\"fontSize\" : 14/' \"$1\"\n".utf8).write(to: script)
            let applied = try await defaults.run(["edit", "app"], environment: ["VISUAL": "/bin/sh " + script.path])
            #expect(applied.status == 0, "\(applied.errorOutput)")
            #expect(applied.errorOutput == "defaults: applied 1 change to app: fontSize\n")
            #expect(try await defaults.run("read", "app", "fontSize").output == "14\n")
        }
    }

    @Test func resetRemovesKeysAndIgnoresKeysNotStored() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"fontSize": 20, "theme": "dark", "other": 1}"#)
            let reset = try await defaults.run("reset", "app", "fontSize", "theme", "never")
            #expect(reset.status == 0, "\(reset.errorOutput)")
            #expect(reset.output.isEmpty && reset.errorOutput.isEmpty)
            #expect(try await defaults.run("read", "app").output == "{\n  \"other\" : 1\n}\n")
            let missing = try await defaults.run("reset", "app")
            #expect(missing.status == 2)
        }
    }

    @Test func keysDescribedListsStoredAndDescribedKeys() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"stored": 1, "$schema": "./settings.schema.json"}"#)
            #expect(try await defaults.run("keys", "app", "--described").output == "$schema\nstored\n")
            try Self.publish("app", in: defaults)
            #expect(try await defaults.run("keys", "app").output == "$schema\nstored\n")
            let described = try await defaults.run("keys", "app", "--described")
            #expect(described.output == "fontSize\nnickname\nstored\ntheme\n")
            try Self.publish("fresh", in: defaults)
            #expect(try await defaults.run("keys", "fresh", "--described").output == "fontSize\nnickname\ntheme\n")
        }
    }
}
