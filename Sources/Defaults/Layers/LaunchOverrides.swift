extension Defaults {
    /// Settings for another process's run, from typed keys and values: the launch arguments, or
    /// the environment variables, that make it start with them.
    ///
    /// For UI and integration tests that start the program under test, as cookpad's
    /// swift-user-defaults does with `ValueContainer`. Each value is written as the settings file
    /// writes it, so the child reads back exactly the value put in — an `Int` at its extremes, a
    /// `Double` NaN or infinity, a `Date` to the bit, `Data`, a `URL`, an array, a dictionary, a
    /// `Codable` struct, an enum — without the caller knowing the file's format.
    ///
    /// ```swift
    /// var overrides = Defaults.LaunchOverrides()
    /// overrides.set(.fontSize, to: 18)
    /// overrides.set(.lastOpened, to: Date())
    /// overrides.set(.displayName, to: nil)          // an optional key: removed for that run
    ///
    /// let child = Process()
    /// child.arguments = overrides.launchArguments   // ["-displayName", "null", "-fontSize", "18", …]
    /// child.environment = overrides.environment(prefix: "MYAPP_")
    /// ```
    ///
    /// The child reads them as any program does: ``Suite/standard`` takes launch arguments by
    /// itself, another suite after ``Suite/overrideWithLaunchArguments(_:)``, and the environment
    /// after ``Suite/overrideWithEnvironment(prefix:_:)``. Overrides last for that run only and
    /// write nothing to the child's file.
    public struct LaunchOverrides: Sendable, Equatable {
        /// Each key's value as the file writes it, by key name.
        public private(set) var values: [String: JSONValue] = [:]

        /// No overrides.
        public init() {}

        /// Makes `key` read `value` in the child; `nil` for an optional key makes it read `nil`
        /// (as if removed) for that run, whatever the child's file holds.
        ///
        /// A value that has no stored form (a `Codable` value whose encoding fails) is left out.
        ///
        /// - Parameters:
        ///   - key: The key, of any suite: only its name is used.
        ///   - value: The value the child reads.
        public mutating func set<Value: Serializable>(_ key: Key<Value>, to value: Value) {
            if ValueCoding.isEmptyOptional(value) {
                values[key.name] = .null
            } else {
                values[key.name] = ValueCoding.encode(value)
            }
        }

        /// Leaves `key` to the child's own settings again.
        public mutating func remove(_ key: _AnyKey) {
            values[key.name] = nil
        }

        /// The launch arguments, `-name value` for each key in the order of their names: each value
        /// is JSON text, so strings are quoted (`"dark"`), which the child reads as the string.
        ///
        /// A key whose name starts with `-` is left out: as an argument it would start with `--`,
        /// which a program keeps for its own options. Give it through ``environment(prefix:)``.
        public var launchArguments: [String] {
            values.keys.sorted().filter { !$0.hasPrefix("-") }
                .flatMap { name in
                    ["-" + name, values[name]!.description]
                }
        }

        /// The environment variables for ``Suite/overrideWithEnvironment(prefix:_:)`` with `prefix`:
        /// each key's variable (``Suite/environmentVariableName(forKey:prefix:)``) with its value as
        /// JSON text.
        ///
        /// - Parameter prefix: What every variable starts with, as the child passes it.
        /// - Returns: The variables, to merge into the child's environment.
        public func environment(prefix: String) -> [String: String] {
            Dictionary(
                values.map { (Suite.environmentVariableName(forKey: $0.key, prefix: prefix), $0.value.description) },
                uniquingKeysWith: { first, _ in first }
            )
        }
    }

    /// A type whose ``LaunchOverride`` properties are a child process's settings: a test's
    /// configuration, as a struct.
    ///
    /// ```swift
    /// struct EditorLaunch: Defaults.LaunchOverrideSet {
    ///     @Defaults.LaunchOverride(.fontSize) var fontSize = 18
    ///     @Defaults.LaunchOverride(.theme) var theme = Theme.dark
    /// }
    ///
    /// child.arguments = EditorLaunch().launchOverrides.launchArguments
    /// ```
    public protocol LaunchOverrideSet {}

    /// A setting of a child process, as a property of a ``LaunchOverrideSet``.
    @propertyWrapper
    public struct LaunchOverride<Value: Serializable>: Sendable {
        /// The key the child reads the value under.
        public let key: Key<Value>
        /// The value the child reads.
        public var wrappedValue: Value

        /// The setting of `key` to `wrappedValue`.
        public init(wrappedValue: Value, _ key: Key<Value>) {
            self.key = key
            self.wrappedValue = wrappedValue
        }
    }
}

/// A ``Defaults/LaunchOverride`` of any value type, as `LaunchOverrideSet` finds it.
private protocol AnyLaunchOverride {
    func add(to overrides: inout Defaults.LaunchOverrides)
}

extension Defaults.LaunchOverride: AnyLaunchOverride {
    fileprivate func add(to overrides: inout Defaults.LaunchOverrides) {
        overrides.set(key, to: wrappedValue)
    }
}

extension Defaults.LaunchOverrideSet {
    /// Every ``Defaults/LaunchOverride`` property's setting.
    public var launchOverrides: Defaults.LaunchOverrides {
        var overrides = Defaults.LaunchOverrides()
        for child in Mirror(reflecting: self).children {
            (child.value as? any AnyLaunchOverride)?.add(to: &overrides)
        }
        return overrides
    }
}
