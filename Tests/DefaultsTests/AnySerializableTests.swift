import Defaults
import Foundation
import Testing

@Suite struct AnySerializableTests {
    /// The wrapped JSON `null`.
    private static let null = Defaults.AnySerializable(nilLiteral: ())

    @Test func literalsWrapTheirValues() {
        let text: Defaults.AnySerializable = "hello"
        #expect(text.get() == "hello")
        #expect(text.get(Int.self) == nil)

        let integer: Defaults.AnySerializable = 42
        #expect(integer.get() == 42)
        #expect(integer.get(Int8.self) == 42)
        #expect(integer.get(UInt64.self) == 42)
        #expect(integer.get(Double.self) == 42)
        #expect(integer.get(String.self) == nil)
        #expect(integer.get(Bool.self) == nil)

        let fraction: Defaults.AnySerializable = 0.1
        #expect(fraction.get() == 0.1)
        #expect(fraction.get(Float.self) == Float(0.1))
        #expect(fraction.get(Int.self) == nil)

        let flag: Defaults.AnySerializable = true
        #expect(flag.get() == true)
        #expect(flag.get(Int.self) == nil)

        let nothing: Defaults.AnySerializable = nil
        #expect(nothing.get(Int?.self) == .some(nil))
        #expect(nothing.get(Int.self) == nil)
        #expect(nothing.get(String.self) == nil)
    }

    @Test func arrayAndDictionaryLiteralsNestOtherValues() throws {
        let array: Defaults.AnySerializable = [1, "two", 3.5, false, nil, [4], ["five": 5]]
        let elements = try #require(array.get([Defaults.AnySerializable].self))
        #expect(elements.count == 7)
        #expect(elements[0].get(Int.self) == 1)
        #expect(elements[1].get(String.self) == "two")
        #expect(elements[2].get(Double.self) == 3.5)
        #expect(elements[3].get(Bool.self) == false)
        #expect(elements[4] == Self.null)
        #expect(elements[5].get([Int].self) == [4])
        #expect(elements[6].get([String: Int].self) == ["five": 5])
        #expect(array.get([Int].self) == nil)

        let strings: Defaults.AnySerializable = ["a", "b"]
        #expect(strings.get([String].self) == ["a", "b"])

        let dictionary: Defaults.AnySerializable = ["count": 3, "name": "x", "nested": ["deep": [true]]]
        let members = try #require(dictionary.get([String: Defaults.AnySerializable].self))
        #expect(members["count"]?.get(Int.self) == 3)
        #expect(members["name"]?.get(String.self) == "x")
        #expect(members["nested"]?.get([String: [Bool]].self) == ["deep": [true]])
        #expect(dictionary.get([String: Int].self) == nil)
    }

    @Test func setReplacesTheWrappedValue() {
        var value: Defaults.AnySerializable = 1
        value.set("now a string")
        #expect(value.get(String.self) == "now a string")
        #expect(value.get(Int.self) == nil)
        value.set([1, 2, 3])
        #expect(value.get([Int].self) == [1, 2, 3])
        value.set(Color.green)
        #expect(value.get(Color.self) == .green)
        value.set(Int?.none)
        #expect(value == Self.null)
    }

    @Test func typedValuesGoInAndComeOut() throws {
        #expect(Defaults.AnySerializable(Color.blue).get() == Color.blue)
        #expect(Defaults.AnySerializable(Color.blue).get(String.self) == "blue")
        #expect(Defaults.AnySerializable("red").get(Color.self) == .red)
        #expect(Defaults.AnySerializable("purple").get(Color.self) == nil)
        #expect(Defaults.AnySerializable(UInt64.max).get() == UInt64.max)
        #expect(Defaults.AnySerializable(UInt64.max).get(Int.self) == nil)
        #expect(Defaults.AnySerializable(Int8.min).get(Int8.self) == .min)
        #expect(Defaults.AnySerializable(Double.nan).get(Double.self)?.isNaN == true)
        let uuid = UUID()
        #expect(Defaults.AnySerializable(uuid).get() == uuid)
        let sample = Sample(name: "s", values: [1, 2])
        #expect(Defaults.AnySerializable(sample).get() == sample)
        #expect(Defaults.AnySerializable(sample).get([String: Defaults.AnySerializable].self)?["name"] == "s")
    }

