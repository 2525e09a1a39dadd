import Configuration
import Defaults

/// One state of a suite, as a ``DefaultsProvider`` hands it out: every value as it was at one
/// instant.
///
/// Reading keys from a snapshot never sees a later change, nor half of a transaction. Lookups
/// follow the provider's key mapping and conversions (see ``DefaultsProvider``).
public struct DefaultsSnapshot: ConfigSnapshot, CustomStringConvertible {
    /// Every stored value of the suite at the snapshot's instant, by top-level key.
    public let values: [String: Defaults.JSONValue]

    /// The name of the provider that took the snapshot.
    public let providerName: String

    let keyMapping: DefaultsProvider.KeyMapping
    let conversion: ValueConversion
    /// Whether a name is a secret key's of the suite: it answers with its value in ``values``
    /// (the secret's file) or not at all, and the value is marked secret.
    let isSecret: @Sendable (String) -> Bool

    init(
        values: [String: Defaults.JSONValue],
        isSecret: @escaping @Sendable (String) -> Bool,
        keyMapping: DefaultsProvider.KeyMapping,
        conversion: ValueConversion,
        providerName: String
    ) {
        self.values = values
        self.isSecret = isSecret
        self.keyMapping = keyMapping
        self.conversion = conversion
        self.providerName = providerName
    }

    /// The value of `key` as `type` in this snapshot.
    ///
    /// - Parameters:
    ///   - key: The config key.
    ///   - type: The type wanted.
    /// - Returns: The value, or a result with no value when nothing usable is stored.
    /// - Throws: ``DefaultsProviderError`` when the stored value cannot be read as `type`.
    public func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        let joined = key.components.joined(separator: ".")
        let found = keyMapping.resolve(key, joined: joined, read: { values[$0] }, isSecret: isSecret)
        return try conversion.lookup(found.value, encodedKey: joined, type: type, isSecretKey: found.isSecret)
    }

    /// The provider's name and the number of top-level keys.
    public var description: String { "\(providerName)[\(values.count) values]" }
}

extension DefaultsSnapshot: CustomReflectable {
    /// The provider's name and the names of the values, never a value: a secret's may be among
    /// them, and `dump` must not print it.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: ["providerName": providerName, "names": values.keys.sorted()],
            displayStyle: .struct
        )
    }
}
