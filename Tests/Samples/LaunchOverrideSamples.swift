// Values of every kind a key can hold, for the tests of `Defaults.LaunchOverrides` and the helper
// process that reads them back: both sides describe a value the same way, to the bit.
import Defaults
import Foundation

/// The values a child process is started with, each under a key of its own.
package enum LaunchOverrideSamples {
    /// A `Codable` struct, stored as nested JSON.
    package struct Window: Codable, Equatable, Defaults.Serializable {
        var width: Double
        var title: String
        var tags: [String]
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

    /// One key and its value: puts the value into overrides, reads the key in a suite, and
    /// describes both the same way.
    package struct Sample: Sendable {
        /// The key's name.
        package let name: String
        /// The value put in, described.
        package let expected: String
        /// Sets the key to the value in `overrides`.
        package let put: @Sendable (inout Defaults.LaunchOverrides) -> Void
        /// The key's value read in `suite`, described.
        package let read: @Sendable (Defaults.Suite) -> String
    }

    /// The stored value the file holds for `optional.nil`, which the override removes for the run.
    package static let storedForOptionalNil = "stored"

    /// Every sample, made anew for each use.
    ///
    /// NB: not a stored global: LeakSanitizer reported the `Data` held there until exit as leaked
    /// (most likely it does not see the tagged reference a `Data` keeps to its storage).
    package static var all: [Sample] {
        [
            sample("int.max", Int.max, default: 0), sample("int.min", Int.min, default: 0),
            sample("int8.min", Int8.min, default: 0), sample("int16.max", Int16.max, default: 0),
            sample("int32.min", Int32.min, default: 0), sample("int64.min", Int64.min, default: 0),
            sample("uint.max", UInt.max, default: 0), sample("uint8.max", UInt8.max, default: 0),
            sample("uint16.max", UInt16.max, default: 0), sample("uint32.max", UInt32.max, default: 0),
            sample("uint64.max", UInt64.max, default: 0),
            sample("double.pi", Double.pi, default: 0), sample("double.negativeZero", -0.0 as Double, default: 1),
            sample("double.nan", Double.nan, default: 0), sample("double.infinity", Double.infinity, default: 0),
            sample("double.negativeInfinity", -Double.infinity, default: 0),
            sample("double.subnormal", Double.leastNonzeroMagnitude, default: 0),
            sample("double.max", Double.greatestFiniteMagnitude, default: 0),
            sample("float.tenth", 0.1 as Float, default: 0), sample("float.nan", Float.nan, default: 0),
            sample("float.negativeInfinity", -Float.infinity, default: 0),
            sample("float.subnormal", Float.leastNonzeroMagnitude, default: 0),
            sample("date.fraction", Date(timeIntervalSinceReferenceDate: 785_500_000.123_456_789), default: Date()),
            sample("date.milliseconds", Date(timeIntervalSinceReferenceDate: 785_500_000.25), default: Date()),
            sample("data", Data((0...255).map { UInt8($0) }), default: Data()),
            sample("url", URL(string: "https://example.com/a%20b?q=1&r=-2#frag")!, default: URL(string: "x:")!),
            sample("url.file", URL(fileURLWithPath: "/tmp/a b.txt"), default: URL(string: "x:")!),
            sample("string.dash", "-starts with a dash", default: ""), sample("string.number", "42", default: ""),
            sample("string.null", "null", default: ""), sample("string.quoted", #"say "hi" \ back"#, default: "x"),
            sample("string.empty", "", default: "x"), sample("string.unicode", "ünïcødé 🎉\nline", default: ""),
            sample("bool.true", true, default: false), sample("bool.false", false, default: true),
            sample("optional.nil", String?.none, default: nil), sample("optional.int", Int?.some(5), default: nil),
            sample("array", [1, -2, Int.max], default: []), sample("array.strings", ["-a", "b c", ""], default: []),
            sample("dictionary", ["a": 0.5], default: [:]), sample("dictionary.nested", ["k": [1, 2]], default: [:]),
            sample(
                "codable",
                Window(width: 1280.5, title: #"Main "window""#, tags: ["a", "-b"]),
                default: Window(width: 0, title: "", tags: [])
            ),
            sample("enum.string", Theme.dark, default: .light), sample("enum.int", Level.high, default: .low),
            sample("uuid", UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!, default: UUID()),
        ]
    }

    private static func sample<Value: Defaults.Serializable>(
        _ name: String,
        _ value: Value,
        default defaultValue: Value
    ) -> Sample {
        let key = Defaults.Key<Value>(name, default: defaultValue, suite: .standard)
        return Sample(
            name: name,
            expected: describe(value),
            put: { $0.set(key, to: value) },
            read: { suite in describe(suite[Defaults.Key<Value>(name, default: defaultValue, suite: suite)]) }
        )
    }

    /// A value described so that two descriptions are equal only for equal values: floating-point
    /// numbers and dates by their bits.
    package static func describe(_ value: Any) -> String {
        switch value {
        case let value as Double: "Double(0x\(String(value.bitPattern, radix: 16)))"
        case let value as Float: "Float(0x\(String(value.bitPattern, radix: 16)))"
        case let value as Date: "Date(0x\(String(value.timeIntervalSinceReferenceDate.bitPattern, radix: 16)))"
        case let value as Data: "Data(\(value.base64EncodedString()))"
        case let value as URL: "URL(\(value.absoluteString))"
        default: String(reflecting: value)
        }
    }
}
