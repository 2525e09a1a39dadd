import Defaults
import Foundation
import Testing

@Suite struct SerializationCustomTypeTests {
    private static let window = Window(
        title: "Main — 主窗口 \u{0}\"",
        origin: [0.1, -0.0, .greatestFiniteMagnitude],
        zoom: .nan,
        largest: .max,
        smallest: .min,
        tags: ["pinned": 1, "": 0],
        subtitle: nil,
        opened: Date(timeIntervalSinceReferenceDate: 123.456)
    )

    @Test func rawRepresentableEnumsAreStoredAsTheirRawValue() async throws {
        var batch = SerializationBatch()
        batch.expectLossless(Theme.dark, default: .light, storedAs: .string("dark"))
        batch.expectLossless(Theme.highContrast, default: .light, storedAs: .string("high contrast ✓"))
        batch.expectLossless(Level.low, default: .medium, storedAs: .number("-1"))
        batch.expectLossless(Level.high, default: .medium, storedAs: .number("1000"))
        batch.expectLossless([Theme.dark, .light], default: [], storedAs: .array([.string("dark"), .string("light")]))
        batch.expectLossless(["now": Level.high], default: [:], storedAs: .object(["now": .number("1000")]))
        try await batch.run()
    }

    @Test func aStoredRawValueWithNoMatchingCaseReadsAsTheDefault() throws {
        try withSerializationFile { file in
            try Data(#"{ "level" : 7, "theme" : "sepia" }"#.utf8).write(to: file.url)
            let suite = file.makeSuite()
            #expect(suite[Defaults.Key<Level>("level", default: .medium, suite: suite)] == .medium)
            #expect(suite[Defaults.Key<Theme>("theme", default: .light, suite: suite)] == .light)
            #expect(suite[Defaults.Key<Int>("level", default: 0, suite: suite)] == 7)
        }
    }

    @Test func aCodableStructIsStoredAsANestedJSONObject() throws {
        let result = try serializationRoundTrip(Self.window, default: Self.window.withTitle("default"))
        #expect(result.errors.isEmpty)
        guard case .object(let members) = result.stored else {
            Issue.record("not stored as a JSON object: \(String(describing: result.stored))")
            return
        }
        #expect(members["title"] == .string("Main — 主窗口 \u{0}\""))
        #expect(members["largest"] == .number("18446744073709551615"))
        #expect(members["smallest"] == .number("-9223372036854775808"))
        #expect(members["zoom"] == .string("NaN"))
        #expect(members["tags"] == .object(["pinned": .number("1"), "": .number("0")]))
        #expect(result.text.contains(#""title" : "Main — 主窗口 \u0000\"""#))

        for window in [result.writerValue, result.value] {
            #expect(window.title == Self.window.title)
            #expect(window.origin.map(\.bitPattern) == Self.window.origin.map(\.bitPattern))
            #expect(window.zoom.isNaN)
            #expect(window.largest == .max)
            #expect(window.smallest == .min)
            #expect(window.tags == Self.window.tags)
            #expect(window.subtitle == nil)
            #expect(window.opened == Self.window.opened)
        }
    }

    @Test func codableValuesSurviveInsideCollections() async throws {
        let first = Self.window.withTitle("first").withZoom(1)
        let second = Self.window.withTitle("second").withZoom(2)
        var batch = SerializationBatch()
        batch.expectLossless([first, second], default: [])
        batch.expectLossless(Set([first, second]), default: [])
        batch.expectLossless(["a": first], default: [:])
        batch.expectLossless(Optional(first), default: nil)
        try await batch.run()
    }

    @Test func aCodableRawRepresentableTypeIsStoredThroughCodableByDefault() throws {
        let result = try serializationRoundTrip(Mode.careful, default: .fast)
        #expect(result.stored == .object(["mode": .string("careful")]))
        #expect(result.value == .careful)
        #expect(result.errors.isEmpty)
    }

    @Test func preferRawRepresentableStoresTheRawValueInstead() throws {
        let result = try serializationRoundTrip(RawMode.careful, default: .fast)
        #expect(result.stored == .string("careful"))
        #expect(result.value == .careful)
        #expect(result.errors.isEmpty)
    }

    @Test func aCustomCollectionIsStoredAsAnArrayOfItsElements() throws {
        var bag = Bag(["Hello", "World!"])
        bag.insert(element: "Ünïcode", at: 1)
        let result = try serializationRoundTrip(bag, default: Bag(["default"]))
        #expect(result.stored == .array([.string("Hello"), .string("Ünïcode"), .string("World!")]))
        #expect(Array(result.value) == ["Hello", "Ünïcode", "World!"])
        #expect(result.value[0] == "Hello")

        let empty = try serializationRoundTrip(Bag<Int>([]), default: Bag([1, 2]))
        #expect(empty.value.isEmpty)

        let nested = try serializationRoundTrip([Bag([Level.low]), Bag([])], default: [])
        #expect(nested.value == [Bag([Level.low]), Bag([])])
        #expect(nested.stored == .array([.array([.number("-1")]), .array([])]))
    }

    @Test func aCustomSetIsStoredAsAnArrayOfItsElements() throws {
        let set = SetBag(["Hello", "World!", "🌍"])
        let result = try serializationRoundTrip(set, default: SetBag(["default"]))
        #expect(result.value == set)
        #expect(result.value.contains("🌍"))
        guard case .array(let stored) = result.stored else {
            Issue.record("not stored as an array: \(String(describing: result.stored))")
            return
        }
        #expect(Set(stored) == [.string("Hello"), .string("World!"), .string("🌍")])

        let empty = try serializationRoundTrip(SetBag<Int>(), default: SetBag([1]))
        #expect(empty.value.isEmpty)
    }
}

extension SerializationCustomTypeTests.Window {
    fileprivate func withTitle(_ title: String) -> Self {
        var copy = self
        copy.title = title
        return copy
    }

