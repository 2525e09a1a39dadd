import Foundation

// MARK: - Scalars

extension Bool: Defaults.Serializable, JSONRepresentable {
    /// Booleans are stored as JSON `true` and `false`.
    public static let bridge = Defaults.NativeBridge<Bool>()
    var jsonValue: JSONValue? { .bool(self) }
    static func make(from json: JSONValue) -> Bool? {
        guard case .bool(let value) = json else { return nil }
        return value
    }
}

extension String: Defaults.Serializable, JSONRepresentable {
    /// Strings are stored as JSON strings, non-ASCII text as UTF-8.
    public static let bridge = Defaults.NativeBridge<String>()
    var jsonValue: JSONValue? { .string(self) }
    static func make(from json: JSONValue) -> String? {
        guard case .string(let value) = json else { return nil }
        return value
    }
}

/// Integers are stored as JSON numbers written in full, so every width is exact at its extremes.
///
/// A hand-edited whole number written with a fraction or exponent (`3.0`, `1e3`) is accepted
/// when its decimal value is exactly a whole number in range; the digits are shifted exactly,
/// never rounded through `Double`.
private func integer<T: FixedWidthInteger>(from json: JSONValue) -> T? {
    guard case .number(let text) = json else { return nil }
    if let exact = T(text) { return exact }
    return wholeNumberText(text).flatMap { T($0) }
}

/// The plain integer text of a JSON number whose value is whole, or `nil`.
private func wholeNumberText(_ text: String) -> String? {
    var mantissa = Substring(text)
    var exponent = 0
    if let marker = mantissa.firstIndex(where: { $0 == "e" || $0 == "E" }) {
        guard let value = Int(mantissa[mantissa.index(after: marker)...].replacing("+", with: "")) else {
            return nil
        }
        exponent = value
        mantissa = mantissa[..<marker]
    }
    let negative = mantissa.hasPrefix("-")
    if negative { mantissa = mantissa.dropFirst() }
    let parts = mantissa.split(separator: ".", omittingEmptySubsequences: false)
    var digits = String(parts[0]) + (parts.count > 1 ? String(parts[1]) : "")
    let leadingZeros = digits.prefix { $0 == "0" }.count
    let point = parts[0].count + exponent - leadingZeros
    digits.removeFirst(leadingZeros)
    if digits.isEmpty { return "0" }
    // No integer type has more than 39 digits; anything longer is out of range anyway.
    guard point > 0, point <= 40 else { return nil }
    if digits.count > point {
        guard digits.dropFirst(point).allSatisfy({ $0 == "0" }) else { return nil }
        digits = String(digits.prefix(point))
    } else {
        digits += String(repeating: "0", count: point - digits.count)
    }
    return (negative ? "-" : "") + digits
}

/// The decimal text of `value`, as `String(value)` gives it.
///
/// Written digit by digit into a string of the exact length: for up to 15 characters that is a
/// small string, with no allocation, and it costs a fraction of the generic formatting, on every
/// write of an integer.
@inline(__always)
func decimalText<T: FixedWidthInteger>(_ value: T) -> String {
    let magnitude = UInt64(truncatingIfNeeded: value.magnitude)
    var digits = 1
    var limit: UInt64 = 10
    while digits < 20 && magnitude >= limit {
        digits += 1
        limit &*= 10
    }
    let isNegative = value < 0
    let count = digits + (isNegative ? 1 : 0)
    return String(unsafeUninitializedCapacity: count) { buffer in
        var rest = magnitude
        var index = count
        repeat {
            index -= 1
            buffer[index] = UInt8(truncatingIfNeeded: rest % 10) &+ UInt8(ascii: "0")
            rest /= 10
        } while rest != 0
        if isNegative { buffer[0] = UInt8(ascii: "-") }
        return count
    }
}

extension Int: Defaults.Serializable, JSONRepresentable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<Int>()
    var jsonValue: JSONValue? { .number(decimalText(self)) }
    static func make(from json: JSONValue) -> Int? { integer(from: json) }
}

extension Int8: Defaults.Serializable, JSONRepresentable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<Int8>()
    var jsonValue: JSONValue? { .number(decimalText(self)) }
    static func make(from json: JSONValue) -> Int8? { integer(from: json) }
}

extension Int16: Defaults.Serializable, JSONRepresentable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<Int16>()
    var jsonValue: JSONValue? { .number(decimalText(self)) }
    static func make(from json: JSONValue) -> Int16? { integer(from: json) }
}

extension Int32: Defaults.Serializable, JSONRepresentable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<Int32>()
    var jsonValue: JSONValue? { .number(decimalText(self)) }
    static func make(from json: JSONValue) -> Int32? { integer(from: json) }
}

extension Int64: Defaults.Serializable, JSONRepresentable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<Int64>()
    var jsonValue: JSONValue? { .number(decimalText(self)) }
    static func make(from json: JSONValue) -> Int64? { integer(from: json) }
}

extension UInt: Defaults.Serializable, JSONRepresentable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<UInt>()
    var jsonValue: JSONValue? { .number(decimalText(self)) }
    static func make(from json: JSONValue) -> UInt? { integer(from: json) }
}

extension UInt8: Defaults.Serializable, JSONRepresentable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<UInt8>()
    var jsonValue: JSONValue? { .number(decimalText(self)) }
    static func make(from json: JSONValue) -> UInt8? { integer(from: json) }
}

