import Defaults

extension Defaults {
    /// A change to one key: the value before and after.
    ///
    /// A missing value is represented by the key's default: after a reset, ``newValue`` is the
    /// default (for a key with a dynamic default, the closure's value at the time of the change).
    ///
    /// The change of a secret key (`Key(secret:)`) says so (``isSecret``): its description, debug
    /// description and mirror (what `print`, string interpolation and `dump` show) give
    /// `<secret>` for both values, so a change logged whole never shows a password.
    public struct KeyChange<Value: Serializable>: Sendable {
        /// The value before the change.
        public let oldValue: Value
        /// The value after the change.
        public let newValue: Value
        /// Whether the key is a secret: its values are never shown in a description.
        public let isSecret: Bool

        // NB: inlinable, so unspecialized generic code that makes a change (every delivery to an
        // observer) does not look up `KeyChange<Value>`'s metadata a second time inside the call.
        /// Creates a change.
        ///
        /// - Parameters:
        ///   - oldValue: The value before the change.
        ///   - newValue: The value after the change.
        ///   - isSecret: Whether the values are a secret's, never to be shown.
        @inlinable @inline(__always)
        public init(oldValue: Value, newValue: Value, isSecret: Bool = false) {
            self.oldValue = oldValue
            self.newValue = newValue
            self.isSecret = isSecret
        }
    }
}

extension Defaults.KeyChange: Equatable where Value: Equatable {}

extension Defaults.KeyChange: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// "old → new", or "<secret> → <secret>" for a secret key.
    public var description: String {
        guard !isSecret else { return "<secret> → <secret>" }
        return "\(String(describing: oldValue)) → \(String(describing: newValue))"
    }

    /// As ``description``, with the values' debug descriptions.
    public var debugDescription: String {
        guard !isSecret else { return "KeyChange(<secret> → <secret>)" }
        return "KeyChange(\(String(reflecting: oldValue)) → \(String(reflecting: newValue)))"
    }

    /// The two values, or none for a secret key, so `dump` shows no secret.
    public var customMirror: Mirror {
        guard !isSecret else { return Mirror(self, children: ["isSecret": true], displayStyle: .struct) }
        return Mirror(self, children: ["oldValue": oldValue, "newValue": newValue], displayStyle: .struct)
    }
}

extension Defaults.Key {
    /// `stored` decoded as the key's value, or the default when it is missing or does not decode.
    ///
    /// `decoded`, when the suite had it for this type, saves decoding the JSON.
    @usableFromInline
    func value(from stored: JSONValue?, decoded: Defaults.Suite.CacheEntry? = nil) -> Value {
        guard let stored else { return defaultValue }
        if let decoded, decoded.type == ObjectIdentifier(Value.self) {
            guard let box = decoded.box else { return defaultValue }
            return unsafeDowncast(box, to: Defaults.Suite.Box<Value>.self).value
        }
        return decodedSlowly(stored)
    }

    @inline(never)
    private func decodedSlowly(_ stored: JSONValue) -> Value {
        value(decoding: stored)
    }
}
