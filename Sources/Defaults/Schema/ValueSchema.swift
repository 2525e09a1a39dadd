import Foundation

/// A type whose stored form the library describes as JSON Schema by itself.
protocol SchemaDescribed {
    /// The schema of the stored form, as the members of a JSON Schema object.
    static var storedSchema: [String: JSONValue] { get }
}

/// How a value type is stored, as JSON Schema (draft 2020-12): the one place that says it.
enum ValueSchema {
    /// The schema of `type`'s stored form.
    ///
    /// An enum that is `CaseIterable` lists its cases as stored. A `Codable` type's schema is
    /// derived from its `init(from:)` (see `CodableSchema`); where it cannot be, from the encoding
    /// of `sample` (a key's default): its members' names and JSON kinds, none of them required;
    /// without a sample, any JSON.
    static func schema<T: Defaults.Serializable>(for type: T.Type, sample: T? = nil) -> [String: JSONValue] {
        if let iterable = T.self as? any CaseIterable.Type {
            let cases = allCases(of: iterable).compactMap { ($0 as? T).flatMap(ValueCoding.encode) }
            if !cases.isEmpty { return ["enum": .array(cases)] }
        }
        if let described = T.self as? any SchemaDescribed.Type { return described.storedSchema }
        if T.Serializable.self == Defaults.AnySerializable.self {
            if let decodable = T.self as? any Decodable.Type, let derived = CodableSchema.schema(of: decodable) {
                return derived
            }
            guard let sample, let json = ValueCoding.encode(sample) else { return [:] }
            return shape(of: json)
        }
        if let bridged = T.Serializable.self as? any Defaults.Serializable.Type { return schema(opening: bridged) }
        return [:]
    }

    private static func schema<S: Defaults.Serializable>(opening type: S.Type) -> [String: JSONValue] {
        schema(for: type, sample: nil)
    }

    private static func allCases<C: CaseIterable>(of type: C.Type) -> [Any] { Array(type.allCases) }

    /// The kinds of the members of a value as encoded: what a `Codable` type's schema falls back to.
    static func shape(of json: JSONValue) -> [String: JSONValue] {
        switch json {
        case .null: return ["type": .string("null")]
        case .bool: return ["type": .string("boolean")]
        // A number the sample writes whole may be written with a fraction by another value.
        case .number: return ["type": .string("number")]
        case .string: return ["type": .string("string")]
        case .array(let elements):
            guard let first = elements.first else { return ["type": .string("array")] }
            let kinds = Set(elements.map { shape(of: $0) })
            return ["type": .string("array"), "items": .object(kinds.count == 1 ? first.shapeObject : [:])]
        case .object(let members):
            return ["type": .string("object"), "properties": .object(members.mapValues { .object(shape(of: $0)) })]
        }
    }

    /// The schema of an integer type: a JSON integer between its width's bounds.
    static func integer<T: FixedWidthInteger>(_ type: T.Type) -> [String: JSONValue] {
        ["type": .string("integer"), "minimum": .number(decimalText(T.min)), "maximum": .number(decimalText(T.max))]
    }

    /// The strings the file writes for NaN and the infinities.
    static let nonFinite: JSONValue = .array([.string("NaN"), .string("Infinity"), .string("-Infinity")])

    /// `inner`, or `null`.
    static func optional(_ inner: [String: JSONValue]) -> [String: JSONValue] {
        ["anyOf": .array([.object(inner), .object(["type": .string("null")])])]
    }
}

extension JSONValue {
    fileprivate var shapeObject: [String: JSONValue] { ValueSchema.shape(of: self) }
}

// The built-in types say their schemas where they say their JSON (`Bridges/`): `JSONRepresentable`
// requires it.

extension ValueSchema {
    /// Two values of `Bound`: the lower and upper bound of a range.
    static func pair<Bound: Defaults.Serializable>(_ type: Bound.Type) -> [String: JSONValue] {
        let bound = JSONValue.object(schema(for: Bound.self))
        return [
            "type": .string("array"), "prefixItems": .array([bound, bound]), "minItems": .number("2"),
            "maxItems": .number("2"),
        ]
    }
}

extension ValueSchema {
    /// A key's property in its suite's schema: its value's schema, narrowed to its range, with
    /// its summary, fixed default and Swift type, and its migration (`x-formerly`, its former
    /// names; `x-migration`, the id the store records; `x-converts-from`, the type a conversion
    /// reads); a secret key is marked `"x-secret": true` and `"readOnly": true` (it is never
    /// stored), and shows no default.
    static func entry<Value: Defaults.Serializable>(for key: Defaults.Key<Value>) -> [String: JSONValue] {
        let sample = key.hasFixedDefault ? key.defaultValue : nil
        var entry = schema(for: Value.self, sample: sample)
        if let (lower, upper) = key.storedRange {
            let kind = Value.self is any BinaryInteger.Type ? "integer" : "number"
            entry = ["type": .string(kind), "minimum": lower, "maximum": upper]
        }
        entry["x-swift-type"] = .string(String(describing: Value.self))
        if let summary = key.summary { entry["description"] = .string(summary) }
        if !key.formerNames.isEmpty { entry["x-formerly"] = .array(key.formerNames.map { .string($0) }) }
        if let (_, isFinal) = key.declaredMigration, let id = key.declaredMigrationID {
            entry["x-migration"] = .string(id)
            if !isFinal { entry["x-final"] = .bool(false) }
            if let convertsFrom = key.convertsFromName { entry["x-converts-from"] = .string(convertsFrom) }
        }
        if key.isSecret {
            entry["x-secret"] = .bool(true)
            entry["readOnly"] = .bool(true)
            return entry
        }
        if let sample, let json = ValueCoding.encodeElement(sample) { entry["default"] = json }
        return entry
    }
}
