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
        var json: JSONValue

        /// How the wrapped value is laid out in a `UserDefaults`: worked out from its type only
        /// when asked (a suite over a `UserDefaults` writing it), so other suites do not pay for it.
        private var shapeSource: ShapeSource

        /// Where ``shape`` comes from.
        private enum ShapeSource: Sendable {
            /// Known already: a literal, a container's shape (taken from its values), or `.any`
            /// for a value made from JSON, which says nothing of dates and bytes.
            case known(PropertyListShape)
            /// The type of the wrapped value, whose shape the value does not change.
            case type(any Defaults.Serializable.Type)
        }

        /// How the wrapped value is laid out in a `UserDefaults`.
        var shape: PropertyListShape {
            switch shapeSource {
            case .known(let shape): return shape
            case .type(let type): return ValueCoding.propertyListShape(of: type).withoutJSONText
            }
        }

        init(json: JSONValue) {
            self.init(json: json, shape: .any)
        }

        init(json: JSONValue, shape: PropertyListShape) {
            self.json = json
            self.shapeSource = .known(shape)
        }

        /// Wraps a serializable value; a value its bridge declines to store becomes `null`.
        public init<Value: Defaults.Serializable>(_ value: Value) {
            let json = ValueCoding.encode(value) ?? .null
            self.json = json
            // Only a value stored as an array or an object can hold an AnySerializable, whose
            // shape its value decides; a scalar's is its type's, worked out if ever asked. (No
            // conformance check here: it cost more than the rest of making a scalar one.)
            switch json {
            case .array, .object:
                self.shapeSource = .known(ValueCoding.propertyListShape(of: value).withoutJSONText)
            case .null, .bool, .number, .string:
                if Value.self == Defaults.AnySerializable.self, let wrapped = value as? Defaults.AnySerializable {
                    self.shapeSource = wrapped.shapeSource
                } else {
                    self.shapeSource = .type(Value.self)
                }
            }
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
            self = Self(newValue)
        }

        /// Replaces the wrapped value, stored as `type`.
        ///
        /// The spelling of sindresorhus/Defaults, for a value whose type the call would not
        /// otherwise say, such as a literal: `any.set(3, type: Int8.self)`.
        public mutating func set<Value: Defaults.Serializable>(_ newValue: Value, type: Value.Type) {
            self = Self(newValue)
        }

        /// Whether both wrap the same stored JSON.
        public static func == (lhs: Self, rhs: Self) -> Bool { lhs.json == rhs.json }

        /// Hashes the stored JSON.
        public func hash(into hasher: inout Hasher) { hasher.combine(json) }
    }
}

extension Defaults.AnySerializable: Defaults.Serializable, JSONRepresentable {
    /// Stored as the wrapped value's own stored form.
    public static let bridge = Defaults.NativeBridge<Defaults.AnySerializable>()
    var jsonValue: JSONValue? { json }
    static func make(from json: JSONValue) -> Defaults.AnySerializable? { .init(json: json) }
    /// Any JSON.
    static var storedSchema: [String: JSONValue] { [:] }
    static var propertyListShape: PropertyListShape { .any }
    var propertyListShapeOfValue: PropertyListShape { shape }
}

extension Defaults.AnySerializable: CustomStringConvertible {
    /// The wrapped value's stored form, as compact JSON.
    public var description: String { json.description }
}

extension Defaults.AnySerializable: ExpressibleByStringLiteral {
    /// Wraps a string.
    public init(stringLiteral value: String) { self.init(json: .string(value), shape: .plain) }
}

extension Defaults.AnySerializable: ExpressibleByIntegerLiteral {
    /// Wraps an integer.
    public init(integerLiteral value: Int) { self.init(json: .number(decimalText(value)), shape: .plain) }
}

extension Defaults.AnySerializable: ExpressibleByFloatLiteral {
    /// Wraps a `Double`.
    public init(floatLiteral value: Double) { self.init(json: floatingPointJSON(value), shape: .double) }
}

extension Defaults.AnySerializable: ExpressibleByBooleanLiteral {
    /// Wraps a boolean.
    public init(booleanLiteral value: Bool) { self.init(json: .bool(value), shape: .plain) }
}

extension Defaults.AnySerializable: ExpressibleByNilLiteral {
    /// Wraps `null`.
    public init(nilLiteral: ()) { self.init(json: .null, shape: .plain) }
}

extension Defaults.AnySerializable: ExpressibleByArrayLiteral {
    /// Wraps an array of values.
    public init(arrayLiteral elements: Defaults.AnySerializable...) {
        self.init(json: .array(elements.map(\.json)), shape: .elements(elements.map(\.shape)))
    }
}

extension Defaults.AnySerializable: ExpressibleByDictionaryLiteral {
    /// Wraps a dictionary of values.
    public init(dictionaryLiteral elements: (String, Defaults.AnySerializable)...) {
        let members = Dictionary(elements.map { ($0.0, $0.1) }, uniquingKeysWith: { _, last in last })
        self.init(json: .object(members.mapValues(\.json)), shape: .members(members.mapValues(\.shape)))
    }
}
