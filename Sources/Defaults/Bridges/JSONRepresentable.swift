/// A type the store converts to and from JSON itself, without a user-visible bridge.
///
/// Everything the package says of such a type is in its one extension in `Bridges/`, and the
/// compiler holds it complete: its JSON (here), its JSON Schema (``SchemaDescribed``) and its
/// layout in a `UserDefaults` (``PropertyListShaped``); a leaf type also says how a `Codable`
/// member of its type is described (``ScalarRepresentable``).
protocol JSONRepresentable: SendableMetatype, SchemaDescribed, PropertyListShaped {
    /// The stored form; `nil` means "nothing stored" (an empty optional).
    var jsonValue: JSONValue? { get }
    /// The value for a stored form, or `nil` when it does not fit this type.
    static func make(from json: JSONValue) -> Self?
}

/// A built-in type with no parts of its own (a number, a string, a date…).
protocol ScalarRepresentable: JSONRepresentable {
    /// A value of the type, and the schema of what `JSONEncoder` writes for it: how a member of
    /// this type in a `Codable` type's `init(from:)` is described (`CodableSchema`).
    static var codableMember: (value: Self, schema: [String: JSONValue]) { get }
}

/// The built-in types whose stored form reads back as exactly the same value: a written value
/// can stand in for the decoded one.
protocol LosslessStorable {}

/// The one place where values become JSON and back, following bridges as deep as they go.
enum ValueCoding {
    /// The stored form of `value`, or `nil` when the bridge declines to store it.
    static func encode<T: Defaults.Serializable>(_ value: T) -> JSONValue? {
        if let native = value as? any JSONRepresentable {
            return native.jsonValue
        }
        guard let serializable = T.bridge.serialize(value as? T.Value) else { return nil }
        return encodeBridged(serializable)
    }

    /// Encodes a value of one native type, given its address: what a key of such a type keeps, so
    /// that a write needs no dynamic cast to find the type's encoding.
    typealias NativeEncoder = @Sendable (UnsafeRawPointer) -> JSONValue?

    /// The encoder of `type`'s values when the store holds them natively; `nil` for types that go
    /// through a bridge.
    static func nativeEncoder<T>(for type: T.Type) -> NativeEncoder? {
        guard let native = type as? any JSONRepresentable.Type else { return nil }
        return nativeEncoder(opening: native)
    }

    private static func nativeEncoder<Native: JSONRepresentable>(opening type: Native.Type) -> NativeEncoder {
        { address in address.assumingMemoryBound(to: Native.self).pointee.jsonValue }
    }

    /// The stored form of a container element: an empty optional is `null`; `nil` means the
    /// element's bridge declined it, which fails the whole container rather than losing data.
    static func encodeElement<T: Defaults.Serializable>(_ value: T) -> JSONValue? {
        if let json = encode(value) { return json }
        return isEmptyOptional(value) ? .null : nil
    }

    /// Whether `value` is an `Optional` holding nothing: storing it removes the value.
    static func isEmptyOptional<T>(_ value: T) -> Bool {
        guard let optional = value as? any OptionalValue else { return false }
        return optional.isNone
    }

    /// Decodes `json` as `T`; `nil` when it does not fit.
    static func decode<T: Defaults.Serializable>(_ json: JSONValue, as type: T.Type = T.self) -> T? {
        if let native = T.self as? any JSONRepresentable.Type {
            return native.make(from: json) as? T
        }
        let serializable = decodeBridged(json, as: T.Serializable.self)
        guard serializable != nil else { return nil }
        return T.bridge.deserialize(serializable) as? T
    }

    private static func encodeBridged<S>(_ serializable: S) -> JSONValue? {
        if let native = serializable as? any JSONRepresentable {
            return native.jsonValue
        }
        if let nested = serializable as? any Defaults.Serializable {
            return encode(nested)
        }
        return nil
    }

    private static func decodeBridged<S>(_ json: JSONValue, as type: S.Type) -> S? {
        if let native = S.self as? any JSONRepresentable.Type {
            return native.make(from: json) as? S
        }
        if let nested = S.self as? any Defaults.Serializable.Type {
            return decode(json, as: nested) as? S
        }
        return nil
    }
}

/// Lets the store tell an empty optional (remove the value) from a value that failed to serialize.
protocol OptionalValue {
    var isNone: Bool { get }
}

extension Optional: OptionalValue {
    var isNone: Bool { self == nil }
}
