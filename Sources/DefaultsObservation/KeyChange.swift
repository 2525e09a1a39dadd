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

        /// Creates a change.
        public init(oldValue: Value, newValue: Value) {
            self.oldValue = oldValue
            self.newValue = newValue
        }
    }
}

extension Defaults.KeyChange: Equatable where Value: Equatable {}

extension Defaults.Key {
    /// `stored` decoded as the key's value, or the default when it is missing or does not decode.
    func value(from stored: JSONValue?) -> Value {
        stored.flatMap { ValueCoding.decode($0, as: Value.self) } ?? defaultValue
    }
}
