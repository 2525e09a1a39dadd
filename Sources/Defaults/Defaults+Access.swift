extension Defaults {
    /// The value of `key` in the key's suite; setting it stores a value.
    ///
    /// ```swift
    /// Defaults[.quality] = 0.5
    /// Defaults[.quality] += 0.1
    /// ```
    public static subscript<Value: Serializable>(key: Key<Value>) -> Value {
        get { key.suite[key] }
        set { key.suite[key] = newValue }
    }

    /// Resets each key to its default by removing its stored value.
    ///
    /// Keys in the same suite are reset as one change.
    public static func reset(_ keys: _AnyKey...) {
        reset(keys)
    }

    /// Resets each key to its default by removing its stored value.
    ///
    /// Keys in the same suite are reset as one change.
    public static func reset(_ keys: [_AnyKey]) {
        var bySuite: [Suite: [String]] = [:]
        for key in keys { bySuite[key.suite, default: []].append(key.name) }
        for (suite, names) in bySuite { suite.removeValues(named: names) }
    }

    /// Removes the values stored under the given names in `suite`, as one change.
    public static func reset(_ names: String..., suite: Suite = .standard) {
        suite.removeValues(named: names)
    }

    /// Removes the values stored under the given names in `suite`, as one change.
    public static func reset(_ names: [String], suite: Suite = .standard) {
        suite.removeValues(named: names)
    }

    /// Removes every value in `suite`, as one change.
    public static func removeAll(suite: Suite = .standard) {
        suite.removeAll()
    }
}
