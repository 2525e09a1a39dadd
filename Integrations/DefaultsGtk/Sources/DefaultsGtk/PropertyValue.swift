import CGtk
import DefaultsObservation

/// A GObject property's value, as a binding carries it between a key and the property.
///
/// GLib converts between the numeric types, so a key of any integer or floating-point type binds
/// to a property of any of them: an `Int` key to a spin button's `value` (a `double`), or to a
/// drop-down's `selected` (a `guint`).
public enum PropertyValue: Hashable, Sendable {
    /// A `gboolean` property's value.
    case bool(Bool)
    /// A signed integer property's value (`gint`, `glong`, `gint64`, `gchar`).
    case int(Int64)
    /// An unsigned integer property's value (`guint`, `gulong`, `guint64`, `guchar`).
    case uint(UInt64)
    /// A floating-point property's value (`gdouble`, `gfloat`).
    case double(Double)
    /// A string property's value; `NULL` reads as the empty string.
    case string(String)

    /// The value as an exact integer of type `Integer`, or `nil` if it is not one (a fraction is
    /// rounded to the nearest integer first, as a spin button shows it).
    public func integer<Integer: FixedWidthInteger>(as _: Integer.Type = Integer.self) -> Integer? {
        switch self {
        case .int(let value): Integer(exactly: value)
        case .uint(let value): Integer(exactly: value)
        case .double(let value): value.isFinite ? Integer(exactly: value.rounded()) : nil
        case .bool, .string: nil
        }
    }

    /// The value as a `Double`, or `nil` if it is not a number.
    public var number: Double? {
        switch self {
        case .int(let value): Double(value)
        case .uint(let value): Double(value)
        case .double(let value): value
        case .bool, .string: nil
        }
    }

    /// Whether a property of `kind` can hold this value: a Boolean one a `Bool`, a string one a
    /// string, a numeric one any number.
    func fits(_ kind: CGtkPropertyKind) -> Bool {
        switch self {
        case .bool: kind == CGTK_PROPERTY_BOOLEAN
        case .string: kind == CGTK_PROPERTY_STRING
        case .int, .uint, .double:
            kind == CGTK_PROPERTY_SIGNED || kind == CGTK_PROPERTY_UNSIGNED || kind == CGTK_PROPERTY_FLOATING
        }
    }

    /// What kind of value this is, for messages: "a Boolean", "a number" or "a string".
    var kindName: String {
        switch self {
        case .bool: "a Boolean"
        case .string: "a string"
        case .int, .uint, .double: "a number"
        }
    }

    /// Whether a property showing `self` already shows `other`: equal numbers of any kind, or
    /// equal values.
    func shows(_ other: PropertyValue) -> Bool {
        switch (self, other) {
        case (.int(let a), .uint(let b)), (.uint(let b), .int(let a)): a >= 0 && UInt64(a) == b
        case (.double(let a), .int), (.double(let a), .uint): other.number == a
        case (.int, .double(let b)), (.uint, .double(let b)): number == b
        default: self == other
        }
    }
}

/// A value a key can hold and a GObject property can show as it is.
///
/// `Bool`, every integer type, `Double`, `Float`, `String`, and `String?` (the empty string is
/// `nil`, as an entry with nothing typed) conform. For other values (an enum, an inverted
/// `Bool`), give ``Defaults/bind(_:to:property:mapping:flags:)`` a ``PropertyMapping``.
public protocol PropertyConvertible {
    /// The value a property shows for this one.
    var propertyValue: PropertyValue { get }

    /// The value a property showing `propertyValue` stands for, or `nil` if there is none (a
    /// number out of this type's range, a string for a number).
    init?(propertyValue: PropertyValue)
}

extension Bool: PropertyConvertible {
    /// `.bool(self)`.
    public var propertyValue: PropertyValue { .bool(self) }

    /// A Boolean property's value.
    public init?(propertyValue: PropertyValue) {
        guard case .bool(let value) = propertyValue else { return nil }
        self = value
    }
}

extension String: PropertyConvertible {
    /// `.string(self)`.
    public var propertyValue: PropertyValue { .string(self) }

    /// A string property's value.
    public init?(propertyValue: PropertyValue) {
        guard case .string(let value) = propertyValue else { return nil }
        self = value
    }
}

extension Optional: PropertyConvertible where Wrapped == String {
    /// The string, or the empty string for `nil`.
    public var propertyValue: PropertyValue { .string(self ?? "") }

    /// A string property's value, `nil` when it is empty.
    public init?(propertyValue: PropertyValue) {
        guard case .string(let value) = propertyValue else { return nil }
        self = value.isEmpty ? nil : value
    }
}

