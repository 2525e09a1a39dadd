/// A `Codable` type that stores itself under its type's name, or under a key it is given.
///
/// Conforming takes one line; every requirement has a default:
///
/// ```swift
/// struct VisualSettings: Codable, DefaultStorable {
///     var themeName: String
/// }
///
/// VisualSettings(themeName: "bright").write()
/// let settings = VisualSettings.read()   // Optional(VisualSettings(themeName: "bright"))
/// VisualSettings.clear()
/// ```
public protocol DefaultStorable: Codable, Sendable {
    /// The name values are stored under when no key is given; the type's name by default.
    static var defaultIdentifier: String { get }
    /// The suite values are stored in; ``Defaults/Suite/standard`` by default.
    static var suite: Defaults.Suite { get }
    /// What ``read(forKey:)`` returns when nothing valid is stored; `nil` by default.
    static var defaultValue: Self? { get }
}

extension DefaultStorable {
    /// The type's name.
    public static var defaultIdentifier: String { String(describing: Self.self) }

    /// The standard suite.
    public static var suite: Defaults.Suite { .standard }

    /// `nil`.
    public static var defaultValue: Self? { nil }

    private static var bridge: Defaults.CodableBridge<Self> { .init() }

    /// Stores this value under `key`, or under ``defaultIdentifier`` when `key` is `nil`.
    public func write(withKey key: String? = nil) {
        let name = key ?? Self.defaultIdentifier
        guard let json = Self.bridge.serialize(self)?.json,
            !json.isNested(deeperThan: JSONValue.maximumStoredDepth)
        else {
            Self.suite.report(.serializationFailed(key: name, valueType: String(reflecting: Self.self)))
            return
        }
        Self.suite.write([name: json])
    }

    /// The value stored under `key` (or ``defaultIdentifier``), or ``defaultValue``.
    public static func read(forKey key: String? = nil) -> Self? {
        guard let json = suite.storedValue(named: key ?? defaultIdentifier),
            let value = bridge.deserialize(Defaults.AnySerializable(json: json))
        else { return defaultValue }
        return value
    }

    /// Removes the value stored under `key`, or under ``defaultIdentifier``.
    public static func clear(forKey key: String? = nil) {
        suite.removeValues(named: [key ?? defaultIdentifier])
    }

    /// Removes the value stored under `key`, or under ``defaultIdentifier``.
    public func clear(forKey key: String? = nil) {
        Self.clear(forKey: key)
    }
}