extension UInt16: Defaults.Serializable, JSONRepresentable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<UInt16>()
    var jsonValue: JSONValue? { .number(decimalText(self)) }
    static func make(from json: JSONValue) -> UInt16? { integer(from: json) }
}

extension UInt32: Defaults.Serializable, JSONRepresentable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<UInt32>()
    var jsonValue: JSONValue? { .number(decimalText(self)) }
    static func make(from json: JSONValue) -> UInt32? { integer(from: json) }
}

extension UInt64: Defaults.Serializable, JSONRepresentable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<UInt64>()
    var jsonValue: JSONValue? { .number(decimalText(self)) }
    static func make(from json: JSONValue) -> UInt64? { integer(from: json) }
}

/// Floating-point values are stored as their shortest round-tripping decimal text; NaN and the
/// infinities, which JSON numbers cannot express, as the strings `"NaN"`, `"Infinity"` and
/// `"-Infinity"` (the spelling `JSONEncoder` uses for the same purpose).
func floatingPointJSON<T: BinaryFloatingPoint & CustomStringConvertible>(_ value: T) -> JSONValue {
    if value.isNaN { return .string("NaN") }
    if value.isInfinite { return .string(value < 0 ? "-Infinity" : "Infinity") }
    return .number(value.description)
}

extension Double: Defaults.Serializable, JSONRepresentable {
    /// Stored as a JSON number; see the file format reference for NaN and the infinities.
    public static let bridge = Defaults.NativeBridge<Double>()
    var jsonValue: JSONValue? { floatingPointJSON(self) }
    static func make(from json: JSONValue) -> Double? {
        switch json {
        case .number(let text): return Double(text).flatMap { $0.isFinite ? $0 : nil }
        case .string("NaN"): return .nan
        case .string("Infinity"): return .infinity
        case .string("-Infinity"): return -.infinity
        default: return nil
        }
    }
}

extension Float: Defaults.Serializable, JSONRepresentable {
    /// Stored as a JSON number written with `Float` precision, so it reads back bit for bit.
    public static let bridge = Defaults.NativeBridge<Float>()
    var jsonValue: JSONValue? { floatingPointJSON(self) }
    static func make(from json: JSONValue) -> Float? {
        switch json {
        case .number(let text): return Float(text).flatMap { $0.isFinite ? $0 : nil }
        case .string("NaN"): return .nan
        case .string("Infinity"): return .infinity
        case .string("-Infinity"): return -.infinity
        default: return nil
        }
    }
}

extension CGFloat: Defaults.Serializable, JSONRepresentable {
    /// Stored as a JSON number, as the `Double` it holds; NaN and the infinities as `Double`'s are.
    public static let bridge = Defaults.NativeBridge<CGFloat>()
    var jsonValue: JSONValue? { floatingPointJSON(Double(self)) }
    static func make(from json: JSONValue) -> CGFloat? { Double.make(from: json).map { CGFloat($0) } }
}

// MARK: - Foundation values

extension Data: Defaults.Serializable, JSONRepresentable {
    /// Stored as a base64 string.
    public static let bridge = Defaults.NativeBridge<Data>()
    var jsonValue: JSONValue? { .string(base64EncodedString()) }
    static func make(from json: JSONValue) -> Data? {
        guard case .string(let text) = json else { return nil }
        return Data(base64Encoded: text)
    }
}

extension Date: Defaults.Serializable, JSONRepresentable {
    /// Stored as an ISO 8601 string in UTC with milliseconds when that string reads back to the
    /// same date bit for bit; otherwise as a JSON number of seconds since 2001-01-01 00:00:00 UTC
    /// (`timeIntervalSinceReferenceDate`), which is exact.
    public static let bridge = Defaults.NativeBridge<Date>()

    private static let iso8601 = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let iso8601Whole = Date.ISO8601FormatStyle()

    var jsonValue: JSONValue? {
        let seconds = timeIntervalSinceReferenceDate
        if seconds.isFinite {
            let text = formatted(Self.iso8601)
            if let back = try? Self.iso8601.parse(text),
                back.timeIntervalSinceReferenceDate.bitPattern == seconds.bitPattern
            {
                return .string(text)
            }
        }
        return seconds.jsonValue
    }

    static func make(from json: JSONValue) -> Date? {
        if case .string(let text) = json {
            if let date = try? iso8601.parse(text) { return date }
            if let date = try? iso8601Whole.parse(text) { return date }
        }
        return Double.make(from: json).map(Date.init(timeIntervalSinceReferenceDate:))
    }
}

extension URL: Defaults.Serializable, JSONRepresentable {
    /// Stored as its absolute string.
    public static let bridge = Defaults.NativeBridge<URL>()
    var jsonValue: JSONValue? { .string(absoluteString) }
    static func make(from json: JSONValue) -> URL? {
        guard case .string(let text) = json else { return nil }
        return URL(string: text)
    }
}

extension UUID: Defaults.Serializable, JSONRepresentable {
    /// Stored as its canonical uppercase string.
    public static let bridge = Defaults.NativeBridge<UUID>()
    var jsonValue: JSONValue? { .string(uuidString) }
    static func make(from json: JSONValue) -> UUID? {
        guard case .string(let text) = json else { return nil }
        return UUID(uuidString: text)
    }
}