    fileprivate func withZoom(_ zoom: Double) -> Self {
        var copy = self
        copy.zoom = zoom
        return copy
    }
}

extension SerializationCustomTypeTests {
    fileprivate enum Theme: String, Defaults.Serializable {
        case light
        case dark
        case highContrast = "high contrast ✓"
    }

    fileprivate enum Level: Int, Defaults.Serializable {
        case low = -1
        case medium = 0
        case high = 1_000
    }

    fileprivate struct Window: Codable, Hashable, Defaults.Serializable {
        var title: String
        var origin: [Double]
        var zoom: Double
        var largest: UInt64
        var smallest: Int64
        var tags: [String: Int]
        var subtitle: String?
        var opened: Date
    }

    /// Both `Codable` and `RawRepresentable`, with a `Codable` form that differs from the raw value.
    fileprivate enum Mode: String, Codable, Defaults.Serializable {
        case fast
        case careful

        private enum CodingKeys: String, CodingKey {
            case mode
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let raw = try container.decode(String.self, forKey: .mode)
            guard let mode = Mode(rawValue: raw) else {
                throw DecodingError.dataCorruptedError(forKey: .mode, in: container, debugDescription: raw)
            }
            self = mode
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(rawValue, forKey: .mode)
        }
    }

    /// `Mode`, but stored by its raw value.
    fileprivate enum RawMode: String, Codable, Defaults.Serializable, Defaults.PreferRawRepresentable {
        case fast
        case careful

        private enum CodingKeys: String, CodingKey {
            case mode
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let raw = try container.decode(String.self, forKey: .mode)
            guard let mode = RawMode(rawValue: raw) else {
                throw DecodingError.dataCorruptedError(forKey: .mode, in: container, debugDescription: raw)
            }
            self = mode
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(rawValue, forKey: .mode)
        }
    }

    /// The custom collection of sindresorhus/Defaults' README.
    fileprivate struct Bag<Element: Defaults.Serializable & Equatable>: Collection, Equatable, Sendable {
        var items: [Element]

        var startIndex: Int { items.startIndex }
        var endIndex: Int { items.endIndex }

        mutating func insert(element: Element, at position: Int) {
            items.insert(element, at: position)
        }

        func index(after index: Int) -> Int {
            items.index(after: index)
        }

        subscript(position: Int) -> Element {
            items[position]
        }
    }

    /// The custom set of sindresorhus/Defaults' README.
    fileprivate struct SetBag<Element: Defaults.Serializable & Hashable>: SetAlgebra, Sendable {
        var store = Set<Element>()

        init() {}

        init(_ store: Set<Element>) {
            self.store = store
        }

        func contains(_ member: Element) -> Bool {
            store.contains(member)
        }

        func union(_ other: SetBag) -> SetBag {
            SetBag(store.union(other.store))
        }

        func intersection(_ other: SetBag) -> SetBag {
            SetBag(store.intersection(other.store))
        }

        func symmetricDifference(_ other: SetBag) -> SetBag {
            SetBag(store.symmetricDifference(other.store))
        }

        @discardableResult
        mutating func insert(_ newMember: Element) -> (inserted: Bool, memberAfterInsert: Element) {
            store.insert(newMember)
        }

        mutating func remove(_ member: Element) -> Element? {
            store.remove(member)
        }

        mutating func update(with newMember: Element) -> Element? {
            store.update(with: newMember)
        }

        mutating func formUnion(_ other: SetBag) {
            store.formUnion(other.store)
        }

        mutating func formSymmetricDifference(_ other: SetBag) {
            store.formSymmetricDifference(other.store)
        }

        mutating func formIntersection(_ other: SetBag) {
            store.formIntersection(other.store)
        }
    }
}

extension SerializationCustomTypeTests.Bag: Defaults.CollectionSerializable {
    init(_ elements: [Element]) {
        self.items = elements
    }
}

extension SerializationCustomTypeTests.SetBag: Defaults.SetAlgebraSerializable {
    func toArray() -> [Element] {
        Array(store)
    }
}
