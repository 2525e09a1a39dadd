// @testable: unit tests of the parser and the places its failures name (`JSONParser`).
@testable import Defaults
import Testing

@Suite struct JSONParserTests {
    /// Malformed documents, each written as text.
    private static let malformedText = [
        // Empty and truncated documents.
        "", " ", "{", "[", "[1,", "[1", "{\"a\"", "{\"a\":", "{\"a\":1", "{\"a\":1,", "\"abc", "tru", "fals", "nul",
        "-", "1.", "1e+", "[\"a\\",
        // Trailing garbage.
        "[1] x", "{} {}", "1 2", "truex", "nullnull", "\"a\"\"b\"", "01", "[1]]", "{}}", "1.5.2",
        // Structural mistakes.
        "[1,]", "[,1]", "{\"a\":1,}", "{,}", "{a:1}", "{\"a\" 1}", "{\"a\":}", "{1:2}", "[1 2]", "{\"a\":1 \"b\":2}",
        "]", "}", ":", ",",
        // Numbers JSON does not allow.
        "+1", ".5", "-.5", "NaN", "Infinity", "-Infinity", "0x10", "1e", "--1", "-a", "1.e3",
        // Literals with the wrong case or spelling.
        "True", "NULL", "nil", "undefined",
        // Bad escapes.
        "\"\\x\"", "\"\\a\"", "\"\\U0041\"", "\"\\u12\"", "\"\\u12G4\"", "\"\\u\"", "\"\\", "\"\\'\"",
        // Lone or mismatched surrogates.
        "\"\\uD800\"", "\"\\uDBFF\"", "\"\\uDC00\"", "\"\\uDFFF\"", "\"\\uD800\\u0041\"", "\"\\uD800\\uD800\"",
        "\"\\uD800x\"", "\"\\uD800\\n\"", "\"\\uDC00\\uD800\"",
        // Control characters inside strings.
        "\"a\u{0}b\"", "\"\n\"", "\"\t\"", "\"\r\"", "\"\u{1F}\"", "{\"ke\u{1}y\":1}",
        // Other whitespace is not JSON whitespace.
        "\u{0C}1", "\u{A0}1", "1\u{0B}",
    ]

    /// Malformed documents that are not valid UTF-8 text.
    private static let malformedBytes: [[UInt8]] = [
        [0x22, 0xFF, 0x22],  // a byte that never occurs in UTF-8
        [0x22, 0xC3, 0x22],  // a truncated two-byte sequence
        [0x22, 0xE6, 0xBC, 0x22],  // a truncated three-byte sequence
        [0x22, 0xC0, 0xAF, 0x22],  // an overlong "/"
        [0x22, 0xE0, 0x80, 0xAF, 0x22],  // an overlong three-byte "/"
        [0x22, 0xED, 0xA0, 0x80, 0x22],  // a UTF-8 encoded surrogate
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // beyond U+10FFFF
        [0x22, 0x80, 0x22],  // a lone continuation byte
        [0x22, 0x5C, 0x6E, 0xFF, 0x22],  // after an escape
        [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D],  // in an object key
        [0xFF],  // outside a string
        [0x5B, 0x31, 0x5D, 0x00],  // a NUL after the document
    ]

