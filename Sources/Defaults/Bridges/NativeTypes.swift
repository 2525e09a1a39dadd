import Foundation

/// The built-in types whose stored form reads back as exactly the same value: a written value
/// can stand in for the decoded one.
protocol LosslessStorable {}

extension Bool: LosslessStorable {}
extension String: LosslessStorable {}
extension Int: LosslessStorable {}
extension Int8: LosslessStorable {}
extension Int16: LosslessStorable {}
extension Int32: LosslessStorable {}
extension Int64: LosslessStorable {}
extension UInt: LosslessStorable {}
extension UInt8: LosslessStorable {}
extension UInt16: LosslessStorable {}
extension UInt32: LosslessStorable {}
extension UInt64: LosslessStorable {}
extension Double: LosslessStorable {}
extension Float: LosslessStorable {}
extension Data: LosslessStorable {}
extension Date: LosslessStorable {}
extension CGFloat: LosslessStorable {}

// MARK: - Natively supported in a UserDefaults, as in sindresorhus/Defaults

extension Bool {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension String {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Int {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Int8 {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Int16 {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Int32 {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Int64 {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension UInt {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension UInt8 {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension UInt16 {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension UInt32 {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension UInt64 {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Float {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Double {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension CGFloat {
    /// `true`: a `UserDefaults` holds it as a `Double`, as Apple's does.
    public static var isNativelySupportedType: Bool { true }
}

extension Date {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Data {
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Optional where Wrapped: Defaults.Serializable {
    /// Whether the wrapped type is natively supported.
    public static var isNativelySupportedType: Bool { Wrapped.isNativelySupportedType }
}

extension Array where Element: Defaults.Serializable {
    /// Whether the element type is natively supported.
    public static var isNativelySupportedType: Bool { Element.isNativelySupportedType }
}

extension Dictionary where Key: LosslessStringConvertible, Value: Defaults.Serializable {
    /// Whether the keys are `String`s and the value type is natively supported.
    public static var isNativelySupportedType: Bool { Key.self == String.self && Value.isNativelySupportedType }
}

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
    // NB: no integer type has more than 39 digits; anything longer is out of range anyway.
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
package func decimalText<T: FixedWidthInteger>(_ value: T) -> String {
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

// MARK: - Containers

extension Optional: Defaults.Serializable, JSONRepresentable where Wrapped: Defaults.Serializable {
    /// An empty optional is "nothing stored"; inside a container it is JSON `null`.
    public static var bridge: Defaults.NativeBridge<Wrapped?> { .init() }
    var jsonValue: JSONValue? { self.flatMap { ValueCoding.encode($0) } }
    static func make(from json: JSONValue) -> Wrapped?? {
        if case .null = json { return .some(nil) }
        guard let wrapped = ValueCoding.decode(json, as: Wrapped.self) else { return nil }
        return .some(wrapped)
    }
}

extension Array: Defaults.Serializable, JSONRepresentable where Element: Defaults.Serializable {
    /// Stored as a JSON array.
    public static var bridge: Defaults.NativeBridge<[Element]> { .init() }
    var jsonValue: JSONValue? {
        var elements: [JSONValue] = []
        elements.reserveCapacity(count)
        for element in self {
            guard let json = ValueCoding.encodeElement(element) else { return nil }
            elements.append(json)
        }
        return .array(elements)
    }
    static func make(from json: JSONValue) -> [Element]? {
        guard case .array(let elements) = json else { return nil }
        var result: [Element] = []
        result.reserveCapacity(elements.count)
        for element in elements {
            guard let value = ValueCoding.decode(element, as: Element.self) else { return nil }
            result.append(value)
        }
        return result
    }
}

extension Set: Defaults.Serializable, JSONRepresentable where Element: Defaults.Serializable {
    /// Stored as a JSON array in a stable order, so writing an equal set is not a change.
    public static var bridge: Defaults.NativeBridge<Set<Element>> { .init() }
    var jsonValue: JSONValue? {
        guard case .array(let elements)? = Array(self).jsonValue else { return nil }
        return .array(stableOrder(elements))
    }
    static func make(from json: JSONValue) -> Set<Element>? {
        [Element].make(from: json).map(Set.init)
    }
}

/// Sorts stored elements by their compact JSON text: the same set always writes the same array.
func stableOrder(_ values: [JSONValue]) -> [JSONValue] {
    values.map { (JSONWriter.compactBytes($0), $0) }
        .sorted { $0.0.lexicographicallyPrecedes($1.0) }
        .map(\.1)
}

extension Dictionary: Defaults.Serializable, JSONRepresentable
where Key: LosslessStringConvertible, Value: Defaults.Serializable {
    /// Stored as a JSON object whose member names are the keys' `description`.
    public static var bridge: Defaults.NativeBridge<[Key: Value]> { .init() }
    var jsonValue: JSONValue? {
        var members: [String: JSONValue] = [:]
        members.reserveCapacity(count)
        for (key, value) in self {
            guard let json = ValueCoding.encodeElement(value) else { return nil }
            members[key.description] = json
        }
        return .object(members)
    }
    static func make(from json: JSONValue) -> [Key: Value]? {
        guard case .object(let members) = json else { return nil }
        var result: [Key: Value] = [:]
        result.reserveCapacity(members.count)
        for (name, stored) in members {
            guard let key = Key(name), let value = ValueCoding.decode(stored, as: Value.self) else { return nil }
            result[key] = value
        }
        return result
    }
}

extension Range: Defaults.Serializable, JSONRepresentable where Bound: Defaults.Serializable {
    /// Stored as a two-element array `[lowerBound, upperBound]`.
    public static var bridge: Defaults.NativeBridge<Range<Bound>> { .init() }
    var jsonValue: JSONValue? { boundsJSON(lowerBound, upperBound) }
    static func make(from json: JSONValue) -> Range<Bound>? {
        guard let (lower, upper) = bounds(from: json, as: Bound.self), lower <= upper else { return nil }
        return lower..<upper
    }
}

extension ClosedRange: Defaults.Serializable, JSONRepresentable where Bound: Defaults.Serializable {
    /// Stored as a two-element array `[lowerBound, upperBound]`.
    public static var bridge: Defaults.NativeBridge<ClosedRange<Bound>> { .init() }
    var jsonValue: JSONValue? { boundsJSON(lowerBound, upperBound) }
    static func make(from json: JSONValue) -> ClosedRange<Bound>? {
        guard let (lower, upper) = bounds(from: json, as: Bound.self), lower <= upper else { return nil }
        return lower...upper
    }
}

private func boundsJSON<Bound: Defaults.Serializable>(_ lower: Bound, _ upper: Bound) -> JSONValue? {
    guard let lower = ValueCoding.encode(lower), let upper = ValueCoding.encode(upper) else { return nil }
    return .array([lower, upper])
}

private func bounds<Bound: Defaults.Serializable>(from json: JSONValue, as type: Bound.Type) -> (Bound, Bound)? {
    guard case .array(let pair) = json, pair.count == 2,
        let lower = ValueCoding.decode(pair[0], as: Bound.self),
        let upper = ValueCoding.decode(pair[1], as: Bound.self)
    else { return nil }
    return (lower, upper)
}
