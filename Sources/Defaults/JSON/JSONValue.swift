#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Defaults {
    /// A JSON value exactly as it sits in a suite's file.
    ///
    /// Numbers keep their text, so an `Int64.max` or a `Float` survives a round trip through the file
    /// without passing through `Double`. Strings compare by their UTF-8 bytes rather than by Unicode
    /// canonical equivalence, so writing a decomposed "é" over a precomposed one is a change.
    ///
    /// Read a suite's stored values in this form with ``Defaults/Suite/storedValue(named:)`` and
    /// ``Defaults/Suite/storedValues()``, for code that must see the JSON itself rather than a typed
    /// value: a bridge to another configuration system, a tool that prints the file.
    ///
    /// ```swift
    /// if case .number(let text)? = suite.storedValue(named: "port") { print(text) }
    /// ```
    public enum JSONValue: Sendable {
        /// JSON `null`.
        case null
        /// JSON `true` or `false`.
        case bool(Bool)
        /// A number, as its text in the file: valid JSON number syntax, never converted.
        case number(String)
        /// A string.
        case string(String)
        /// An array.
        case array([JSONValue])
        /// An object; its members in no particular order.
        case object([String: JSONValue])
    }
}

/// The stored JSON value, by its short name inside the package.
@usableFromInline
typealias JSONValue = Defaults.JSONValue

extension Defaults.JSONValue: Equatable {
    /// Whether two values are the same JSON: numbers and strings by their exact UTF-8 bytes,
    /// objects regardless of member order.
    public static func == (lhs: Defaults.JSONValue, rhs: Defaults.JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null):
            return true
        case (.bool(let a), .bool(let b)):
            return a == b
        case (.number(let a), .number(let b)):
            return utf8Equal(a, b)
        case (.string(let a), .string(let b)):
            return utf8Equal(a, b)
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0 == $1 }
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            for (key, value) in a {
                guard let other = b[key], other == value else { return false }
            }
            return true
        default:
            return false
        }
    }
}

/// Whether two strings have the same UTF-8 bytes (not merely canonically equivalent text).
///
/// `memcmp` over contiguous bytes: comparing the two UTF-8 views element by element made applying
/// a changed 10,000-key file to memory several times slower.
private func utf8Equal(_ lhs: String, _ rhs: String) -> Bool {
    let contiguous = lhs.utf8.withContiguousStorageIfAvailable { left in
        rhs.utf8.withContiguousStorageIfAvailable { right in
            guard left.count == right.count else { return false }
            guard left.count > 0, let a = left.baseAddress, let b = right.baseAddress else { return true }
            return memcmp(a, b, left.count) == 0
        }
    }
    if let contiguous, let equal = contiguous { return equal }
    return lhs.utf8.elementsEqual(rhs.utf8)
}

extension Defaults.JSONValue: Hashable {
    /// Hashes the value consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0)
        case .bool(let value):
            hasher.combine(1)
            hasher.combine(value)
        case .number(let text):
            hasher.combine(2)
            for byte in text.utf8 { hasher.combine(byte) }
        case .string(let text):
            hasher.combine(3)
            for byte in text.utf8 { hasher.combine(byte) }
        case .array(let values):
            hasher.combine(4)
            hasher.combine(values.count)
            for value in values { value.hash(into: &hasher) }
        case .object(let members):
            hasher.combine(5)
            hasher.combine(members.count)
            // Order-independent, like Dictionary's own hash.
            var combined = 0
            for (key, value) in members {
                var inner = Hasher()
                inner.combine(key)
                value.hash(into: &inner)
                combined ^= inner.finalize()
            }
            hasher.combine(combined)
        }
    }
}

extension JSONValue {
    /// The deepest value a key may hold, counting a scalar as one level (511).
    ///
    /// The settings file's top-level object adds one more level, and a file nested deeper than
    /// 512 levels is not read. A typed write of a deeper value is refused with
    /// ``Defaults/StorageError/serializationFailed(key:valueType:)``, and so is such a value given
    /// to ``Defaults/Suite/setStoredValues(_:)``.
    public static let maximumStoredDepth = JSONParser.maximumDepth - 1

    /// Whether this value has more than `limit` levels of nesting, counting a scalar as one
    /// level; it stops as soon as it knows.
    ///
    /// ```swift
    /// let storable = !value.isNested(deeperThan: Defaults.JSONValue.maximumStoredDepth)
    /// ```
    public func isNested(deeperThan limit: Int) -> Bool {
        guard limit > 0 else { return true }
        switch self {
        case .array(let elements):
            return elements.contains { $0.isNested(deeperThan: limit - 1) }
        case .object(let members):
            return members.values.contains { $0.isNested(deeperThan: limit - 1) }
        default:
            return false
        }
    }
}
