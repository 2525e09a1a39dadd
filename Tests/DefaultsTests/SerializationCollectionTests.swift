import Defaults
import Foundation
import Testing

@Suite struct SerializationCollectionTests {
    @Test func tenThousandElementArraysSurviveTheFile() async throws {
        var batch = SerializationBatch()
        let integers = (0..<10_000).map { $0 * 7_919 - 39_595_000 }
        batch.add(integers, default: []) { readBack, stored in
            #expect(readBack == integers)
            guard case .array(let elements) = stored else {
                Issue.record("not stored as an array: \(String(describing: stored))")
                return
            }
            #expect(elements.count == 10_000)
            #expect(elements.first == .number("-39595000"))
        }
        let strings = (0..<10_000).map { "item \($0) – ✓" }
        batch.expectLossless(strings, default: [])
        let doubles = (0..<10_000).map { Double($0) / 7 }
        batch.expectLossless(doubles, default: [])
        let flags = (0..<10_000).map { $0.isMultiple(of: 3) }
        batch.expectLossless(flags, default: [])
        try await batch.run()
    }

    @Test func thousandEntryDictionariesSurviveTheFile() async throws {
        var batch = SerializationBatch()
        let byName = Dictionary(uniqueKeysWithValues: (0..<1_000).map { ("key \($0) ключ", $0 * $0) })
        batch.expectLossless(byName, default: [:])
        let byNumber = Dictionary(uniqueKeysWithValues: (-500..<500).map { ($0, "value \($0)") })
        batch.add(byNumber, default: [:]) { readBack, stored in
            #expect(readBack == byNumber)
            guard case .object(let members) = stored else {
                Issue.record("not stored as an object: \(String(describing: stored))")
                return
            }
            #expect(members.count == 1_000)
            #expect(members["-500"] == .string("value -500"))
            #expect(members["499"] == .string("value 499"))
        }
        try await batch.run()
    }

    @Test func integerKeyedDictionariesAreStoredWithTheKeysDescription() throws {
        let result = try serializationRoundTrip([1: "one", -2: "minus two", Int.max: "max"], default: [:])
        #expect(result.value == [1: "one", -2: "minus two", Int.max: "max"])
        #expect(
            result.stored
                == .object(["1": .string("one"), "-2": .string("minus two"), "9223372036854775807": .string("max")])
        )
    }

    @Test func threeLevelNestingSurvivesTheFile() throws {
        let nested: [[String: Set<[String: Int]>]] = [
            ["first": [["a": 1, "b": 2], ["c": Int.min]], "empty": []],
            [:],
            ["second": [[:], ["z": Int.max]]],
        ]
        let result = try serializationRoundTrip(nested, default: [["fallback": [["x": 0]]]])
        #expect(result.value == nested)
        #expect(result.errors.isEmpty)
    }

    @Test func otherNestingsSurviveTheFile() async throws {
        var batch = SerializationBatch()
        batch.expectLossless([[[1, 2], []], [[3]]], default: [])
        batch.expectLossless(["a": ["b": [1, 2, 3]], "c": [:]], default: [:])
        batch.expectLossless([Set(["x", "y"]), []], default: [])
        batch.expectLossless(["ranges": [0..<1, -3..<7]], default: [:])
        batch.expectLossless([[Date(timeIntervalSince1970: 0)]], default: [])
        try await batch.run()
    }

    @Test func optionalElementsKeepTheirNils() async throws {
        var batch = SerializationBatch()
        batch.expectLossless(
            [1, nil, 3, nil] as [Int?],
            default: [],
            storedAs: .array([.number("1"), .null, .number("3"), .null])
        )
        batch.expectLossless([nil] as [Int?], default: [1], storedAs: .array([.null]))
        batch.expectLossless(
            ["present": "x", "absent": nil] as [String: String?],
            default: [:],
            storedAs: .object(["present": .string("x"), "absent": .null])
        )
        batch.add([nil, [nil, 2]] as [[Int?]?], default: []) { readBack, _ in
            #expect(readBack.count == 2)
            #expect(readBack.first == .some(nil))
            #expect(readBack.last == [nil, 2])
        }
        try await batch.run()
    }

    @Test func setsAreStoredInAStableOrder() throws {
        let small = Set(0..<50)
        var large = Set<Int>(minimumCapacity: 4_096)
        for number in (0..<50).reversed() { large.insert(number) }
        try #require(small == large)
        try #require(Array(small) != Array(large))  // the same set, iterated differently

        try withSerializationFile { file in
            let suite = file.makeSuite()
            let key = Defaults.Key<Set<Int>>("numbers", default: [], suite: suite)
            suite[key] = small
            try suite.synchronize()
            let before = try file.bytes()
            suite[key] = large
            try suite.synchronize()
            #expect(suite.fileReplacementCount == 1)
            #expect(try file.bytes() == before)
            let reader = try file.makeReader()
            #expect(reader[Defaults.Key<Set<Int>>("numbers", default: [], suite: reader)] == small)
        }
    }

    @Test func aSetOfStringsSurvivesTheFile() throws {
        let words: Set = ["pear", "apple", "Äpfel", "🍐", ""]
        let result = try serializationRoundTrip(words, default: ["fallback"])
        #expect(result.value == words)
        guard case .array(let stored) = result.stored else {
            Issue.record("not stored as an array: \(String(describing: result.stored))")
            return
        }
        #expect(stored.count == 5)
    }
}
