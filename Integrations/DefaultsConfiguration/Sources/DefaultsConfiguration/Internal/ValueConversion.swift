import Configuration
import Defaults

/// Turns a stored JSON value into a config value of the requested type, the way swift-configuration's
/// `JSONSnapshot` turns the same JSON, read from a file with Foundation's `JSONSerialization`.
///
/// `JSONSnapshot` sees a number as Foundation hands it over: an `Int` when the number is a whole
/// one that fits (`1`, `1.0`, `1e2`, and also `true` and `false`, as 1 and 0), otherwise a
/// `Double`. It then reads an `int` from a `Double` only when exact, a `double` from an `Int` only
/// when exact, and a `bool` from any number (non-zero is true). Strings are only strings; `bytes`
/// are decoded from strings. An array takes the kind of its first element, and every element must
/// be of that kind. The one difference is the unit of failure: where `JSONSnapshot` rejects the
/// whole file for one value it cannot hold, here only a lookup of that value fails.
struct ValueConversion: Sendable {
    /// A number, as Foundation's JSON parser hands it to `JSONSnapshot`.
    enum Number: Equatable {
        case int(Int)
        case double(Double)
        /// An integer written beyond `Int`'s range, as its nearest `Double`: never an `int`.
        case wideInteger(Double)
    }

    /// A stored value in the shapes `JSONSnapshot` knows.
    enum Shape {
        case string(String)
        case number(Number)
        case emptyArray
        case stringArray([String])
        case numberArray([Number])
    }

    let bytesDecoder: any ConfigBytesFromStringDecoder
    let secretsSpecifier: SecretsSpecifier<String, Defaults.JSONValue>

    /// The lookup result for a key as `type`, given the value its mapping found (`nil`: none).
    ///
    /// `encodedKey` is the key's components joined with `.`. The value is secret when it is a
    /// secret key's (`isSecretKey`) or the secrets specifier says so.
    func lookup(
        _ found: Defaults.JSONValue?,
        encodedKey: String,
        type: ConfigType,
        isSecretKey: Bool
    ) throws -> LookupResult {
        guard let found else { return LookupResult(encodedKey: encodedKey, value: nil) }
        let content = try convert(found, to: type, key: encodedKey)
        let isSecret = isSecretKey || secretsSpecifier.isSecret(key: encodedKey, value: found)
        return LookupResult(encodedKey: encodedKey, value: ConfigValue(content, isSecret: isSecret))
    }

    /// `value` as `type`.
    func convert(_ value: Defaults.JSONValue, to type: ConfigType, key: String) throws -> ConfigContent {
        func mismatch(_ found: String) -> DefaultsProviderError {
            .valueNotConvertible(key: key, type: type, found: found)
        }
        let shape = try Self.shape(of: value, key: key, type: type)
        switch (type, shape) {
        case (.string, .string(let string)):
            return .string(string)
        case (.int, .number(let number)):
            return .int(try Self.int(number) ?? { throw mismatch("a number that is not a whole Int") }())
        case (.double, .number(let number)):
            return .double(try Self.double(number) ?? { throw mismatch("an integer no Double holds exactly") }())
        case (.bool, .number(let number)):
            return .bool(Self.bool(number))
        case (.bytes, .string(let string)):
            return .bytes(try bytesDecoder.decode(string) ?? { throw mismatch("text that does not decode as bytes") }())
        case (.stringArray, .emptyArray):
            return .stringArray([])
        case (.stringArray, .stringArray(let strings)):
            return .stringArray(strings)
        case (.intArray, .emptyArray):
            return .intArray([])
        case (.intArray, .numberArray(let numbers)):
            return .intArray(
                try numbers.map {
                    try Self.int($0) ?? { throw mismatch("an array with a number that is not a whole Int") }()
                }
            )
        case (.doubleArray, .emptyArray):
            return .doubleArray([])
        case (.doubleArray, .numberArray(let numbers)):
            return .doubleArray(
                try numbers.map {
                    try Self.double($0) ?? { throw mismatch("an array with an integer no Double holds exactly") }()
                }
            )
        case (.boolArray, .emptyArray):
            return .boolArray([])
        case (.boolArray, .numberArray(let numbers)):
            return .boolArray(numbers.map(Self.bool))
        case (.byteChunkArray, .emptyArray):
            return .byteChunkArray([])
        case (.byteChunkArray, .stringArray(let strings)):
            return .byteChunkArray(
                try strings.map {
                    try bytesDecoder.decode($0)
                        ?? { throw mismatch("an array with text that does not decode as bytes") }()
                }
            )
        default:
            throw mismatch(shape.description)
        }
    }

