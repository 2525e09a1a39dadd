import Defaults
import Testing

/// The schema checker, one keyword at a time: what it lets through, what it refuses, and what the
/// refusal says. (The official JSON Schema Test Suite runs against the `defaults` command from
/// `scripts/json-schema-suite`; these are the project's own cases.)
@Suite struct JSONSchemaTests {
    /// The violations of `value` against `schema`, as the command prints them.
    static func problems(_ schema: String, _ value: String) throws -> [String] {
        let checker = Defaults.JSONSchema(try Defaults.JSONValue(parsing: schema))
        return checker.check(try Defaults.JSONValue(parsing: value)).violations.map(\.description)
    }

    /// Each row: a schema, a value, and what the check says (nothing: the value fits).
    static let rows: [(schema: String, value: String, says: [String])] = [
        // type: a name or a list; a number with no fraction is an integer whatever its notation.
        (#"{"type": "integer"}"#, "3.0", []),
        (#"{"type": "integer"}"#, "1e3", []),
        (#"{"type": "integer"}"#, "3.5", ["must be an integer, not 3.5"]),
        (#"{"type": ["string", "null"]}"#, "null", []),
        (#"{"type": ["string", "null"]}"#, "7", ["must be a string or null, not 7"]),
        (#"{"type": []}"#, "7", ["no type is allowed here (its list of types is empty), not 7"]),
        (#"{"type": "object"}"#, "[]", ["must be an object, not []"]),
        // enum and const compare as JSON: numbers by value, objects in any order.
        (#"{"enum": [[0], {"a": 1, "b": 2}]}"#, "[0.0]", []),
        (#"{"enum": [[0], {"a": 1, "b": 2}]}"#, #"{"b": 2.0, "a": 1}"#, []),
        (#"{"enum": ["light", "dark"]}"#, #""purple""#, [#""purple" is not one of "light", "dark""#]),
        (#"{"const": 2}"#, "2.00", []),
        (#"{"const": false}"#, "0", ["must be false, not 0"]),
        // The four bounds, with limits written any way.
        (#"{"minimum": 1.0}"#, "0.99", ["0.99 is less than the minimum 1.0"]),
        (#"{"maximum": 72}"#, "100", ["100 is greater than the maximum 72"]),
        (#"{"maximum": 1e2}"#, "100", []),
        (#"{"exclusiveMinimum": 1024}"#, "1024", ["1024 is not greater than the exclusive minimum 1024"]),
        (#"{"exclusiveMaximum": 0.5}"#, "0.4999999999999999999999999", []),
        (
            #"{"minimum": -9223372036854775808}"#, "-9223372036854775809",
            [
                "-9223372036854775809 is less than the minimum -9223372036854775808"
            ]
        ),
        (
            #"{"maximum": 18446744073709551615}"#, "18446744073709551616",
            [
                "18446744073709551616 is greater than the maximum 18446744073709551615"
            ]
        ),
        // multipleOf: exact, with fractions and with numbers past Double's precision.
        (#"{"multipleOf": 2}"#, "2001", ["2001 is not a multiple of 2"]),
        (#"{"multipleOf": 0.01}"#, "19.99", []),
        (#"{"multipleOf": 0.1}"#, "0.3", []),
        (#"{"multipleOf": 2}"#, "9007199254740993", ["9007199254740993 is not a multiple of 2"]),
        (#"{"multipleOf": 0.123456789}"#, "1e308", ["1e308 is not a multiple of 0.123456789"]),
        // Lengths count code points, as JSON does.
        (#"{"minLength": 2}"#, #""a""#, [#""a" has 1 character, fewer than the minimum length 2"#]),
        (#"{"maxLength": 2}"#, #""💩💩""#, []),
        (#"{"maxLength": 2.0}"#, #""abc""#, [#""abc" has 3 characters, more than the maximum length 2"#]),
        // pattern: unanchored, ECMA-262 classes.
        (#"{"pattern": "^[a-z]+$"}"#, #""Abc""#, [#""Abc" does not match the pattern ^[a-z]+$"#]),
        (#"{"pattern": "b"}"#, #""abc""#, []),
        (#"{"pattern": "^\\d+$"}"#, #""٤٢""#, [#""٤٢" does not match the pattern ^\d+$"#]),
        // Arrays.
        (#"{"items": {"type": "string"}}"#, #"["a", 2]"#, ["[1]: must be a string, not 2"]),
        (
            #"{"prefixItems": [{"type": "integer"}], "items": false}"#, "[1, 2]",
            [
                "[1]: no element is allowed past the ones prefixItems describes"
            ]
        ),
        (#"{"minItems": 2}"#, "[1]", ["has 1 element, fewer than the minimum 2 (minItems)"]),
        (#"{"maxItems": 1}"#, "[1, 2]", ["has 2 elements, more than the maximum 1 (maxItems)"]),
        (
            #"{"uniqueItems": true}"#, #"["a", "a"]"#,
            [#"elements [0] and [1] are both "a"; uniqueItems forbids repeats"#]
        ),
        (#"{"uniqueItems": true}"#, "[1, 1.0]", ["elements [0] and [1] are both 1.0; uniqueItems forbids repeats"]),
        (#"{"uniqueItems": true}"#, "[[1], [true]]", []),
        (#"{"contains": {"const": 3}}"#, "[1, 2]", ["no element fits the schema under contains"]),
        (
            #"{"contains": {"const": 3}, "maxContains": 1}"#, "[3, 3]",
            [
                "2 elements fit the schema under contains, more than maxContains 1"
            ]
        ),
        (#"{"contains": {"const": 3}, "minContains": 0}"#, "[]", []),
        (
            #"{"prefixItems": [true], "contains": {"type": "string"}, "unevaluatedItems": false}"#, #"[1, "a", 2]"#,
            [
                "[2]: the element 2 is not allowed (unevaluatedItems)"
            ]
        ),
        // Objects, with paths inside the value.
        (#"{"required": ["height"]}"#, #"{"width": 1}"#, [#"lacks the member "height", which is required"#]),
        (#"{"properties": {"width": {"minimum": 100}}}"#, #"{"width": 5}"#, ["width: 5 is less than the minimum 100"]),
        (
            #"{"properties": {"width": true}, "additionalProperties": false}"#, #"{"width": 200, "extra": 1}"#,
            [
                #"extra: the member "extra" is not allowed (additionalProperties)"#
            ]
        ),
        (#"{"patternProperties": {"^x-": true}, "additionalProperties": false}"#, #"{"x-a": 1}"#, []),
        (
            #"{"patternProperties": {"^n": {"type": "number"}}}"#, #"{"n1": "one"}"#,
            [#"n1: must be a number, not "one""#]
        ),
        (
            #"{"propertyNames": {"maxLength": 3}}"#, #"{"long": 1}"#,
            [
                #"long: the name is not allowed (propertyNames): "long" has 4 characters, more than the maximum length 3"#
            ]
        ),
        (#"{"minProperties": 1}"#, "{}", ["has 0 members, fewer than the minimum 1 (minProperties)"]),
        (#"{"maxProperties": 1}"#, #"{"a": 1, "b": 2}"#, ["has 2 members, more than the maximum 1 (maxProperties)"]),
        (
            #"{"dependentRequired": {"card": ["expiry"]}}"#, #"{"card": "x"}"#,
            [
                #"has "card", so it must have "expiry" too"#
            ]
        ),
        (
            #"{"dependentSchemas": {"a": {"required": ["b"]}}}"#, #"{"a": 1}"#,
            [#"lacks the member "b", which is required"#]
        ),
        (
            #"{"properties": {"a": true}, "unevaluatedProperties": false}"#, #"{"a": 1, "b": 2}"#,
            [
                #"b: the member "b" is not allowed (unevaluatedProperties)"#
            ]
        ),
        (
            #"{"properties": {"servers": {"properties": {"eu.west": {"type": "string"}}}}}"#,
            #"{"servers": {"eu.west": 1}}"#, [#"servers["eu.west"]: must be a string, not 1"#]
        ),
        // Combinations.
        (#"{"allOf": [{"minimum": 1}, {"maximum": 3}]}"#, "4", ["4 is greater than the maximum 3"]),
        (
            #"{"anyOf": [{"type": "string"}, {"minimum": 10}]}"#, "2",
            [
                #"fits none of the 2 schemas of anyOf: (1) must be a string, not 2 (2) 2 is less than the minimum 10"#
            ]
        ),
        (
            #"{"oneOf": [{"minimum": 1}, {"maximum": 5}]}"#, "3",
            [
                "fits 2 of the schemas of oneOf (1, 2); it must fit exactly one"
            ]
        ),
        (#"{"oneOf": [{"minimum": 1}, {"maximum": 5}]}"#, "7", []),
        (#"{"not": {"type": "null"}}"#, "null", ["null fits the schema under not, which it must not"]),
        (
            #"{"if": {"minimum": 10}, "then": {"multipleOf": 10}, "else": {"const": 0}}"#, "15",
            [
                "15 is not a multiple of 10"
            ]
        ),
        (#"{"if": {"minimum": 10}, "then": {"multipleOf": 10}, "else": {"const": 0}}"#, "3", ["must be 0, not 3"]),
        (#"{"then": {"const": 0}}"#, "3", []),
        (#"false"#, "1", ["no value is allowed here (its schema is `false`), not 1"]),
        // References inside the document.
        (
            ##"{"$defs": {"port": {"minimum": 1024}}, "$ref": "#/$defs/port"}"##, "80",
            ["80 is less than the minimum 1024"]
        ),
        (
            ##"{"properties": {"a": {"type": "integer"}, "b": {"$ref": "#/properties/a"}}}"##, ##"{"b": "x"}"##,
            [
                #"b: must be an integer, not "x""#
            ]
        ),
        (
            ##"{"$defs": {"p": {"$anchor": "size", "maximum": 9}}, "$ref": "#size"}"##, "10",
            ["10 is greater than the maximum 9"]
        ),
        (
            #"{"$id": "https://example.com/root", "$defs": {"p": {"$id": "part", "type": "string"}}, "$ref": "part"}"#,
            "1",
            [
                "must be a string, not 1"
            ]
        ),
        (
            ##"{"$defs": {"a/b": {"type": "null"}, "c~d": {"type": "null"}}, "allOf": [{"$ref": "#/$defs/a~1b"}, {"$ref": "#/$defs/c~0d"}]}"##,
            "null", []
        ),
        (
            ##"{"properties": {"next": {"$ref": "#"}}, "required": ["v"]}"##, ##"{"v": 1, "next": {"next": {}}}"##,
            [
                #"next: lacks the member "v", which is required"#,
                #"next.next: lacks the member "v", which is required"#,
            ]
        ),
    ]

    @Test(arguments: rows.indices)
    func eachKeywordSaysWhatItRefuses(row: Int) throws {
        let (schema, value, says) = Self.rows[row]
        #expect(try Self.problems(schema, value) == says, "schema \(schema), value \(value)")
    }

    @Test func aSettingIsCheckedByItsPropertyWithReferencesIntoTheWholeDocument() throws {
        let document = try Defaults.JSONValue(
            parsing: """
                {"$defs": {"size": {"type": "integer", "minimum": 100}},
                 "properties": {"window": {"type": "object", "properties": {"width": {"$ref": "#/$defs/size"}}}}}
                """
        )
        let schema = Defaults.JSONSchema(document)
        let outcome = try #require(schema.check(try Defaults.JSONValue(parsing: #"{"width": 5}"#), forKey: "window"))
        #expect(outcome.violations.map(\.description) == ["window.width: 5 is less than the minimum 100"])
        #expect(outcome.violations.first?.keyword == "minimum")
        #expect(schema.check(.null, forKey: "other") == nil)
        #expect(schema.describes(key: "window"))
        #expect(!schema.describes(key: "other"))
    }

    @Test func aKeywordNotCheckedIsNamedWithWhereItIs() throws {
        let cases: [(schema: String, keyword: String, location: String, reason: String)] = [
            (#"{"allOf": [{"minimun": 3}]}"#, "minimun", "/allOf/0", "does not know the keyword"),
            (#"{"$ref": "https://json-schema.org/draft/2020-12/schema"}"#, "$ref", "", "refers to another document"),
            (##"{"$ref": "#/$defs/missing"}"##, "$ref", "", "is nowhere in the document"),
            (##"{"$dynamicRef": "#meta"}"##, "$dynamicRef", "", "dynamic reference"),
            (#"{"dependencies": {"a": ["b"]}}"#, "dependencies", "", "write dependentRequired or dependentSchemas"),
            (#"{"pattern": "(unclosed"}"#, "pattern", "", "not a regular expression"),
            (#"{"minimum": "3"}"#, "minimum", "", "not a number"),
            (
                ##"{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}"##, "$ref",
                "/$defs/b", "a loop"
            ),
        ]
        for (schema, keyword, location, reason) in cases {
            let checker = Defaults.JSONSchema(try Defaults.JSONValue(parsing: schema))
            let outcome = checker.check(.string("x"))
            let unchecked = try #require(outcome.uncheckedKeywords.first, "\(schema)")
            #expect(outcome.isValid, "\(schema)")
            #expect(unchecked.keyword == keyword, "\(schema)")
            #expect(unchecked.location == location, "\(schema)")
            #expect(unchecked.reason.contains(reason), "\(schema): \(unchecked.reason)")
        }
        // The document read through names them all before any value is checked.
        let surveyed = Defaults.JSONSchema(
            try Defaults.JSONValue(
                parsing: ##"""
                    {"properties": {"a": {"minimun": 3}, "b": {"items": {"pattern": "(x"}}, "c": {"$ref": "#/nowhere"},
                     "d": {"$ref": "https://example.com/other.json"}, "e": {"patternProperties": {"[": true}},
                     "f": {"type": "integr"}}}
                    """##
            )
        )
        #expect(
            surveyed.uncheckedKeywords.map { "\($0.keyword) \($0.location)" }.sorted() == [
                "$ref /properties/c", "$ref /properties/d", "minimun /properties/a", "pattern /properties/b/items",
                "patternProperties /properties/e", "type /properties/f",
            ]
        )
        // A name with a control character is escaped in the line that says so.
        let controlled = Defaults.JSONSchema(
            try Defaults.JSONValue(parsing: #"{"properties": {"a\nb": {"minimun": 1}}}"#)
        )
        #expect(
            controlled.uncheckedKeywords.map(\.description) == [
                #""minimun" at /properties/a\nb is not checked: this checker does not know the keyword"#
            ]
        )
        // Annotations and extensions are not keywords left unchecked.
        let annotated = Defaults.JSONSchema(
            try Defaults.JSONValue(
                parsing: """
                    {"title": "t", "description": "d", "default": 1, "examples": [1], "readOnly": true, "format": "email",
                     "x-swift-type": "Int", "$comment": "c", "$schema": "https://json-schema.org/draft/2020-12/schema"}
                    """
            )
        )
        #expect(annotated.check(.number("1")).uncheckedKeywords.isEmpty)
        #expect(annotated.uncheckedKeywords.isEmpty)
    }

    /// A long array is checked for repeats in one pass: 200,000 distinct numbers, then the same
    /// with the last equal by value to the first.
    @Test func uniqueItemsOverALongArray() throws {
        let checker = Defaults.JSONSchema(.object(["uniqueItems": .bool(true)]))
        var elements = (0..<200_000).map { Defaults.JSONValue.number(String($0)) }
        #expect(checker.check(.array(elements)).isValid)
        elements.append(.number("0.0e5"))
        #expect(
            checker.check(.array(elements)).violations.map(\.description) == [
                "elements [0] and [200000] are both 0.0e5; uniqueItems forbids repeats"
            ]
        )
    }

    /// A schema that applies itself twice at each of 40 levels would take 2⁴⁰ steps: the check
    /// stops after 100,000 (and 16 for the value), and says so.
    @Test func aSchemaThatMultipliesItsOwnWorkStopsAndSaysSo() throws {
        var defs: [String: Defaults.JSONValue] = ["d40": .object(["type": .string("integer")])]
        for level in 0..<40 {
            let next = Defaults.JSONValue.object(["$ref": .string("#/$defs/d\(level + 1)")])
            defs["d\(level)"] = .object(["allOf": .array([next, next])])
        }
        let checker = Defaults.JSONSchema(.object(["$defs": .object(defs), "$ref": .string("#/$defs/d0")]))
        let outcome = checker.check(.number("1"))
        #expect(outcome.isValid)
        #expect(
            outcome.uncheckedKeywords.map(\.reason) == [
                "the check stopped after applying 100016 schemas; the rest is not checked"
            ]
        )
    }

    /// A pattern the matcher gives up on (its backtracking outgrows its memory on a megabyte of
    /// text) is said not checked, never taken for "does not match".
    @Test func aPatternTheMatcherGivesUpOnIsSaidNotChecked() throws {
        let checker = Defaults.JSONSchema(.object(["pattern": .string("^a*$")]))
        let shorter = checker.check(.string(String(repeating: "a", count: 100_000)))
        #expect(shorter.isValid && shorter.uncheckedKeywords.isEmpty)
        let outcome = checker.check(.string(String(repeating: "a", count: 1_000_000)))
        #expect(outcome.isValid)
        #expect(outcome.uncheckedKeywords.map(\.reason) == [#"matching "^a*$" against a text this long failed"#])
        // A pattern that backtracks without end is stopped long before the matcher's own limit
        // (past which it would answer "no match" for a text that matches by another way).
        let backtracking = Defaults.JSONSchema(.object(["pattern": .string("^(a|a)*$|^a")]))
        let stopped = backtracking.check(.string(String(repeating: "a", count: 25) + "!"))
        #expect(stopped.isValid)
        #expect(
            stopped.uncheckedKeywords.map(\.reason) == [
                #"matching "^(a|a)*$|^a" took too long (it backtracks without end?)"#
            ]
        )
    }

    /// A schema that refers to itself for each level of the value is followed as deep as the
    /// value goes (500 levels, past any fixed depth of references), without a word of a loop.
    @Test func aRecursiveSchemaIsFollowedAsDeepAsTheValue() throws {
        let checker = Defaults.JSONSchema(
            try Defaults.JSONValue(
                parsing: ##"{"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}"##
            )
        )
        let good = try Defaults.JSONValue(
            parsing: String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
        )
        let goodOutcome = checker.check(good)
        #expect(goodOutcome.isValid && goodOutcome.uncheckedKeywords.isEmpty, "\(goodOutcome)")
        let bad = try Defaults.JSONValue(
            parsing: String(repeating: "[", count: 300) + #""x""# + String(repeating: "]", count: 300)
        )
        let outcome = checker.check(bad)
        #expect(outcome.violations.map(\.message) == [#"must be an array, not "x""#])
        #expect(outcome.violations.first?.path == String(repeating: "[0]", count: 300))
        #expect(outcome.uncheckedKeywords.isEmpty)
        // 510 levels of objects through a recursive reference (435 overflowed the stack, the
        // black-box probe found, in the defaults command and the editor alike).
        let tree = Defaults.JSONSchema(
            try Defaults.JSONValue(
                parsing:
                    ##"{"$defs": {"t": {"type": "object", "properties": {"kid": {"$ref": "#/$defs/t"}, "n": {"type": "integer"}}}}, "$ref": "#/$defs/t"}"##
            )
        )
        let deepTree = try Defaults.JSONValue(
            parsing: String(repeating: #"{"kid": "#, count: 510) + #"{"n": "x"}"# + String(repeating: "}", count: 510)
        )
        #expect(tree.check(deepTree).violations.map(\.message) == [#"must be an integer, not "x""#])
        // And a chain of 70 references that never loops is followed to its end.
        var defs: [String: Defaults.JSONValue] = ["d70": .object(["type": .string("integer")])]
        for level in 0..<70 { defs["d\(level)"] = .object(["$ref": .string("#/$defs/d\(level + 1)")]) }
        let chain = Defaults.JSONSchema(.object(["$defs": .object(defs), "$ref": .string("#/$defs/d0")]))
        #expect(chain.check(.string("x")).violations.map(\.message) == [#"must be an integer, not "x""#])
    }

    @Test func aLongValueIsQuotedCut() throws {
        let long = String(repeating: "a", count: 200)
        let says = try Self.problems(#"{"type": "integer"}"#, "\"\(long)\"")
        #expect(says == ["must be an integer, not \"" + String(repeating: "a", count: 76) + "..."])
    }
}