    @Test(arguments: malformedText)
    func malformedTextIsRejectedWithAnError(_ text: String) {
        #expect(throws: JSONParser.Failure.self, "\(text.debugDescription)") {
            try JSONParser.parse(Array(text.utf8))
        }
    }

    @Test(arguments: malformedBytes)
    func invalidUTF8IsRejectedWithAnError(_ bytes: [UInt8]) {
        #expect(throws: JSONParser.Failure.self) {
            try JSONParser.parse(bytes)
        }
    }

    @Test func everyTruncationOfAValidDocumentIsRejected() throws {
        let document = Array(#"{"a":[1,-2.5e+3,true,false,null,"x\u00e9\ud83d\ude00\n"],"b":{"c":{}}}"#.utf8)
        _ = try JSONParser.parse(document)
        for length in 0..<document.count {
            #expect(throws: JSONParser.Failure.self, "truncated to \(length) bytes") {
                try JSONParser.parse(Array(document[..<length]))
            }
        }
    }

    @Test func aNameGivenTwiceInAnObjectKeepsItsLastValue() throws {
        let document = Array(#"{"a": 1, "b": {"x": [1], "x": [2]}, "a": "last", "c": null}"#.utf8)
        let expected = JSONValue.object([
            "a": .string("last"), "b": .object(["x": .array([.number("2")])]), "c": .null,
        ])
        #expect(try JSONParser.parse(document) == expected)
    }

    @Test func nestingUpToTheMaximumDepthIsAcceptedAndDeeperIsRejected() throws {
        let depth = JSONParser.maximumDepth
        let deepest = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        _ = try JSONParser.parse(Array(deepest.utf8))

        let tooDeep = String(repeating: "[", count: depth + 1) + String(repeating: "]", count: depth + 1)
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(tooDeep.utf8)) }

        let objects = String(repeating: #"{"a":"#, count: depth + 1) + "1" + String(repeating: "}", count: depth + 1)
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(objects.utf8)) }
    }

    @Test func hugeNestingIsRejectedWithoutExhaustingTheStack() {
        let opening = [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(opening) }
        let mixed = Array(String(repeating: #"[{"k":"#, count: 100_000).utf8)
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(mixed) }
    }

    @Test func aFailureNamesTheByteOffsetAndTheLineAndColumn() throws {
        let failure = try #require(throws: JSONParser.Failure.self) {
            try JSONParser.parse(Array("[1,2,x]".utf8))
        }
        #expect(failure.offset == 5)
        #expect(failure.description == "invalid JSON at line 1, column 6: unexpected character")
        // Columns count characters, not bytes; lines start after each newline.
        let later = try #require(throws: JSONParser.Failure.self) {
            try JSONParser.parse(Array("{\n  \"é\" : \"ü\" x\n}".utf8))
        }
        #expect((later.line, later.column) == (2, 13))
    }

    @Test func aDocumentThatStopsShortSaysSoWhateverWasExpectedNext() throws {
        for truncated in ["{", #"{"a": 5,"#, "[1, ", #"{"a""#, ""] {
            let failure = try #require(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(truncated.utf8)) }
            #expect(failure.reason == "unexpected end of data", "\(truncated)")
        }
    }

    /// A string's plain bytes are scanned eight at a time: each byte that ends a run (quote,
    /// backslash, control character) or is not ASCII, at every place in and around a word, is
    /// still seen.
    @Test func everyPlaceOfAByteThatEndsARunOrIsNotASCIIIsSeen() throws {
        let plain = Array("abcdefghijklmnopqrstuvwx".utf8)
        for place in 0..<plain.count {
            for (inserted, expected) in [
                (Array("\\\"".utf8), "\""), (Array("\\n".utf8), "\n"), (Array("é".utf8), "é"),
                (Array("😀".utf8), "😀"), ([0x7F], "\u{7F}"),
            ] as [([UInt8], String)] {
                var bytes = plain
                bytes.insert(contentsOf: inserted, at: place)
                let text =
                    String(decoding: plain[..<place], as: UTF8.self) + expected
                    + String(decoding: plain[place...], as: UTF8.self)
                #expect(try JSONParser.parse([0x22] + bytes + [0x22]) == .string(text))
            }
            for control: UInt8 in [0x00, 0x0A, 0x1F] {
                var bytes = plain
                bytes.insert(control, at: place)
                #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22] + bytes + [0x22]) }
            }
            for invalid: [UInt8] in [[0xFF], [0xC3], [0x80]] {
                var bytes = plain
                bytes.insert(contentsOf: invalid, at: place)
                #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22] + bytes + [0x22]) }
            }
            // The closing quote at every place: the string ends there.
            let ended = Array(plain[..<place])
            #expect(try JSONParser.parse([0x22] + ended + [0x22]) == .string(String(decoding: ended, as: UTF8.self)))
        }
    }

    @Test func validDocumentsParseToTheirValues() throws {
        let text = """
             \t\r
            {"text" : "q\\"b\\\\s\\/\\b\\f\\n\\r\\t\\u00e9\\u0000\\ud83d\\ude00é😀",
             "numbers" : [0, -0, 1.50, -2.5E-3, 1e+400, 18446744073709551616],
             "literals" : [true, false, null],
             "empty" : [{}, [], ""],
             "" : "empty key"}
            """
        let value = try JSONParser.parse(Array(text.utf8))
        #expect(
            value
                == .object([
                    "text": .string("q\"b\\s/\u{8}\u{C}\n\r\té\u{0}😀é😀"),
                    "numbers": .array([
                        .number("0"), .number("-0"), .number("1.50"), .number("-2.5E-3"), .number("1e+400"),
                        .number("18446744073709551616"),
                    ]),
                    "literals": .array([.bool(true), .bool(false), .null]),
                    "empty": .array([.object([:]), .array([]), .string("")]),
                    "": .string("empty key"),
                ])
        )
        #expect(try JSONParser.parse(Array("7".utf8)) == .number("7"))
        #expect(try JSONParser.parse(Array(" \"top\" ".utf8)) == .string("top"))
        #expect(try JSONParser.parse(Array("null".utf8)) == .null)
        #expect(try JSONParser.parse(Array("\"\u{7F}\"".utf8)) == .string("\u{7F}"))
    }
}
