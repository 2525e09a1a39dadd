import Foundation

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