    // MARK: - Shapes

    /// The shape `JSONSnapshot` would give `value`; throws for a value it cannot hold at all.
    static func shape(of value: Defaults.JSONValue, key: String, type: ConfigType) throws -> Shape {
        func unsupported(_ found: String) -> DefaultsProviderError {
            .unsupportedValue(key: key, type: type, found: found)
        }
        switch value {
        case .string(let string):
            return .string(string)
        case .bool(let bool):
            // Foundation hands a JSON boolean over as a number, which reads as an Int first.
            return .number(.int(bool ? 1 : 0))
        case .number(let text):
            return .number(try number(text) ?? { throw unsupported("a number out of range") }())
        case .array(let elements):
            guard let first = elements.first else { return .emptyArray }
            switch first {
            case .string:
                return .stringArray(
                    try elements.map { element in
                        guard case .string(let string) = element else { throw unsupported("an array of mixed values") }
                        return string
                    }
                )
            case .number, .bool:
                return .numberArray(
                    try elements.map { element in
                        switch element {
                        case .bool(let bool):
                            return .int(bool ? 1 : 0)
                        case .number(let text):
                            return try number(text) ?? { throw unsupported("an array with a number out of range") }()
                        default:
                            throw unsupported("an array of mixed values")
                        }
                    }
                )
            case .null, .array, .object:
                throw unsupported("an array of nulls, arrays or objects")
            }
        case .null, .object:
            // The mapping never hands these over: they are "no value".
            throw unsupported("null or an object")
        }
    }

    /// The number written as `text`, as Foundation's JSON parser and its bridging to `Int` and
    /// `Double` make it; `nil` where that parser fails (a number beyond `Double`'s range, or an
    /// integer above `Int.max` that no `Double` holds exactly).
    static func number(_ text: String) -> Number? {
        let isInteger = !text.utf8.contains {
            $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E")
        }
        if isInteger {
            if let int = Int(text) { return .int(int) }
            // Foundation keeps an integer up to UInt64.max as one, which bridges to Double only
            // when exact; a larger one as a decimal, which bridges to the nearest Double.
            if let unsigned = UInt64(text) { return Double(exactly: unsigned).map(Number.double) }
            // Below Int.min, Foundation's decimal bridges to a wrong Int (one off); this reads
            // no Int at all from a number that has none.
            guard let double = Double(text), double.isFinite else { return nil }
            return .wideInteger(double)
        }
        guard let double = Double(text), double.isFinite else { return nil }
        if let int = Int(exactly: double) { return .int(int) }
        return .double(double)
    }

    static func int(_ number: Number) -> Int? {
        switch number {
        case .int(let int): return int
        case .double(let double): return Int(exactly: double)
        case .wideInteger: return nil
        }
    }

    static func double(_ number: Number) -> Double? {
        switch number {
        case .int(let int): return Double(exactly: int)
        case .double(let double), .wideInteger(let double): return double
        }
    }

    static func bool(_ number: Number) -> Bool {
        switch number {
        case .int(let int): return int != 0
        case .double(let double), .wideInteger(let double): return double != 0
        }
    }
}

extension ValueConversion.Shape: CustomStringConvertible {
    var description: String {
        switch self {
        case .string: return "a string"
        case .number: return "a number"
        case .emptyArray: return "an empty array"
        case .stringArray: return "an array of strings"
        case .numberArray: return "an array of numbers"
        }
    }
}
