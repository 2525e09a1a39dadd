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
