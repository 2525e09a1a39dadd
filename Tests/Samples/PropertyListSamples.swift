// Values of every serializable type, alone and nested two levels deep, each with the property-list
// value sindresorhus/Defaults stores for it on Apple platforms: for the tests of a suite over a
// `UserDefaults` and the helper process that reads the same `UserDefaults` file back.
import Defaults
import Foundation

/// The values written to a `UserDefaults` through a suite, and what a plain `UserDefaults` reader
/// must find for each.
package enum PropertyListSamples {
    /// A `Codable` struct with a boolean, a date, bytes and a URL inside.
    package struct Window: Codable, Hashable, Defaults.Serializable {
        var width: Double
        var isVisible: Bool
        var opened: Date
        var icon: Data
        var home: URL
    }

    /// An enum stored by its `String` raw value.
    package enum Theme: String, Defaults.Serializable {
        case light, dark
    }

    /// An enum stored by its `Int` raw value.
    package enum Level: Int, Defaults.Serializable {
        case low = 1
        case high = 9
    }

    /// An enum with a raw value that is also `Codable`: stored through `Codable`, as JSON text.
    package enum Mode: String, Codable, Defaults.Serializable {
        case fast, safe
    }

    /// A `Codable` enum with a raw value that prefers it: stored by its raw value.
    package enum Edge: String, Codable, Defaults.Serializable, Defaults.PreferRawRepresentable {
        case top, bottom
    }

    /// One key, its value, and what a `UserDefaults` holds for it.
    package struct Sample: Sendable {
        /// The key's name.
        package let name: String
        /// The value written, described to the bit.
        package let expected: String
        /// The property-list value sindresorhus/Defaults stores, described as ``describe(propertyList:)``
        /// describes what `UserDefaults.object(forKey:)` returns.
        package let expectedPropertyList: String
        /// What another process reads, described, when that differs from ``expected``: a `Float`
        /// in an `AnySerializable` comes back from the file as the `Double` of the same value.
        package var expectedInAnotherProcess: String? = nil
        /// Writes the value through a key of `suite`.
        package let write: @Sendable (Defaults.Suite) -> Void
        /// The key's value read through `suite`, described to the bit.
        package let read: @Sendable (Defaults.Suite) -> String
    }

    /// A date with whole seconds: Foundation on Linux writes a `UserDefaults` file's dates to the
    /// second, so another process reads only those back exactly.
    package static let date = Date(timeIntervalSinceReferenceDate: 785_500_000)

    /// Every sample, made anew for each use (see `LaunchOverrideSamples.all` for why not stored):
    /// each type alone, as an optional, in an array, a set and a dictionary, in each of those
    /// nested in an array or a dictionary, and wrapped in an `AnySerializable`.
    package static var all: [Sample] {
        let data = Data((0...255).map { UInt8($0) })
        let url = URL(string: "https://example.com/a%20b?q=1#frag")!
        let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let window = Window(width: 1280.5, isVisible: true, opened: date, icon: Data([1, 2]), home: url)
        let later = date.addingTimeInterval(60)
        return [
            // Stored as themselves.
            hashable("bool", true, stored: true), hashable("bool.false", false, stored: false),
            hashable("int", Int.min, stored: Int.min),
            hashable("int8", Int8.min, stored: Int8.min), hashable("int16", Int16.max, stored: Int16.max),
            hashable("int32", Int32.min, stored: Int32.min), hashable("int64", Int64.min, stored: Int64.min),
            hashable("uint", UInt.max, stored: UInt.max), hashable("uint8", UInt8.max, stored: UInt8.max),
            hashable("uint16", UInt16.max, stored: UInt16.max), hashable("uint32", UInt32.max, stored: UInt32.max),
            hashable("uint64", UInt64.max, stored: UInt64.max),
            hashable("double", Double.pi, stored: Double.pi), hashable("double.whole", 3.0, stored: 3.0),
            nested("double.nan", Double.nan, stored: Double.nan),
            hashable("double.infinity", -Double.infinity, stored: -Double.infinity),
            hashable("double.subnormal", Double.leastNonzeroMagnitude, stored: Double.leastNonzeroMagnitude),
            hashable("float", 0.1 as Float, stored: 0.1 as Float, inAnyElsewhere: Double(0.1 as Float)),
            nested("float.nan", Float.nan, stored: Float.nan),
            hashable("cgfloat", 2.5 as CGFloat, stored: 2.5 as Double),
            hashable("string", "ünïcødé 🎉\n\"quoted\"", stored: "ünïcødé 🎉\n\"quoted\""),
            hashable("date", date, stored: date),
            hashable("data", data, stored: data),
            // Through their bridges, as sindresorhus/Defaults stores them: a URL through its Codable
            // encoding (its URLBridge), so as JSON text; a UUID as its string; ranges as two bounds.
            hashable("url", url, stored: jsonText(url), inAny: url.absoluteString),
            hashable("uuid", uuid, stored: uuid.uuidString),
            hashable("range", 1..<5, stored: [1, 5]),
            hashable("closedRange", 0.5...2.5, stored: [0.5, 2.5]),
            hashable("range.dates", date...later, stored: [date, later]),
            hashable("enum.string", Theme.dark, stored: "dark"),
            hashable("enum.int", Level.high, stored: 9),
            hashable("enum.codable", Mode.safe, stored: jsonText(Mode.safe), inAny: "safe"),
            hashable("enum.preferRaw", Edge.bottom, stored: "bottom"),
            hashable("codable", window, stored: jsonText(window), inAny: jsonObject(window)),
            hashable("any", Defaults.AnySerializable(date), stored: date),
            [
                sample(
                    "mixed.dictionary",
                    ["flag": true, "when": Defaults.AnySerializable(date), "icon": Defaults.AnySerializable(data)]
                        as [String: Defaults.AnySerializable],
                    stored: ["flag": true, "when": date, "icon": data] as [String: Any]
                ),
                sample(
                    "mixed.array",
                    [true, 3, "x", Defaults.AnySerializable([date])] as [Defaults.AnySerializable],
                    stored: [true, 3, "x", [date]] as [Any]
                ),
            ],
        ]
        .flatMap { $0 }
    }

    /// `value` alone and nested two levels deep in every container, with what each stores.
    ///
    /// `inAny` is what an `AnySerializable` stores instead, when that differs: a `Codable` value
    /// or a URL as its JSON itself, not as JSON text (see the migration article).
    private static func nested<Value: Defaults.Serializable>(
        _ name: String,
        _ value: Value,
        stored: Any,
        inAny: Any? = nil,
        inAnyElsewhere: (any Defaults.Serializable)? = nil
    ) -> [Sample] {
        let inAny = inAny ?? stored
        let samples = [
            sample(name, value, stored: stored),
            sample("\(name).optional", Value?.some(value), stored: stored),
            sample("\(name).any", Defaults.AnySerializable(value), stored: inAny),
            sample("\(name).array", [value], stored: [stored]),
            sample("\(name).dictionary", ["k": value], stored: ["k": stored]),
            sample("\(name).array.array", [[value], []], stored: [[stored], [] as [Any]]),
            sample("\(name).array.dictionary", [["k": value]], stored: [["k": stored]]),
            sample("\(name).dictionary.array", ["k": [value, value]], stored: ["k": [stored, stored]]),
            sample("\(name).dictionary.dictionary", ["a": ["b": value]], stored: ["a": ["b": stored]]),
            sample("\(name).array.optional", [Value?.some(value)], stored: [stored]),
            sample("\(name).array.any", [Defaults.AnySerializable(value)], stored: [inAny]),
            sample("\(name).dictionary.any", ["k": Defaults.AnySerializable(value)], stored: ["k": inAny]),
            sample("\(name).any.array", Defaults.AnySerializable([value]), stored: [inAny]),
        ]
        guard let inAnyElsewhere else { return samples }
        let elsewhere = Defaults.AnySerializable(inAnyElsewhere)
        let readElsewhere = [
            "\(name).any": describe(elsewhere),
            "\(name).array.any": describe([elsewhere]),
            "\(name).dictionary.any": describe(["k": elsewhere]),
            "\(name).any.array": describe(Defaults.AnySerializable([elsewhere])),
        ]
        return samples.map { sample in
            var sample = sample
            sample.expectedInAnotherProcess = readElsewhere[sample.name]
            return sample
        }
    }

    /// ``nested(_:_:stored:)``, and in a set (alone and in an array and a dictionary), which stores
    /// an array.
    private static func hashable<Value: Defaults.Serializable & Hashable>(
        _ name: String,
        _ value: Value,
        stored: Any,
        inAny: Any? = nil,
        inAnyElsewhere: (any Defaults.Serializable)? = nil
    ) -> [Sample] {
        nested(name, value, stored: stored, inAny: inAny, inAnyElsewhere: inAnyElsewhere) + [
            sample("\(name).set", Set([value]), stored: [stored]),
            sample("\(name).array.set", [Set([value])], stored: [[stored]]),
            sample("\(name).dictionary.set", ["k": Set([value])], stored: ["k": [stored]]),
        ]
    }

    /// A `Codable` value's JSON as property-list values.
    package static func jsonObject(_ value: some Encodable) -> Any {
        try! JSONSerialization.jsonObject(with: Data(jsonText(value).utf8), options: .fragmentsAllowed)
    }

    /// What sindresorhus/Defaults stores for a `Codable` value: the text `JSONEncoder` makes, keys sorted.
    package static func jsonText(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try! encoder.encode(value), as: UTF8.self)
    }

    private static func sample<Value: Defaults.Serializable>(
        _ name: String,
        _ value: Value,
        stored: Any?
    ) -> Sample {
        let expectedPropertyList = describe(propertyList: stored)
        return Sample(
            name: name,
            expected: describe(value),
            expectedPropertyList: expectedPropertyList,
            write: { suite in suite[Defaults.Key<Value>(name, default: value, suite: suite)] = value },
            read: { suite in
                // NB: a default that cannot be the value: a value that was not stored shows.
                let key = Defaults.Key<Value?>(name, suite: suite)
                return suite[key].map { describe($0) } ?? "nothing stored"
            }
        )
    }

    /// A value described so that two descriptions are equal only for equal values: floating-point
    /// numbers and dates by their bits (see `LaunchOverrideSamples.describe`), a set's elements and
    /// a dictionary's members in sorted order.
    package static func describe(_ value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .optional:
            return mirror.children.first.map { "Optional(\(describe($0.value)))" } ?? "nil"
        case .collection:
            return "[" + mirror.children.map { describe($0.value) }.joined(separator: ", ") + "]"
        case .set:
            return "Set([" + mirror.children.map { describe($0.value) }.sorted().joined(separator: ", ") + "])"
        case .dictionary:
            let members = mirror.children.map { member -> String in
                let pair = Array(Mirror(reflecting: member.value).children)
                return "\(describe(pair[0].value)): \(describe(pair[1].value))"
            }
            return "[" + members.sorted().joined(separator: ", ") + "]"
        default:
            return LaunchOverrideSamples.describe(value)
        }
    }

    /// A property-list value described so that two descriptions are equal only for the same types
    /// and values: whole numbers as integers whatever their width, other numbers as the bits of
    /// their `Double`, a string holding JSON as that JSON.
    package static func describe(propertyList object: Any?) -> String {
        guard let object = unwrapped(object) else { return "nil" }
        if type(of: object) == Bool.self { return "Bool(\(object))" }
        switch object {
        case let text as String:
            // NB: JSON text (an object, an array or a quoted string) is described as what it holds,
            // so that `\/` and `/`, or a different member order, make no difference.
            if let first = text.first, "{[\"".contains(first),
                let parsed = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
            {
                return "JSONText(\(describe(propertyList: parsed)))"
            }
            return "String(\(String(reflecting: text)))"
        case let data as Data:
            return "Data(\(data.base64EncodedString()))"
        case let date as Date:
            return "Date(\(date.timeIntervalSinceReferenceDate))"
        case let array as [Any]:
            return "[" + array.map { describe(propertyList: $0) }.joined(separator: ", ") + "]"
        case let dictionary as [String: Any]:
            let members = dictionary.sorted { $0.key < $1.key }.map { "\($0.key): \(describe(propertyList: $0.value))" }
            return "{" + members.joined(separator: ", ") + "}"
        case let number as NSNumber:
            if ObjectIdentifier(type(of: number)) == ObjectIdentifier(type(of: NSNumber(value: true))) {
                return "Bool(\(number.boolValue))"
            }
            switch String(cString: number.objCType) {
            case "f", "d":
                let double = number.doubleValue
                if double.isNaN { return "Real(nan)" }
                return "Real(\(double))"
            case "Q", "L", "I", "S", "C": return "Integer(\(number.uint64Value))"
            default: return "Integer(\(number.int64Value))"
            }
        default:
            return "unexpected \(type(of: object)): \(object)"
        }
    }

    private static func unwrapped(_ object: Any?) -> Any? {
        guard let object else { return nil }
        let mirror = Mirror(reflecting: object)
        guard mirror.displayStyle == .optional else { return object }
        return unwrapped(mirror.children.first?.value)
    }
}
