import Foundation

extension Defaults.Suite {
    /// The layer that gives what a read of `key` returns now.
    ///
    /// The key is read first, so an override for this run that does not decode as the key's type
    /// is passed over here as reads pass over it; a stored value that does not decode gives
    /// ``Defaults/ValueSource/defaultValue``, as reads return the default then.
    ///
    /// ```swift
    /// print("fontSize comes from \(suite.source(of: .fontSize))")
    /// ```
    ///
    /// - Parameter key: The key; its own suite is ignored, as the subscript ignores it.
    /// - Returns: The layer, highest first among those that set the key.
    public func source<Value: Defaults.Serializable>(of key: Defaults.Key<Value>) -> Defaults.ValueSource {
        let isDecoded = value(named: key.hashedName, as: Value.self) != nil
        let source = source(ofValueNamed: key.name)
        if case .locked = source { return source }
        return isDecoded ? source : .defaultValue
    }

    /// The layer that sets the stored value `name` now, before any decoding.
    ///
    /// Launch arguments and environment variables count until a typed read rejects them (see
    /// ``source(of:)``); a value of the wrong type counts as set.
    ///
    /// - Parameter name: The stored key's name.
    /// - Returns: The layer, highest first among those that set the key.
    public func source(ofValueNamed name: String) -> Defaults.ValueSource {
        store.source(ofValueNamed: name, in: self)
    }
}

extension Defaults {
    /// The layer that gives what a read of `key` returns now, in the key's suite.
    ///
    /// ```swift
    /// print(Defaults.source(of: .fontSize))  // "the system file /etc/xdg/editor/settings.json"
    /// ```
    ///
    /// - Parameter key: The key.
    /// - Returns: See ``Defaults/Suite/source(of:)``.
    public static func source<Value: Serializable>(of key: Key<Value>) -> ValueSource {
        key.suite.source(of: key)
    }
}
