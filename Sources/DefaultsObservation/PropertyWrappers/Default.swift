import Defaults

/// A property that reads and writes a key, in any class or struct.
///
/// ```swift
/// final class Model {
///     @Default(.quality) var quality
///
///     func lower() {
///         quality -= 0.1              // writes Defaults[.quality]
///         if $quality.isDefaultValue { print("back at the default") }
///     }
/// }
/// ```
///
/// The property holds no value of its own: every instance reads the key's suite, so two models
/// with `@Default(.quality)` see each other's writes at once. `$quality` is the wrapper itself,
/// offering ``reset()``, ``defaultValue``, ``isDefaultValue``, ``updates(initial:)``, ``observe(options:_:)`` and
/// ``key``.
@propertyWrapper
public struct Default<Value: Defaults.Serializable>: Sendable {
    /// The key this property reads and writes.
    public let key: Defaults.Key<Value>

    /// Creates the property for `key`.
    public init(_ key: Defaults.Key<Value>) {
        self.key = key
    }

    /// The key's current value; setting it writes the key's suite.
    public var wrappedValue: Value {
        get { key.suite[key] }
        nonmutating set { key.suite[key] = newValue }
    }

    /// The wrapper itself, reached as `$property`.
    public var projectedValue: Self { self }

    /// The key's default value: what the property reads while nothing is stored.
    ///
    /// For a key with a computed default, the closure runs on each access.
    public var defaultValue: Value { key.defaultValue }

    /// Resets the key to its default.
    public func reset() {
        key.reset()
    }

    /// The key's values as they change; see ``Defaults/updates(_:initial:)->AsyncStream<Value>``.
    ///
    /// - Parameter initial: Whether the stream starts with the current value.
    /// - Returns: A stream of the key's values.
    public func updates(initial: Bool = true) -> AsyncStream<Value> {
        Defaults.updates(key, initial: initial)
    }

    /// Observes the key; see ``Defaults/observe(_:options:handler:)``.
    ///
    /// - Parameters:
    ///   - options: `[.initial]` (the default) calls `handler` once before this method returns.
    ///   - handler: Called with each change.
    /// - Returns: The observation.
    public func observe(
        options: Defaults.ObservationOptions = [.initial],
        _ handler: @escaping @Sendable (Defaults.KeyChange<Value>) -> Void
    ) -> Defaults.Observation {
        Defaults.observe(key, options: options, handler: handler)
    }
}

extension Default where Value: Equatable {
    /// Whether the key currently reads its default value.
    public var isDefaultValue: Bool { key.isDefaultValue }
}
