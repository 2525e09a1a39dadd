// @testable: checks the writer's exact bytes and its round trip through the parser (`JSONWriter`,
// `JSONParser`).
@testable import Defaults
import Testing

@Suite struct JSONWriterTests {
    private static let sample = JSONValue.object([
        "b": .array([.number("1"), .object([:]), .array([])]),
        "a": .string("x"),
        "Z": .null,
        "é": .bool(true),
        "nested": .object(["y": .number("-2.5e-3"), "x": .array([.string("s")])]),
    ])

    @Test func prettyOutputIsIndentedWithSortedKeysAndEndsWithANewline() {
        let expected = """
            {
              "Z" : null,
              "a" : "x",
              "b" : [
                1,
                {},
                []
              ],
              "nested" : {
                "x" : [
                  "s"
                ],
                "y" : -2.5e-3
              },
              "é" : true
            }

            """
        #expect(String(decoding: JSONWriter.prettyBytes(Self.sample), as: UTF8.self) == expected)
    }

    @Test func compactOutputHasNoWhitespace() {
        let expected = #"{"Z":null,"a":"x","b":[1,{},[]],"nested":{"x":["s"],"y":-2.5e-3},"é":true}"#
        #expect(String(decoding: JSONWriter.compactBytes(Self.sample), as: UTF8.self) == expected)
    }

    @Test func keysAreSortedByTheirUTF8Bytes() {
        let value = JSONValue.object(["b": .null, "B": .null, "é": .null, "e\u{301}x": .null, "~": .null, "": .null])
        let expected = "{\"\":null,\"B\":null,\"b\":null,\"e\u{301}x\":null,\"~\":null,\"\u{E9}\":null}"
        #expect(String(decoding: JSONWriter.compactBytes(value), as: UTF8.self) == expected)
    }

    @Test func membersSortAsTheirNamesUTF8BytesWhateverTheyShare() {
        // Names around the eight bytes compared first: equal first bytes, NULs, shorter and longer
        // names, bytes above 0x7F, and names that differ only after the eighth byte.
        var generator = SeededGenerator(seed: 11)
        let alphabet: [String] = ["a", "b", "\u{0}", "\u{1}", "\u{7F}", "é", "ß", "中", "😀", "-", "z"]
        var names: Set<String> = ["", "a", "ab", "abcdefgh", "abcdefgh\u{0}", "abcdefghi", "abcdefg", "abcdefgg"]
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...12, using: &generator)
            let stem = Bool.random(using: &generator) ? "common-p" : ""
            names.insert(stem + (0..<length).map { _ in alphabet.randomElement(using: &generator)! }.joined())
        }
        let members = Dictionary(uniqueKeysWithValues: names.map { ($0, JSONValue.null) })
        let sorted = JSONWriter.sortedMembers(members).map(\.key)
        let expected = names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        // NB: the first difference only: the whole lists would drown the report.
        let firstDifference = zip(sorted, expected).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(sorted.count == expected.count)
        #expect(firstDifference == nil)
    }

    @Test func stringsEscapeQuotesBackslashesAndControlCharactersOnly() throws {
        let text = "a\"\\\n\r\t\u{0}\u{8}\u{C}\u{1F}\u{7F}é😀/\u{2028}"
        let bytes = JSONWriter.compactBytes(.string(text))
        #expect(!bytes.contains { $0 < 0x20 || $0 == 0x7F })
        let written = String(decoding: bytes, as: UTF8.self)
        #expect(written.hasPrefix(#""a\"\\\n\r\t\u0000"#))
        #expect(written.hasSuffix("\\u007fé😀/\u{2028}\""))
        #expect(try JSONParser.parse(bytes) == .string(text))
    }

    @Test func numberTextIsWrittenAsItIs() throws {
        for text in ["0", "-0", "1.50", "1E+400", "18446744073709551616", "-9223372036854775808"] {
            #expect(JSONWriter.compactBytes(.number(text)) == Array(text.utf8))
        }
    }

    @Test func outputParsesBackToAnEqualValue() throws {
        var generator = SeededGenerator(seed: 0x5EED)
        for _ in 0..<300 {
            let value = JSONValue.random(using: &generator, depth: 4)
            let pretty = JSONWriter.prettyBytes(value)
            let compact = JSONWriter.compactBytes(value)
            #expect(try JSONParser.parse(pretty) == value)
            #expect(try JSONParser.parse(compact) == value)
        }
    }

    @Test func deepButAllowedNestingParsesBack() throws {
        var value = JSONValue.number("1")
        for level in 0..<(JSONParser.maximumDepth - 1) {
            value = level.isMultiple(of: 2) ? .array([value]) : .object(["k": value])
        }
        #expect(try JSONParser.parse(JSONWriter.prettyBytes(value)) == value)
    }

    @Test func equalityComparesStringsByTheirBytes() {
        #expect(JSONValue.string("caf\u{E9}") != .string("cafe\u{301}"))
        #expect(JSONValue.string("caf\u{E9}") == .string("caf\u{E9}"))
        #expect(JSONValue.number("1") != .number("1.0"))
        #expect(JSONValue.array([.null]) != .array([.null, .null]))
        #expect(JSONValue.object(["a": .null]) != .object(["a": .bool(false)]))
        #expect(Set([JSONValue.string("caf\u{E9}"), .string("cafe\u{301}"), .string("caf\u{E9}")]).count == 2)
    }
}

extension JSONWriterTests {
    /// SplitMix64: a fixed sequence, so a failure can be replayed.
    fileprivate struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64

        init(seed: UInt64) {
            self.state = seed
        }

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            return mixed ^ (mixed >> 31)
        }
    }
}

extension JSONValue {
    /// Scalars chosen to exercise escaping and multi-byte UTF-8.
    fileprivate static let interestingScalars: [Unicode.Scalar] =
        (0x00...0x20).compactMap(Unicode.Scalar.init)
        + ["\"", "\\", "/", "a", "Z", "\u{7F}", "\u{80}", "é", "\u{301}", "\u{200B}", "\u{200D}", "\u{2028}"]
        + ["\u{FEFF}", "漢", "ש", "م", "\u{E000}", "\u{FFFF}", "😀", "🇯", "\u{10FFFF}"]

    fileprivate static func random(using generator: inout some RandomNumberGenerator, depth: Int) -> JSONValue {
        switch Int.random(in: 0..<(depth > 0 ? 7 : 4), using: &generator) {
        case 0:
            return Bool.random(using: &generator) ? .null : .bool(Bool.random(using: &generator))
        case 1:
            return .number(randomNumberText(using: &generator))
        case 2, 3:
            return .string(randomString(using: &generator))
        case 4:
            let count = Int.random(in: 0..<5, using: &generator)
            return .array((0..<count).map { _ in random(using: &generator, depth: depth - 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0..<5, using: &generator) {
                members[randomString(using: &generator)] = random(using: &generator, depth: depth - 1)
            }
            return .object(members)
        }
    }

    private static func randomString(using generator: inout some RandomNumberGenerator) -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0..<12, using: &generator) {
            scalars.append(interestingScalars.randomElement(using: &generator)!)
        }
        return String(scalars)
    }

    private static func randomNumberText(using generator: inout some RandomNumberGenerator) -> String {
        switch Int.random(in: 0..<3, using: &generator) {
        case 0:
            return String(Int64.random(in: .min ... .max, using: &generator))
        case 1:
            return String(UInt64.random(in: .min ... .max, using: &generator))
        default:
            let double = Double(bitPattern: UInt64.random(in: .min ... .max, using: &generator))
            return double.isFinite ? double.description : "-0.0"
        }
    }
}
