extension Defaults {
    /// A type-erased stored value, for containers of mixed types such as
    /// `[String: Defaults.AnySerializable]`.
    ///
    /// It holds the value in its stored form, so it survives the file exactly like a typed value.
    /// Read it back with ``get()`` or ``get(_:)``:
    ///
    /// ```swift
    /// Defaults[.magic]["count"] = 3
    /// let count: Int? = Defaults[.magic]["count"]?.get()
    /// ```
    public struct AnySerializable: Hashable, Sendable {
        package var json: JSONValue

        package init(json: JSONValue) {
            self.json = json
        }

        /// Wraps a serializable value; a value its bridge declines to store becomes `null`.
        public init<Value: Defaults.Serializable>(_ value: Value) {
            self.json = ValueCoding.encode(value) ?? .null
        }

        /// The wrapped value as `Value`, or `nil` when it is not one.
        public func get<Value: Defaults.Serializable>() -> Value? {
            ValueCoding.decode(json, as: Value.self)
        }

        /// The wrapped value as `type`, or `nil` when it is not one.
        public func get<Value: Defaults.Serializable>(_ type: Value.Type) -> Value? {
            ValueCoding.decode(json, as: type)
        }

        /// Replaces the wrapped value.
        public mutating func set<Value: Defaults.Serializable>(_ newValue: Value) {
            json = ValueCoding.encode(newValue) ?? .null
        }
    }
}

extension Defaults.AnySerializable: Defaults.Serializable, JSONRepresentable {
    /// Stored as the wrapped value's own stored form.
    public static let bridge = Defaults.NativeBridge<Defaults.AnySerializable>()
    var jsonValue: JSONValue? { json }
    static func make(from json: JSONValue) -> Defaults.AnySerializable? { .init(json: json) }
}

extension Defaults.AnySerializable: ExpressibleByStringLiteral {
    /// Wraps a string.
    public init(stringLiteral value: String) { self.init(json: .string(value)) }
}

extension Defaults.AnySerializable: ExpressibleByIntegerLiteral {
    /// Wraps an integer.
    public init(integerLiteral value: Int) { self.init(value) }
}

extension Defaults.AnySerializable: ExpressibleByFloatLiteral {
    /// Wraps a `Double`.
    public init(floatLiteral value: Double) { self.init(value) }
}

extension Defaults.AnySerializable: ExpressibleByBooleanLiteral {
    /// Wraps a boolean.
    public init(booleanLiteral value: Bool) { self.init(json: .bool(value)) }
}

extension Defaults.AnySerializable: ExpressibleByNilLiteral {
    /// Wraps `null`.
    public init(nilLiteral: ()) { self.init(json: .null) }
}

extension Defaults.AnySerializable: ExpressibleByArrayLiteral {
    /// Wraps an array of values.
    public init(arrayLiteral elements: Defaults.AnySerializable...) { self.init(json: .array(elements.map(\.json))) }
}

extension Defaults.AnySerializable: ExpressibleByDictionaryLiteral {
    /// Wraps a dictionary of values.
    public init(dictionaryLiteral elements: (String, Defaults.AnySerializable)...) {
        self.init(json: .object(Dictionary(elements.map { ($0.0, $0.1.json) }, uniquingKeysWith: { _, last in last })))
    }
}
