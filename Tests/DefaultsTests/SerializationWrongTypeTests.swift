import Defaults
import Foundation
import Testing

@Suite struct SerializationWrongTypeTests {
    @Test func aStringReadAsAnIntReadsTheDefaultAndStaysStored() throws {
        try withSerializationFile { file in
            let writer = file.makeSuite()
            writer[Defaults.Key<String>("count", default: "", suite: writer)] = "twelve"
            try writer.synchronize()

            let copy = try file.copy()
            let reader = copy.makeSuite()
            let asInt = Defaults.Key<Int>("count", default: 5, suite: reader)
            #expect(reader[asInt] == 5)
            #expect(asInt.isDefaultValue)
            #expect(reader[Defaults.Key<String>("count", default: "", suite: reader)] == "twelve")
            #expect(reader[asInt] == 5)  // a second read, now from the cache

            reader[Defaults.Key<Bool>("unrelated", default: false, suite: reader)] = true
            try reader.synchronize()
            #expect(reader.fileReplacementCount == 1)
            let members = try copy.members()
            #expect(members["count"] == .string("twelve"))
            #expect(members["unrelated"] == .bool(true))
            #expect(file.errors.errors.isEmpty)
        }
    }

    @Test func storedValuesOfTheWrongShapeReadAsTheDefault() throws {
        let document = """
            {
              "fraction" : 1.5,
              "negative" : -1,
              "large" : 300,
              "huge" : 18446744073709551616,
              "number" : 1,
              "text" : "1",
              "list" : [1, "two"],
              "map" : { "a" : 1, "b" : "x" },
              "range" : [5, 1],
              "pair" : [1],
              "date" : "yesterday",
              "data" : "not base64!",
              "uuid" : "not-a-uuid",
              "null" : null
            }
            """
        try withSerializationFile { file in
            try Data(document.utf8).write(to: file.url)
            let suite = file.makeSuite()
            #expect(suite[Defaults.Key<Int>("fraction", default: 9, suite: suite)] == 9)
            #expect(suite[Defaults.Key<UInt>("negative", default: 9, suite: suite)] == 9)
            #expect(suite[Defaults.Key<Int8>("large", default: 9, suite: suite)] == 9)
            #expect(suite[Defaults.Key<UInt64>("huge", default: 9, suite: suite)] == 9)
            #expect(suite[Defaults.Key<Bool>("number", default: false, suite: suite)] == false)
            #expect(suite[Defaults.Key<Int>("text", default: 9, suite: suite)] == 9)
            #expect(suite[Defaults.Key<[Int]>("list", default: [9], suite: suite)] == [9])
            #expect(suite[Defaults.Key<[String: Int]>("map", default: [:], suite: suite)] == [:])
            #expect(suite[Defaults.Key<Range<Int>>("range", default: 0..<1, suite: suite)] == 0..<1)
            #expect(suite[Defaults.Key<ClosedRange<Int>>("pair", default: 0...1, suite: suite)] == 0...1)
            #expect(suite[Defaults.Key<Date>("date", default: .distantPast, suite: suite)] == .distantPast)
            #expect(suite[Defaults.Key<Data>("data", default: Data([9]), suite: suite)] == Data([9]))
            let fallbackID = UUID()
            #expect(suite[Defaults.Key<UUID>("uuid", default: fallbackID, suite: suite)] == fallbackID)
            #expect(suite[Defaults.Key<String>("null", default: "x", suite: suite)] == "x")

            // The same values read through keys of the right type.
            #expect(suite[Defaults.Key<Double>("fraction", default: 0, suite: suite)] == 1.5)
            #expect(suite[Defaults.Key<Int>("negative", default: 0, suite: suite)] == -1)
            #expect(suite[Defaults.Key<Int16>("large", default: 0, suite: suite)] == 300)
            #expect(suite[Defaults.Key<String>("text", default: "", suite: suite)] == "1")
            #expect(file.errors.errors.isEmpty)
        }
    }

    @Test func handWrittenWholeNumbersWithAFractionOrExponentAreReadExactly() throws {
        let document = """
            { "three" : 3.0, "thousand" : 1e3, "negative" : -2.5e1, "beyondDouble" : 9007199254740993.0 }
            """
        try withSerializationFile { file in
            try Data(document.utf8).write(to: file.url)
            let suite = file.makeSuite()
            #expect(suite[Defaults.Key<Int>("three", default: 0, suite: suite)] == 3)
            #expect(suite[Defaults.Key<UInt16>("thousand", default: 0, suite: suite)] == 1_000)
            #expect(suite[Defaults.Key<Int8>("negative", default: 0, suite: suite)] == -25)
            // Exactly 2^53 + 1: as a Double it would round to 2^53.
            let beyond = suite[Defaults.Key<Int>("beyondDouble", default: 0, suite: suite)]
            #expect(beyond == 9_007_199_254_740_993 || beyond == 0, "read as \(beyond)")
        }
    }

    @Test func aCodableKeyOverANonMatchingValueReadsTheDefaultAndLeavesIt() throws {
        try withSerializationFile { file in
            let writer = file.makeSuite()
            writer[Defaults.Key<[String: Int]>("point", default: [:], suite: writer)] = ["x": 1]
            try writer.synchronize()

            let copy = try file.copy()
            let reader = copy.makeSuite()
            let fallback = Point(x: 0, y: 0)
            #expect(reader[Defaults.Key<Point>("point", default: fallback, suite: reader)] == fallback)
            reader[Defaults.Key<Int>("other", default: 0, suite: reader)] = 1
            try reader.synchronize()
            #expect(try copy.members()["point"] == .object(["x": .number("1")]))
        }
    }
}

extension SerializationWrongTypeTests {
    fileprivate struct Point: Codable, Equatable, Defaults.Serializable {
        var x: Int
        var y: Int
    }
}
