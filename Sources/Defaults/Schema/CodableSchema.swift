import Foundation

/// Derives the JSON Schema of a `Decodable` type from its `init(from:)`, run against a decoder
/// that records what it asks for: each member's type, which members it requires, and the element
/// type of each array.
///
/// What `JSONEncoder` writes for the type then validates, as long as the type decodes what it
/// encodes. A type whose `init(from:)` rejects the placeholder values the recorder hands it (a
/// raw-value enum that is not `CaseIterable`, a check in a custom initialiser), asks for nested
/// containers or a super decoder, or nests itself, has no derived schema: `nil`.
enum CodableSchema {
    /// The schema of `type`'s encoding, or `nil` when it cannot be derived.
    static func schema<T: Decodable>(of type: T.Type) -> [String: JSONValue]? {
        try? Recorder.record(type, depth: 0).schema
    }

    /// Why a derivation stopped.
    struct Unsupported: Error {}
}

/// A decoder that hands out placeholder values and writes down the shape it was asked for.
private final class Recorder: Decoder {
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]
    let depth: Int
    /// What the value turned out to be: an object, an array, or one value.
    var shape: [String: JSONValue] = [:]
    /// An object's members, by name, in the order asked.
    var properties: [String: JSONValue] = [:]
    /// Members asked for with `decodeNil` first (`decodeIfPresent`): not required, may be `null`.
    var optional: Set<String> = []
    /// An array's element, once one was asked for.
    var items: [String: JSONValue]?
    var itemsMayBeNull = false

    /// The deepest nesting followed: a type that contains itself would go on forever.
    static let maximumDepth = 24

    init(depth: Int) { self.depth = depth }

    /// A placeholder value of `type` and the schema of its encoding.
    static func record<T: Decodable>(_ type: T.Type, depth: Int) throws -> (value: T, schema: [String: JSONValue]) {
        guard depth < maximumDepth else { throw CodableSchema.Unsupported() }
        if let known = placeholder(of: type) { return known }
        if let iterable = T.self as? any (CaseIterable & Encodable).Type, let cases = encodedCases(of: iterable),
            let first = cases.first?.value as? T
        {
            return (first, ["enum": .array(cases.map(\.json))])
        }
        let recorder = Recorder(depth: depth + 1)
        let value = try T(from: recorder)
        return (value, recorder.schema)
    }

    /// The schema this decoder recorded.
    var schema: [String: JSONValue] {
        var schema = shape
        if shape["type"] == .string("object") {
            schema["properties"] = .object(properties)
            let required = properties.keys.filter { !optional.contains($0) }.sorted()
            if !required.isEmpty { schema["required"] = .array(required.map(JSONValue.string)) }
        }
        if shape["type"] == .string("array"), let items {
            schema["items"] = .object(itemsMayBeNull ? ValueSchema.optional(items) : items)
        }
        return schema
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard shape.isEmpty else { throw CodableSchema.Unsupported() }
        shape = ["type": .string("object")]
        return KeyedDecodingContainer(KeyedRecorder<Key>(recorder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard shape.isEmpty else { throw CodableSchema.Unsupported() }
        shape = ["type": .string("array")]
        return UnkeyedRecorder(recorder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueRecorder(recorder: self)
    }

    /// The value of a leaf type `JSONEncoder` writes itself, or that the package already describes.
    private static func placeholder<T>(of type: T.Type) -> (value: T, schema: [String: JSONValue])? {
        let found: (Any, [String: JSONValue])? =
            if let scalar = type as? any ScalarRepresentable.Type {
                codableMember(of: scalar)
            } else if type is Decimal.Type {
                (Decimal(0), ["type": .string("number")])
            } else {
                // A width of integer the package stores none of (`Int128`).
                (type as? any FixedWidthInteger.Type).map { integerPlaceholder($0) }
            }
        guard let (value, schema) = found, let typed = value as? T else { return nil }
        return (typed, schema)
    }

    private static func codableMember<S: ScalarRepresentable>(of type: S.Type) -> (Any, [String: JSONValue]) {
        let (value, schema) = type.codableMember
        return (value, schema)
    }

    private static func integerPlaceholder<I: FixedWidthInteger>(_ type: I.Type) -> (Any, [String: JSONValue]) {
        (I.zero, ValueSchema.integer(I.self))
    }

    /// Each case and its encoding, as `JSONEncoder` writes it; `nil` when one does not encode.
    private static func encodedCases<C: CaseIterable & Encodable>(of type: C.Type) -> [(value: C, json: JSONValue)]? {
        var cases: [(value: C, json: JSONValue)] = []
        for value in type.allCases {
            guard let data = try? JSONEncoder().encode(value), let json = try? JSONParser.parse(Array(data)) else {
                return nil
            }
            cases.append((value, json))
        }
        return cases
    }
}

private struct KeyedRecorder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let recorder: Recorder
    var codingPath: [any CodingKey] { recorder.codingPath }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }

    func decodeNil(forKey key: Key) throws -> Bool {
        recorder.optional.insert(key.stringValue)
        return false
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let (value, schema) = try Recorder.record(type, depth: recorder.depth)
        let name = key.stringValue
        recorder.properties[name] = .object(recorder.optional.contains(name) ? ValueSchema.optional(schema) : schema)
        return value
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        throw CodableSchema.Unsupported()
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw CodableSchema.Unsupported()
    }

    func superDecoder() throws -> any Decoder { throw CodableSchema.Unsupported() }

    func superDecoder(forKey key: Key) throws -> any Decoder { throw CodableSchema.Unsupported() }
}

private struct UnkeyedRecorder: UnkeyedDecodingContainer {
    let recorder: Recorder
    var codingPath: [any CodingKey] { recorder.codingPath }
    var count: Int? { nil }
    /// One element is asked for, to learn the element type; then the array ends.
    var isAtEnd: Bool { recorder.items != nil }
    var currentIndex: Int { recorder.items == nil ? 0 : 1 }

    mutating func decodeNil() throws -> Bool {
        recorder.itemsMayBeNull = true
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (value, schema) = try Recorder.record(type, depth: recorder.depth)
        recorder.items = schema
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        throw CodableSchema.Unsupported()
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw CodableSchema.Unsupported()
    }

    mutating func superDecoder() throws -> any Decoder { throw CodableSchema.Unsupported() }
}

private struct SingleValueRecorder: SingleValueDecodingContainer {
    let recorder: Recorder
    var codingPath: [any CodingKey] { recorder.codingPath }

    func decodeNil() -> Bool {
        recorder.optional.insert("")
        return false
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        guard recorder.shape.isEmpty else { throw CodableSchema.Unsupported() }
        let (value, schema) = try Recorder.record(type, depth: recorder.depth)
        recorder.shape = recorder.optional.contains("") ? ValueSchema.optional(schema) : schema
        return value
    }
}