extension Double: PropertyConvertible {
    /// `.double(self)`.
    public var propertyValue: PropertyValue { .double(self) }

    /// A numeric property's value.
    public init?(propertyValue: PropertyValue) {
        guard let number = propertyValue.number else { return nil }
        self = number
    }
}

extension Float: PropertyConvertible {
    /// `.double(self)`.
    public var propertyValue: PropertyValue { .double(Double(self)) }

    /// A numeric property's value.
    public init?(propertyValue: PropertyValue) {
        guard let number = propertyValue.number else { return nil }
        self = Float(number)
    }
}

/// Integers: a property shows them as `.int` (signed types) or `.uint` (unsigned types), and a
/// property's number becomes one when it fits.
public protocol PropertyConvertibleInteger: PropertyConvertible, FixedWidthInteger {}

extension PropertyConvertibleInteger {
    /// `.int` for a signed type, `.uint` for an unsigned one.
    public var propertyValue: PropertyValue {
        Self.isSigned ? .int(Int64(truncatingIfNeeded: self)) : .uint(UInt64(truncatingIfNeeded: self))
    }

    /// A numeric property's value, rounded to the nearest integer; `nil` out of this type's range.
    public init?(propertyValue: PropertyValue) {
        guard let value = propertyValue.integer(as: Self.self) else { return nil }
        self = value
    }
}

extension Int: PropertyConvertibleInteger {}
extension Int8: PropertyConvertibleInteger {}
extension Int16: PropertyConvertibleInteger {}
extension Int32: PropertyConvertibleInteger {}
extension Int64: PropertyConvertibleInteger {}
extension UInt: PropertyConvertibleInteger {}
extension UInt8: PropertyConvertibleInteger {}
extension UInt16: PropertyConvertibleInteger {}
extension UInt32: PropertyConvertibleInteger {}
extension UInt64: PropertyConvertibleInteger {}

/// How a binding turns a key's value into a property's, and back.
///
/// ```swift
/// Defaults.bind(.theme, to: dropDown, property: "selected", mapping: .caseIndex)
/// Defaults.bind(.theme, to: label, property: "label", mapping: .rawValue, flags: .get)
/// Defaults.bind(.showLineNumbers, to: hideCheck, property: "active", mapping: .inverted)
/// ```
public struct PropertyMapping<Value> {
    let toProperty: (Value) -> PropertyValue
    let fromProperty: (PropertyValue) -> Value?

    /// A mapping of your own.
    ///
    /// - Parameters:
    ///   - toProperty: The property's value for a key's value.
    ///   - fromProperty: The key's value for a property's, or `nil` to write nothing (the
    ///     property shows something no value of the key stands for).
    public init(
        toProperty: @escaping (Value) -> PropertyValue,
        fromProperty: @escaping (PropertyValue) -> Value?
    ) {
        self.toProperty = toProperty
        self.fromProperty = fromProperty
    }
}

extension PropertyMapping where Value: PropertyConvertible {
    /// The value as it is (the mapping `bind` uses when it is given none).
    public static var direct: PropertyMapping {
        PropertyMapping(toProperty: { $0.propertyValue }, fromProperty: { Value(propertyValue: $0) })
    }
}

extension PropertyMapping where Value == Bool {
    /// `true` shows as `false` and back: a "Hide line numbers" check button for a
    /// `showLineNumbers` key.
    public static var inverted: PropertyMapping {
        PropertyMapping(
            toProperty: { .bool(!$0) },
            fromProperty: { Bool(propertyValue: $0).map { !$0 } }
        )
    }
}

extension PropertyMapping where Value: CaseIterable & Equatable {
    /// A case shows as its position in `allCases`: a drop-down's `selected`.
    ///
    /// For a drop-down listing the cases in that order. A position past the last case (nothing
    /// selected) writes nothing.
    public static var caseIndex: PropertyMapping {
        PropertyMapping(
            toProperty: { value in .uint(UInt64(Array(Value.allCases).firstIndex(of: value) ?? 0)) },
            fromProperty: { property in
                let cases = Array(Value.allCases)
                guard let index = property.integer(as: Int.self), cases.indices.contains(index) else { return nil }
                return cases[index]
            }
        )
    }
}

extension PropertyMapping where Value: RawRepresentable, Value.RawValue == String {
    /// A case shows as its raw value: a label's text, or a string property.
    ///
    /// A string that is no case's raw value writes nothing.
    public static var rawValue: PropertyMapping {
        PropertyMapping(
            toProperty: { .string($0.rawValue) },
            fromProperty: { String(propertyValue: $0).flatMap(Value.init(rawValue:)) }
        )
    }
}
