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
        switch source {
        case .locked, .secret: return source
        default: return isDecoded ? source : .defaultValue
        }
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

extension Defaults.Suite {
    /// The directory this suite reads its secret keys' values from: the one given to
    /// ``readSecrets(from:)``, or else `$CREDENTIALS_DIRECTORY` (where systemd puts the credentials
    /// of a service with `LoadCredential=`); `nil` when there is neither.
    ///
    /// A secret key (``Defaults/Key/init(secret:default:suite:summary:)``) reads the file named
    /// after it there.
    public var secretsDirectory: URL? { store.secretsDirectory }

    /// Reads this suite's secret keys from the files in `directory` from now on (a Kubernetes
    /// Secret volume, `/run/secrets`), and reads every secret key again now.
    ///
    /// The files are followed live from then on, as a suite follows its own file: a file replaced
    /// or created, or the directory's `..data` link swapped (how Kubernetes updates a Secret
    /// volume), is read at once, and keys whose values changed are reported to their observers as
    /// one change made elsewhere. A file that exists and cannot be read is reported once through
    /// the error handler (``Defaults/StorageError/unreadableSecret(key:url:reason:)``), and its key
    /// reads its default.
    ///
    /// ```swift
    /// suite.readSecrets(from: URL(fileURLWithPath: "/run/secrets"))
    /// ```
    public func readSecrets(from directory: URL) {
        store.readSecrets(from: directory) { report($0) }
    }

    /// Whether `name` is a secret key of this suite: a key declared with
    /// ``Defaults/Key/init(secret:default:suite:summary:)`` in this process.
    public func isSecret(named name: String) -> Bool {
        store.isSecret(name)
    }
}

extension Defaults.Suite {
    /// Makes `name` a secret key of this suite, read from its file now (see ``Secrets``).
    func declareSecret(_ name: String) {
        store.declareSecret(name) { report($0) }
    }
}
