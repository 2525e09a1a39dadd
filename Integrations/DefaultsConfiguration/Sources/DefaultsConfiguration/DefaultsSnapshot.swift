import Configuration
import Defaults

/// One state of a suite, as a ``DefaultsProvider`` hands it out: every value as it was at one
/// instant.
///
/// Reading keys from a snapshot never sees a later change, nor half of a transaction. Lookups
/// follow the provider's key mapping and conversions (see ``DefaultsProvider``).
public struct DefaultsSnapshot: ConfigSnapshot, CustomStringConvertible {
    /// Every stored value of the suite at the snapshot's instant, by top-level key, but what a
    /// secret key would answer.
    ///
    /// A secret key's value (``Defaults/Key/init(secret:default:suite:summary:)``: its file's
    /// text) is left out, and so is what the settings file holds under every name the provider
    /// takes for the secret, flat or nested in an object (`{"database": {"password": …}}` for
    /// `database.password`). The snapshot still answers the secret through
    /// ``value(forKey:type:)``, marked secret.
    ///
    /// Left out rather than marked: a mark protects only the code that looks for it, and this is a
    /// plain dictionary that code prints, logs, dumps or encodes whole.
    public let values: [String: Defaults.JSONValue]

    /// The secret keys' values, by name, kept out of ``values``: for lookups alone.
    private let secrets: [String: Defaults.JSONValue]

    /// The name of the provider that took the snapshot.
    public let providerName: String

    let keyMapping: DefaultsProvider.KeyMapping
    let conversion: ValueConversion
    /// Whether a name is a secret key's of the suite: it answers with its value in ``secrets``
    /// (the secret's file) or not at all, and the value is marked secret.
    let isSecret: @Sendable (String) -> Bool

    /// A snapshot of `storedValues`, the suite's, whose secrets it keeps out of ``values``.
    init(
        storedValues: [String: Defaults.JSONValue],
        isSecret: @escaping @Sendable (String) -> Bool,
        keyMapping: DefaultsProvider.KeyMapping,
        conversion: ValueConversion,
        providerName: String
    ) {
        var values = storedValues
        var secrets: [String: Defaults.JSONValue] = [:]
        for (name, value) in storedValues {
            if isSecret(name) {
                secrets[name] = value
                values[name] = nil
            } else if let kept = Self.leavingOutSecrets(of: value, storedUnder: name, isSecret: isSecret) {
                values[name] = kept
            }
        }
        self.values = values
        self.secrets = secrets
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
        let found = keyMapping.resolve(key, joined: joined, read: { secrets[$0] ?? values[$0] }, isSecret: isSecret)
        return try conversion.lookup(found.value, encodedKey: joined, type: type, isSecretKey: found.isSecret)
    }

    /// The provider's name and the number of top-level keys.
    public var description: String { "\(providerName)[\(values.count) values]" }

    /// `value`, stored under `name`, without what it holds at a secret's name nested in it (the
    /// names of the objects on the way joined with `.`); `nil` when it holds none.
    private static func leavingOutSecrets(
        of value: Defaults.JSONValue,
        storedUnder name: String,
        isSecret: (String) -> Bool
    ) -> Defaults.JSONValue? {
        guard case .object(var members) = value else { return nil }
        var changed = false
        for (member, inner) in members {
            let path = name + "." + member
            if isSecret(path) {
                members[member] = nil
                changed = true
            } else if let kept = leavingOutSecrets(of: inner, storedUnder: path, isSecret: isSecret) {
                members[member] = kept
                changed = true
            }
        }
        return changed ? .object(members) : nil
    }
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
