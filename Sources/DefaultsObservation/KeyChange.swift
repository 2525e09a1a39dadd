import Defaults

extension Defaults {
    /// A change to one key: the value before and after.
    ///
    /// A missing value is represented by the key's default: after a reset, ``newValue`` is the
    /// default (for a key with a dynamic default, the closure's value at the time of the change).
    public struct KeyChange<Value: Serializable>: Sendable {
        /// The value before the change.
        public let oldValue: Value
        /// The value after the change.
        public let newValue: Value

        // NB: inlinable, so unspecialized generic code that makes a change (every delivery to an
        // observer) does not look up `KeyChange<Value>`'s metadata a second time inside the call.
        /// Creates a change.
        @inlinable @inline(__always)
        public init(oldValue: Value, newValue: Value) {
            self.oldValue = oldValue
            self.newValue = newValue
        }
    }
}

extension Defaults.KeyChange: Equatable where Value: Equatable {}

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
