import Foundation

extension Defaults {
    /// The bridge of `Codable` types: the value's JSON encoding, nested in the file as JSON.
    ///
    /// The encoded form sits in the file as a JSON object (or whatever the type encodes to), not as
    /// a string of escaped JSON, so a person can read and edit it. Non-finite floating-point values
    /// inside use the strings `"NaN"`, `"Infinity"` and `"-Infinity"`.
    public struct CodableBridge<Value: Codable>: Defaults.Bridge, Sendable {
        /// The encoded JSON, held as an untyped value.
        public typealias Serializable = Defaults.AnySerializable

        /// Creates the bridge.
        public init() {}

        /// Encodes `value` with `JSONEncoder`; `nil` when encoding fails.
        public func serialize(_ value: Value?) -> Defaults.AnySerializable? {
            guard let value else { return nil }
            let encoder = JSONEncoder()
            encoder.nonConformingFloatEncodingStrategy = .convertToString(
                positiveInfinity: "Infinity",
                negativeInfinity: "-Infinity",
                nan: "NaN"
            )
            guard let data = try? encoder.encode(value), let json = try? JSONParser.parse(Array(data)) else {
                return nil
            }
            return Defaults.AnySerializable(json: json)
        }

        /// Decodes the stored JSON with `JSONDecoder`; `nil` when it does not fit `Value`.
        public func deserialize(_ object: Defaults.AnySerializable?) -> Value? {
            guard let object else { return nil }
            let decoder = JSONDecoder()
            decoder.nonConformingFloatDecodingStrategy = .convertFromString(
                positiveInfinity: "Infinity",
                negativeInfinity: "-Infinity",
                nan: "NaN"
            )
            return try? decoder.decode(Value.self, from: Data(JSONWriter.compactBytes(object.json)))
        }
    }

    /// The bridge of `RawRepresentable` types: the raw value is stored.
    public struct RawRepresentableBridge<Value: RawRepresentable>: Defaults.Bridge, Sendable
    where Value.RawValue: Defaults.Serializable {
        /// The raw value is what is stored.
        public typealias Serializable = Value.RawValue

        /// Creates the bridge.
        public init() {}

        /// Returns the raw value.
        public func serialize(_ value: Value?) -> Value.RawValue? { value?.rawValue }

        /// Returns the value for a stored raw value; `nil` when there is no such case.
        public func deserialize(_ object: Value.RawValue?) -> Value? { object.flatMap(Value.init(rawValue:)) }
    }

    /// The bridge of ``Defaults/CollectionSerializable`` types: an array of their elements.
    public struct CollectionBridge<Value: Defaults.CollectionSerializable>: Defaults.Bridge, Sendable
    where Value.Element: Defaults.Serializable {
        /// The elements are stored as an array.
        public typealias Serializable = [Value.Element]

        /// Creates the bridge.
        public init() {}

        /// Returns the elements in order.
        public func serialize(_ value: Value?) -> [Value.Element]? { value.map(Array.init) }

        /// Creates the collection from the stored elements.
        public func deserialize(_ object: [Value.Element]?) -> Value? { object.map(Value.init) }
    }

    /// The bridge of ``Defaults/SetAlgebraSerializable`` types: an array of their elements.
    public struct SetAlgebraBridge<Value: Defaults.SetAlgebraSerializable>: Defaults.Bridge, Sendable
    where Value.Element: Defaults.Serializable {
        /// The elements are stored as an array.
        public typealias Serializable = [Value.Element]

        /// Creates the bridge.
        public init() {}

        /// Returns `toArray()`.
        public func serialize(_ value: Value?) -> [Value.Element]? { value?.toArray() }

        /// Creates the set from the stored elements.
        public func deserialize(_ object: [Value.Element]?) -> Value? { object.map { Value($0) } }
    }
}

extension Defaults.Serializable where Self: Codable {
    /// `Codable` types are stored through their JSON encoding.
    public static var bridge: Defaults.CodableBridge<Self> { .init() }
}

extension Defaults.Serializable where Self: RawRepresentable, RawValue: Defaults.Serializable {
    /// `RawRepresentable` types are stored by their raw value.
    public static var bridge: Defaults.RawRepresentableBridge<Self> { .init() }
}

extension Defaults.Serializable where Self: Codable & RawRepresentable, RawValue: Defaults.Serializable {
    /// A type that is both `Codable` and `RawRepresentable` is stored through `Codable`, unless it
    /// also conforms to ``Defaults/PreferRawRepresentable``.
    public static var bridge: Defaults.CodableBridge<Self> { .init() }
}

extension Defaults.Serializable
where Self: Codable & RawRepresentable & Defaults.PreferRawRepresentable, RawValue: Defaults.Serializable {
    /// ``Defaults/PreferRawRepresentable`` types are stored by their raw value.
    public static var bridge: Defaults.RawRepresentableBridge<Self> { .init() }
}

extension Defaults.CollectionSerializable where Element: Defaults.Serializable {
    /// Custom collections are stored as an array of their elements.
    public static var bridge: Defaults.CollectionBridge<Self> { .init() }
}

extension Defaults.SetAlgebraSerializable where Element: Defaults.Serializable {
    /// Custom sets are stored as an array of their elements.
    public static var bridge: Defaults.SetAlgebraBridge<Self> { .init() }
}
