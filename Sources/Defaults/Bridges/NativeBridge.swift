extension Defaults {
    /// The bridge of the built-in types, which the store converts to JSON itself.
    ///
    /// It passes values through unchanged; you cannot create one for your own types (write a
    /// ``Defaults/Bridge`` instead).
    public struct NativeBridge<Value>: Defaults.Bridge, Sendable {
        /// A native type is stored as itself.
        public typealias Serializable = Value

        /// Returns `value` unchanged.
        public func serialize(_ value: Value?) -> Value? { value }

        /// Returns `object` unchanged.
        public func deserialize(_ object: Value?) -> Value? { object }
    }
}
