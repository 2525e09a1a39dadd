import Configuration

/// Why a ``DefaultsProvider`` could not read a stored value as the type asked for.
///
/// Thrown by lookups (and delivered as a failure to watchers) for the one key whose stored value
/// has the wrong shape; other keys read as usual, and the stored value stays as it is. The message
/// names the key, the type and the shape found, never the value itself, which may be a secret.
public enum DefaultsProviderError: Error, Equatable, CustomStringConvertible {
    /// The stored value has a shape that does not convert to `type`: text where a number was
    /// wanted, a fraction where an `Int` was, text that is not base64 where bytes were.
    case valueNotConvertible(key: String, type: ConfigType, found: String)

    /// The stored value is one swift-configuration's JSON provider cannot hold at all: an array of
    /// mixed kinds, of objects, of arrays or with `null`s, or a number out of its range.
    case unsupportedValue(key: String, type: ConfigType, found: String)

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .valueNotConvertible(let key, let type, let found):
            return "The value stored for config key '\(key)' is \(found), which does not convert to \(type)."
        case .unsupportedValue(let key, let type, let found):
            return
                "The value stored for config key '\(key)' is \(found), which no config value holds (asked for \(type))."
        }
    }
}