    @Test func equalityFollowsTheStoredForm() {
        #expect(Defaults.AnySerializable(1) == 1)
        #expect(Defaults.AnySerializable("a") == "a")
        #expect(Defaults.AnySerializable(1) != "1")
        #expect(Defaults.AnySerializable(Color.red) == "red")
        let set: Set<Defaults.AnySerializable> = [1, 1, "1", nil, nil]
        #expect(set.count == 3)
    }

    @Test func aDictionaryOfMixedValuesSurvivesTheFile() throws {
        try withSerializationFile { file in
            let writer = file.makeSuite()
            let key = Defaults.Key<[String: Defaults.AnySerializable]>("magic", default: [:], suite: writer)
            writer[key]["count"] = 3
            writer[key]["name"] = "Ünï"
            writer[key]["ratio"] = 0.25
            writer[key]["enabled"] = true
            writer[key]["tags"] = ["a", 1]
            writer[key]["nothing"] = Self.null
            writer[key]["color"] = Defaults.AnySerializable(Color.green)
            writer[key]["largest"] = Defaults.AnySerializable(UInt64.max)
            try writer.synchronize()

            #expect(
                try file.members()["magic"]
                    == .object([
                        "count": .number("3"),
                        "name": .string("Ünï"),
                        "ratio": .number("0.25"),
                        "enabled": .bool(true),
                        "tags": .array([.string("a"), .number("1")]),
                        "nothing": .null,
                        "color": .string("green"),
                        "largest": .number("18446744073709551615"),
                    ])
            )
            let reader = try file.makeReader()
            let magic = reader[Defaults.Key<[String: Defaults.AnySerializable]>("magic", default: [:], suite: reader)]
            #expect(magic.count == 8)
            #expect(magic["count"]?.get(Int.self) == 3)
            #expect(magic["name"]?.get(String.self) == "Ünï")
            #expect(magic["ratio"]?.get(Double.self) == 0.25)
            #expect(magic["enabled"]?.get(Bool.self) == true)
            #expect(magic["tags"] == ["a", 1])
            #expect(magic["nothing"] == Self.null)
            #expect(magic["color"]?.get(Color.self) == .green)
            #expect(magic["largest"]?.get(UInt64.self) == .max)
            #expect(file.errors.errors.isEmpty)
        }
    }

    @Test func anArrayOfMixedValuesSurvivesTheFile() throws {
        let mixed: [Defaults.AnySerializable] = [1, "two", 3.5, nil, [true], ["k": "v"]]
        let result = try serializationRoundTrip(mixed, default: ["default"])
        #expect(result.value == mixed)
        #expect(result.value[1].get(String.self) == "two")
        #expect(
            result.stored
                == .array([
                    .number("1"), .string("two"), .number("3.5"), .null, .array([.bool(true)]),
                    .object(["k": .string("v")]),
                ])
        )
    }

    @Test func assigningNilToAKeyRemovesTheValueAndTheDefaultComesBack() throws {
        try withSerializationFile { file in
            let suite = file.makeSuite()
            let key = Defaults.Key<Defaults.AnySerializable>("any", default: 7, suite: suite)
            suite[key] = "set"
            try suite.synchronize()
            #expect(try file.members()["any"] == .string("set"))
            suite[key] = nil
            #expect(suite[key] == 7)
            try suite.synchronize()
            #expect(try file.members()["any"] == nil)
            // Inside a container, nil is a value: JSON null.
            let list = Defaults.Key<[Defaults.AnySerializable]>("list", default: [], suite: suite)
            suite[list] = [nil, 1]
            try suite.synchronize()
            #expect(try file.members()["list"] == .array([.null, .number("1")]))
            #expect(file.errors.errors.isEmpty)
        }
    }

    @Test func aSingleValueSurvivesTheFile() async throws {
        var batch = SerializationBatch()
        batch.expectLossless(Defaults.AnySerializable(Int64.min), default: 0, storedAs: .number("-9223372036854775808"))
        batch.expectLossless(Defaults.AnySerializable(Date(timeIntervalSince1970: 0)), default: 0)
        try await batch.run()
    }
}

extension AnySerializableTests {
    fileprivate enum Color: String, Defaults.Serializable {
        case red
        case green
        case blue
    }

    fileprivate struct Sample: Codable, Equatable, Defaults.Serializable {
        var name: String
        var values: [Int]
    }
}
