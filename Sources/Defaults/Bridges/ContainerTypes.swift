import Foundation

// MARK: - Containers

extension Optional: Defaults.Serializable, JSONRepresentable, SchemaDescribed, PropertyListShaped
where Wrapped: Defaults.Serializable {
    /// An empty optional is "nothing stored"; inside a container it is JSON `null`.
    public static var bridge: Defaults.NativeBridge<Wrapped?> { .init() }
    var jsonValue: JSONValue? { self.flatMap { ValueCoding.encode($0) } }
    static func make(from json: JSONValue) -> Wrapped?? {
        if case .null = json { return .some(nil) }
        guard let wrapped = ValueCoding.decode(json, as: Wrapped.self) else { return nil }
        return .some(wrapped)
    }
    static var storedSchema: [String: JSONValue] { ValueSchema.optional(ValueSchema.schema(for: Wrapped.self)) }
    static var propertyListShape: PropertyListShape { ValueCoding.propertyListShape(of: Wrapped.self) }
    var propertyListShapeOfValue: PropertyListShape {
        map { ValueCoding.propertyListShape(of: $0) } ?? .plain
    }
    /// Whether the wrapped type is natively supported.
    public static var isNativelySupportedType: Bool { Wrapped.isNativelySupportedType }
}

extension Array: Defaults.Serializable, JSONRepresentable, SchemaDescribed, PropertyListShaped
where Element: Defaults.Serializable {
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
    static var storedSchema: [String: JSONValue] {
        ["type": .string("array"), "items": .object(ValueSchema.schema(for: Element.self))]
    }
    static var propertyListShape: PropertyListShape { .array(ValueCoding.propertyListShape(of: Element.self)) }
    var propertyListShapeOfValue: PropertyListShape {
        .elements(map { ValueCoding.propertyListShape(of: $0) })
    }
    /// Whether the element type is natively supported.
    public static var isNativelySupportedType: Bool { Element.isNativelySupportedType }
}

extension Set: Defaults.Serializable, JSONRepresentable, SchemaDescribed, PropertyListShaped
where Element: Defaults.Serializable {
    /// Stored as a JSON array in a stable order, so writing an equal set is not a change.
    public static var bridge: Defaults.NativeBridge<Set<Element>> { .init() }
    var jsonValue: JSONValue? {
        guard case .array(let elements)? = Array(self).jsonValue else { return nil }
        return .array(stableOrder(elements))
    }
    static func make(from json: JSONValue) -> Set<Element>? {
        [Element].make(from: json).map(Set.init)
    }
    static var storedSchema: [String: JSONValue] {
        ["type": .string("array"), "items": .object(ValueSchema.schema(for: Element.self))]
    }
    static var propertyListShape: PropertyListShape { .array(ValueCoding.propertyListShape(of: Element.self)) }
    var propertyListShapeOfValue: PropertyListShape {
        // In the order the set's JSON has (see `stableOrder`), so each shape meets its element.
        let ordered = map { (JSONWriter.compactBytes(ValueCoding.encodeElement($0) ?? .null), $0) }
            .sorted { $0.0.lexicographicallyPrecedes($1.0) }
        return .elements(ordered.map { ValueCoding.propertyListShape(of: $0.1) })
    }
}

/// Sorts stored elements by their compact JSON text: the same set always writes the same array.
func stableOrder(_ values: [JSONValue]) -> [JSONValue] {
    values.map { (JSONWriter.compactBytes($0), $0) }
        .sorted { $0.0.lexicographicallyPrecedes($1.0) }
        .map(\.1)
}

extension Dictionary: Defaults.Serializable, JSONRepresentable, SchemaDescribed, PropertyListShaped
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
    /// An object; member names must read as `Key` (whole numbers for an integer key).
    static var storedSchema: [String: JSONValue] {
        var schema: [String: JSONValue] = [
            "type": .string("object"), "additionalProperties": .object(ValueSchema.schema(for: Value.self)),
        ]
        if Key.self is any FixedWidthInteger.Type {
            schema["propertyNames"] = .object(["pattern": .string("^-?[0-9]+$")])
        }
        return schema
    }
    static var propertyListShape: PropertyListShape { .dictionary(ValueCoding.propertyListShape(of: Value.self)) }
    var propertyListShapeOfValue: PropertyListShape {
        .members(
            [String: PropertyListShape](
                map { ($0.key.description, ValueCoding.propertyListShape(of: $0.value)) },
                uniquingKeysWith: { _, last in last }
            )
        )
    }
    /// Whether the keys are `String`s and the value type is natively supported.
    public static var isNativelySupportedType: Bool { Key.self == String.self && Value.isNativelySupportedType }
}

extension Range: Defaults.Serializable, JSONRepresentable, SchemaDescribed, PropertyListShaped
where Bound: Defaults.Serializable {
    /// Stored as a two-element array `[lowerBound, upperBound]`.
    public static var bridge: Defaults.NativeBridge<Range<Bound>> { .init() }
    var jsonValue: JSONValue? { boundsJSON(lowerBound, upperBound) }
    static func make(from json: JSONValue) -> Range<Bound>? {
        guard let (lower, upper) = bounds(from: json, as: Bound.self), lower <= upper else { return nil }
        return lower..<upper
    }
    static var storedSchema: [String: JSONValue] { ValueSchema.pair(Bound.self) }
    static var propertyListShape: PropertyListShape { .array(ValueCoding.propertyListShape(of: Bound.self)) }
}

extension ClosedRange: Defaults.Serializable, JSONRepresentable, SchemaDescribed, PropertyListShaped
where Bound: Defaults.Serializable {
    /// Stored as a two-element array `[lowerBound, upperBound]`.
    public static var bridge: Defaults.NativeBridge<ClosedRange<Bound>> { .init() }
    var jsonValue: JSONValue? { boundsJSON(lowerBound, upperBound) }
    static func make(from json: JSONValue) -> ClosedRange<Bound>? {
        guard let (lower, upper) = bounds(from: json, as: Bound.self), lower <= upper else { return nil }
        return lower...upper
    }
    static var storedSchema: [String: JSONValue] { ValueSchema.pair(Bound.self) }
    static var propertyListShape: PropertyListShape { .array(ValueCoding.propertyListShape(of: Bound.self)) }
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
