import Foundation

// MARK: - Integers

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
/// write of an integer. Wider than 64 bits (`Int128`, `UInt128`), the generic formatting: the
/// digits below go through a `UInt64`.
@inline(__always)
func decimalText<T: FixedWidthInteger>(_ value: T) -> String {
    if T.bitWidth > 64 { return String(value) }
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

/// What every width of integer shares: stored as a JSON number written in full (see
/// `integer(from:)` for what is read), described as an integer in the type's range, and held as
/// itself by a `UserDefaults`.
protocol StoredInteger: ScalarRepresentable {}

// NB: `FixedWidthInteger` here, not on the protocol: a conformance the protocol refined would show
// in the public API's symbol graph as each integer type's again (`scripts/check-api`).
extension StoredInteger where Self: FixedWidthInteger {
    var jsonValue: JSONValue? { .number(decimalText(self)) }
    static func make(from json: JSONValue) -> Self? { integer(from: json) }
    static var storedSchema: [String: JSONValue] { ValueSchema.integer(Self.self) }
    static var propertyListShape: PropertyListShape { .plain }
    static var codableMember: (value: Self, schema: [String: JSONValue]) { (.zero, storedSchema) }
}

extension Int: Defaults.Serializable, StoredInteger, LosslessStorable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<Int>()
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Int8: Defaults.Serializable, StoredInteger, LosslessStorable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<Int8>()
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Int16: Defaults.Serializable, StoredInteger, LosslessStorable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<Int16>()
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Int32: Defaults.Serializable, StoredInteger, LosslessStorable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<Int32>()
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Int64: Defaults.Serializable, StoredInteger, LosslessStorable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<Int64>()
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension UInt: Defaults.Serializable, StoredInteger, LosslessStorable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<UInt>()
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension UInt8: Defaults.Serializable, StoredInteger, LosslessStorable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<UInt8>()
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension UInt16: Defaults.Serializable, StoredInteger, LosslessStorable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<UInt16>()
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension UInt32: Defaults.Serializable, StoredInteger, LosslessStorable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<UInt32>()
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension UInt64: Defaults.Serializable, StoredInteger, LosslessStorable {
    /// Stored as a JSON number.
    public static let bridge = Defaults.NativeBridge<UInt64>()
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension Int128: Defaults.Serializable, StoredInteger, LosslessStorable {
    /// Stored as a JSON number written in full, all 39 digits at the extremes.
    public static let bridge = Defaults.NativeBridge<Int128>()
    /// `false`: a `UserDefaults` cannot hold 128 bits; a suite over one stores a value that fits
    /// 64 bits as an integer, and any other as its JSON text.
    public static var isNativelySupportedType: Bool { false }
}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension UInt128: Defaults.Serializable, StoredInteger, LosslessStorable {
    /// Stored as a JSON number written in full, all 39 digits at the extremes.
    public static let bridge = Defaults.NativeBridge<UInt128>()
    /// `false`: a `UserDefaults` cannot hold 128 bits; a suite over one stores a value that fits
    /// 64 bits as an integer, and any other as its JSON text.
    public static var isNativelySupportedType: Bool { false }
}

/// Floating-point values are stored as their shortest round-tripping decimal text; NaN and the
/// infinities, which JSON numbers cannot express, as the strings `"NaN"`, `"Infinity"` and
/// `"-Infinity"` (the spelling `JSONEncoder` uses for the same purpose).
func floatingPointJSON<T: BinaryFloatingPoint & CustomStringConvertible>(_ value: T) -> JSONValue {
    if value.isNaN { return .string("NaN") }
    if value.isInfinite { return .string(value < 0 ? "-Infinity" : "Infinity") }
    return .number(value.description)
}

extension Double: Defaults.Serializable, ScalarRepresentable, LosslessStorable {
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
    /// A JSON number, or the string the file writes for NaN or an infinity.
    static var storedSchema: [String: JSONValue] {
        ["anyOf": .array([.object(["type": .string("number")]), .object(["enum": ValueSchema.nonFinite])])]
    }
    static var propertyListShape: PropertyListShape { .double }
    static var codableMember: (value: Double, schema: [String: JSONValue]) { (0, storedSchema) }
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Float: Defaults.Serializable, ScalarRepresentable, LosslessStorable {
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
    /// A JSON number within `Float`'s finite range, or the string for NaN or an infinity.
    static var storedSchema: [String: JSONValue] {
        let bound = Float.greatestFiniteMagnitude
        let number: [String: JSONValue] = [
            "type": .string("number"), "minimum": .number((-bound).description), "maximum": .number(bound.description),
        ]
        return ["anyOf": .array([.object(number), .object(["enum": ValueSchema.nonFinite])])]
    }
    static var propertyListShape: PropertyListShape { .float }
    static var codableMember: (value: Float, schema: [String: JSONValue]) { (0, storedSchema) }
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension CGFloat: Defaults.Serializable, ScalarRepresentable, LosslessStorable {
    /// Stored as a JSON number, as the `Double` it holds; NaN and the infinities as `Double`'s are.
    public static let bridge = Defaults.NativeBridge<CGFloat>()
    var jsonValue: JSONValue? { floatingPointJSON(Double(self)) }
    static func make(from json: JSONValue) -> CGFloat? { Double.make(from: json).map { CGFloat($0) } }
    /// As `Double`'s.
    static var storedSchema: [String: JSONValue] { Double.storedSchema }
    static var propertyListShape: PropertyListShape { .double }
    static var codableMember: (value: CGFloat, schema: [String: JSONValue]) { (0, storedSchema) }
    /// `true`: a `UserDefaults` holds it as a `Double`, as Apple's does.
    public static var isNativelySupportedType: Bool { true }
}
