extension Defaults {
    /// A type that can be stored in a suite.
    ///
    /// Built-in conformances cover the integer types, `Bool`, `Double`, `Float`, `String`, `Data`,
    /// `Date`, `URL`, `UUID`, `Range`, `ClosedRange`, `Optional`, `Array`, `Set` and `Dictionary`.
    /// A `Codable` type or a `RawRepresentable` enum conforms by declaring the conformance; any other
    /// type supplies a ``Defaults/Bridge``.
    public typealias Serializable = _DefaultsSerializable

    /// Converts a value to and from a type that a suite already knows how to store.
    ///
    /// The `Serializable` associated type may itself be any ``Defaults/Serializable`` type, including
    /// one with its own bridge: bridges compose.
    public typealias Bridge = _DefaultsBridge

    /// A collection that is stored as an array of its elements.
    public typealias CollectionSerializable = _DefaultsCollectionSerializable

    /// A `SetAlgebra` type that is stored as an array of its elements.
    public typealias SetAlgebraSerializable = _DefaultsSetAlgebraSerializable

    /// Marks a type that is both `Codable` and `RawRepresentable` to be stored by its raw value.
    ///
    /// Without it, such a type is stored through its `Codable` conformance.
    public typealias PreferRawRepresentable = _DefaultsPreferRawRepresentable
}

/// The protocol behind ``Defaults/Serializable``.
///
/// Values are shared between threads by the store, so serializable types are `Sendable`.
public protocol _DefaultsSerializable: Sendable {
    /// The type the bridge produces when reading.
    typealias Value = Bridge.Value
    /// The type the bridge hands to the store.
    typealias Serializable = Bridge.Serializable
    /// The bridge's type.
    associatedtype Bridge: Defaults.Bridge

    /// The bridge that converts values of this type for storage.
    static var bridge: Bridge { get }

    /// Whether a Foundation `UserDefaults` holds values of this type as themselves, as a
    /// property-list type, rather than through the bridge's stored form.
    ///
    /// `true` for `Bool`, `String`, the integer types up to 64 bits, `Float`, `Double`, `CGFloat`,
    /// `Date` and `Data`, for optionals and arrays of those, and for dictionaries with `String` keys
    /// and such values; `false` for every other type (`Int128` and `UInt128` too), as in
    /// sindresorhus/Defaults. A bridge of your own can
    /// ask it of its element type, as the bridges of sindresorhus/Defaults do. Suites store every
    /// type by its bridge whatever this says; a suite over a `UserDefaults` stores the natively
    /// supported ones as their property-list types.
    static var isNativelySupportedType: Bool { get }
}

extension _DefaultsSerializable {
    /// `false`: values of this type are stored through its bridge.
    public static var isNativelySupportedType: Bool { false }
}

/// The protocol behind ``Defaults/Bridge``.
public protocol _DefaultsBridge {
    /// The type you use.
    associatedtype Value
    /// The type that is stored; it must itself be ``Defaults/Serializable``.
    associatedtype Serializable

    /// Converts a value for storage; `nil` means nothing is stored.
    func serialize(_ value: Value?) -> Serializable?

    /// Converts a stored value back; `nil` means the stored value is not valid for this type.
    func deserialize(_ object: Serializable?) -> Value?
}

/// The protocol behind ``Defaults/CollectionSerializable``.
public protocol _DefaultsCollectionSerializable: Collection, Defaults.Serializable {
    /// Creates the collection from its stored elements.
    init(_ elements: [Element])
}

/// The protocol behind ``Defaults/SetAlgebraSerializable``.
public protocol _DefaultsSetAlgebraSerializable: SetAlgebra, Defaults.Serializable {
    /// The elements to store.
    func toArray() -> [Element]
}

/// The protocol behind ``Defaults/PreferRawRepresentable``.
public protocol _DefaultsPreferRawRepresentable: RawRepresentable {}
