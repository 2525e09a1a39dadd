import Defaults
import Foundation
import Testing

@Suite struct SerializationStringTests {
    private static let controlCharacters = String(
        String.UnicodeScalarView((0x00...0x1F).compactMap(Unicode.Scalar.init) + ["\u{7F}"])
    )

    private static let samples = [
        "漢字かなカナ한국어中文",
        "👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇯🇵🇺🇦 🧑🏿‍💻",
        "مرحبا بالعالم",
        "שלום עולם",
        "left مرحبا right שלום end",
        "a\u{200B}b\u{200D}c\u{FEFF}d",
        "\u{FEFF}starts with a byte order mark",
        "\u{200D}",
        "quotes \" and \\ backslashes / slashes",
        "line\nbreaks\r\nand\ttabs",
        "\u{2028}\u{2029} line and paragraph separators",
        "\u{10FFFF} and \u{E000} private use",
        controlCharacters,
        "x" + controlCharacters + "y",
    ]

    @Test func unicodeAndControlCharactersSurviveTheFileByteForByte() async throws {
        var batch = SerializationBatch()
        for sample in Self.samples {
            batch.add(sample, default: "fallback") { readBack, stored in
                #expect(Array(readBack.utf8) == Array(sample.utf8), "\(sample.debugDescription)")
                #expect(stored == .string(sample))
            }
        }
        try await batch.run()
    }

    @Test func controlCharactersAreEscapedInTheFileAndNonASCIITextIsNot() throws {
        try withSerializationFile { file in
            let suite = file.makeSuite()
            suite[Defaults.Key<String>("controls", default: "", suite: suite)] = Self.controlCharacters
            suite[Defaults.Key<String>("text", default: "", suite: suite)] = "漢字 🇯🇵 مرحبا"
            try suite.synchronize()

            let bytes = try file.bytes()
            let rawControls = bytes.filter { $0 < 0x20 || $0 == 0x7F }
            #expect(rawControls.allSatisfy { $0 == UInt8(ascii: "\n") })
            let text = try file.text()
            #expect(text.contains(#"\u0000"#))
            #expect(text.contains(#"\u001f"#))
            #expect(text.contains(#"\u007f"#))
            #expect(text.contains(#"\n"#))
            #expect(text.contains("漢字 🇯🇵 مرحبا"))
        }
    }

    @Test func controlCharactersSurviveAsDictionaryKeys() throws {
        var dictionary: [String: Int] = ["new\nline": 1, "tab\there": 2, "\u{7F}": 3, "é": 4, "🇯🇵": 5]
        for (offset, scalar) in (0x00...0x1F).compactMap(Unicode.Scalar.init).enumerated() {
            dictionary[String(scalar)] = 100 + offset
        }
        let result = try serializationRoundTrip(dictionary, default: [:])
        #expect(result.value == dictionary)
        #expect(result.value.count == 37)
        #expect(result.errors.isEmpty)
    }

    @Test func aHundredThousandCharacterStringSurvivesTheFile() throws {
        let pieces: [Character] = ["a", "é", "漢", "🎉", "👨‍👩‍👧", "\u{0}", "\""]
        let long = String((0..<100_000).map { pieces[$0 % pieces.count] })
        #expect(long.count == 100_000)
        let result = try serializationRoundTrip(long, default: "")
        #expect(result.value.count == 100_000)
        #expect(Array(result.value.utf8) == Array(long.utf8))
    }

    @Test func precomposedAndDecomposedAccentsStayByteDistinct() async throws {
        let precomposed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        try #require(precomposed == decomposed)  // Swift calls them equal; the file must not.

        var batch = SerializationBatch()
        batch.add(precomposed, default: "") { readBack, _ in
            #expect(Array(readBack.utf8) == [0x63, 0x61, 0x66, 0xC3, 0xA9])
        }
        batch.add(decomposed, default: "") { readBack, _ in
            #expect(Array(readBack.utf8) == [0x63, 0x61, 0x66, 0x65, 0xCC, 0x81])
        }
        batch.add([precomposed, decomposed], default: []) { readBack, _ in
            #expect(readBack.map { Array($0.utf8) } == [Array(precomposed.utf8), Array(decomposed.utf8)])
        }
        try await batch.run()
    }

    @Test func writingTheDecomposedFormOverThePrecomposedOneIsAChange() throws {
        try withSerializationFile { file in
            let writer = file.makeSuite()
            let key = Defaults.Key<String>("word", default: "", suite: writer)
            writer[key] = "caf\u{E9}"
            try writer.synchronize()
            writer[key] = "cafe\u{301}"
            try writer.synchronize()
            #expect(writer.fileReplacementCount == 2)

            let reader = try file.makeReader()
            #expect(
                Array(reader[Defaults.Key<String>("word", default: "", suite: reader)].utf8).suffix(3) == [
                    0x65, 0xCC, 0x81,
                ]
            )
        }
    }
}
