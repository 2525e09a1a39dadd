import Synchronization

extension Defaults {
    /// The base class of every key; extend it to declare your keys as static members.
    ///
    /// ```swift
    /// extension Defaults.Keys {
    ///     static let quality = Key<Double>("quality", default: 0.8)
    /// }
    /// ```
    public typealias Keys = _AnyKey

    /// A key's name and suite, without its value type.
    ///
    /// Keys are equal and hash alike when they have the same name and equal suites (the same
    /// instance, or suites on the same file).
    public class _AnyKey: Hashable, @unchecked Sendable {  // every stored property is an immutable `let`
        /// The typed key, reachable as `Key` inside `extension Defaults.Keys`.
        public typealias Key = Defaults.Key

        /// The name the value is stored under in the suite's file.
        public let name: String
        /// The suite the key reads and writes through `Defaults[key]`.
        public let suite: Suite
        /// The name with its hash, by which a suite's table of keys is searched.
        let hashedName: Suite.HashedName
        /// A one-line summary of what the key means, for its suite's published schema and
        /// `defaults describe`; `nil` when none was given.
        public let summary: String?
        /// The least and greatest values allowed, as the file stores them; `nil` for any value of
        /// the key's type.
        let storedRange: (lower: JSONValue, upper: JSONValue)?
        /// Whether the key is secret: its value is read from a file in the suite's secrets
        /// directory, never stored, and shown as `<secret>` (see ``Defaults/Key/init(secret:default:suite:summary:)``).
        public let isSecret: Bool
        /// The names the key's value was stored under by earlier versions, which a migration
        /// carries over to ``name`` (see ``Defaults/Key/init(_:default:suite:summary:formerly:isFinal:)``).
        public let formerNames: [String]
        /// The key's own migration: the type it converts from (`nil` for a rename), and whether it is final.
        ///
        /// `nil` when the key declares none. Its id is ``declaredMigrationID``.
        ///
        /// Shown in the suite's published schema.
        let declaredMigration: (convertsFrom: (any Defaults.Serializable.Type)?, isFinal: Bool)?

        /// The name of the type the key's own migration converts from, as its id and the schema say it.
        ///
        /// `nil` for a rename, or when the key declares none. Made when asked: a key whose
        /// migration the store records never needs it.
        var convertsFromName: String? {
            declaredMigration?.convertsFrom.map { _typeName($0, qualified: false) }
        }

        /// The id of the key's own migration, made when asked: a key whose migration the store
        /// records never needs it.
        var declaredMigrationID: String? {
            guard declaredMigration != nil else { return nil }
            return Defaults.Suite.migrationID(name: name, formerly: formerNames, convertsFrom: convertsFromName)
        }

        init(
            name: String,
            suite: Suite,
            summary: String? = nil,
            storedRange: (JSONValue, JSONValue)? = nil,
            isSecret: Bool = false,
            formerNames: [String] = [],
            declaredMigration: (convertsFrom: (any Defaults.Serializable.Type)?, isFinal: Bool)? = nil,
            hashedName: Suite.HashedName? = nil
        ) {
            precondition(!name.isEmpty, "Defaults.Key: a key name cannot be empty")
            self.name = name
            self.suite = suite
            self.hashedName = hashedName ?? Suite.HashedName(name)
            self.summary = summary
            self.storedRange = storedRange
            self.isSecret = isSecret
            self.formerNames = formerNames
            self.declaredMigration = declaredMigration
        }

        /// `name.hashValue`, worked out when the key was made; for the observation module, which
        /// finds the key's observers by it.
        package var nameHash: Int { hashedName.hash }

        /// The JSON Schema of the key's stored value, with its summary and default; `Key` says.
        func schema() -> [String: JSONValue] { [:] }

        /// Removes the stored value, so the key reads its default again.
        public func reset() {
            suite.removeValues(named: [name])
        }

        /// Keys are equal when their names and suites are.
        public static func == (lhs: _AnyKey, rhs: _AnyKey) -> Bool {
            lhs.name == rhs.name && lhs.suite == rhs.suite
        }

        /// Hashes the name and the suite.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(name)
            hasher.combine(suite)
        }
    }

    /// A typed key with a default value.
    ///
    /// Any non-empty string is a valid name, including dots, spaces, `@` and non-ASCII text.
    /// Reading a key with nothing stored returns its default; a stored value that does not decode
    /// as `Value` also reads as the default, and is left untouched in the suite and its file. A
    /// value of another type that arrives while the program runs (a hand edit, another process,
    /// another machine) is reported and kept out: the key goes on reading its last good value.
    public final class Key<Value: Serializable>: _AnyKey, @unchecked Sendable {  // immutable `let`s only
        // NB: a closure for both kinds of default, not a generic enum: reading a generic enum from
        // unspecialized code fetches its runtime metadata on every read of the default.
        private let makeDefault: @Sendable () -> Value
        /// Whether the default is one value rather than a closure's result, so a schema may show it.
        let hasFixedDefault: Bool

        /// Whether `Value`'s stored form reads back as exactly the same value.
        ///
        /// A written value can then be kept as the decoded one. Decided once per key: the check is
        /// a conformance lookup.
        let isLosslessType = Value.self is any LosslessStorable.Type
        /// How a write stores a value of a native type; found once here rather than on each write.
        let nativeEncoder = ValueCoding.nativeEncoder(for: Value.self)
        /// `Box<Value>`, kept so a write that caches its value needs no runtime metadata lookup.
        let boxType = Suite.Box<Value>.self
        /// How a write keeps a lossless value with no references in it as the decoded one, in place.
        let inPlaceWriter = Value.self is any LosslessStorable.Type ? Suite.InPlaceWriter.make(for: Value.self) : nil
        /// Whether a write through the key told its suite the key's type: a value from elsewhere
        /// that is not of it is then kept out (see `Store+ReadTypes.swift`).
        let hasToldType = Atomic<Bool>(false)

        override func schema() -> [String: JSONValue] { ValueSchema.entry(for: self) }

        /// The value the key reads while nothing valid is stored.
        ///
        /// For a key with a dynamic default, each access calls the closure.
        public var defaultValue: Value { makeDefault() }

        /// Creates a key with a fixed default value.
        ///
        /// - Parameters:
        ///   - name: The name in the suite; any non-empty string. An empty name stops the program.
        ///   - defaultValue: The value read while nothing is stored.
        ///   - suite: Where the value is stored.
        public init(_ name: String, default defaultValue: Value, suite: Suite = .standard) {
            self.makeDefault = { defaultValue }
            self.hasFixedDefault = true
            super.init(name: name, suite: suite)
        }

        /// Creates a key with a fixed default value and a summary of what it means.
        ///
        /// The summary shows in the suite's published schema (an editor shows it beside the key)
        /// and in `defaults describe`.
        ///
        /// - Parameters:
        ///   - name: The name in the suite; any non-empty string. An empty name stops the program.
        ///   - defaultValue: The value read while nothing is stored.
        ///   - suite: Where the value is stored.
        ///   - summary: One line saying what the key means.
        public init(_ name: String, default defaultValue: Value, suite: Suite = .standard, summary: String) {
            self.makeDefault = { defaultValue }
            self.hasFixedDefault = true
            super.init(name: name, suite: suite, summary: summary)
        }

        /// Creates a key with a summary and, for a number, the range of values it allows.
        init(
            _ name: String,
            default defaultValue: Value,
            suite: Suite,
            summary: String?,
            storedRange: (JSONValue, JSONValue)?,
            isSecret: Bool = false
        ) {
            self.makeDefault = { defaultValue }
            self.hasFixedDefault = true
            super.init(name: name, suite: suite, summary: summary, storedRange: storedRange, isSecret: isSecret)
            if isSecret { suite.declareSecret(name) }
        }

        /// Creates a key that declares a migration (``Defaults/Key/init(_:default:suite:summary:formerly:isFinal:)``):
        /// the initializer with a summary, keeping the former names and the migration.
        ///
        /// Apart from the one with a range: a program whose every key declares a migration
        /// creates each through this one (`defaults-profile open100-migrated`).
        init(
            _ name: String,
            default defaultValue: Value,
            suite: Suite,
            summary: String?,
            hashedName: Suite.HashedName,
            formerNames: [String],
            declaredMigration: (convertsFrom: (any Defaults.Serializable.Type)?, isFinal: Bool)
        ) {
            self.makeDefault = { defaultValue }
            self.hasFixedDefault = true
            super
                .init(
                    name: name,
                    suite: suite,
                    summary: summary,
                    formerNames: formerNames,
                    declaredMigration: declaredMigration,
                    hashedName: hashedName
                )
        }

        /// Creates a key whose default is computed on every read while nothing is stored.
        ///
        /// The closure is not called when the key is created.
        ///
        /// - Parameters:
        ///   - name: The name in the suite; any non-empty string. An empty name stops the program.
        ///   - suite: Where the value is stored.
        ///   - defaultValue: Computes the default.
        public init(_ name: String, suite: Suite = .standard, default defaultValue: @escaping @Sendable () -> Value) {
            self.makeDefault = defaultValue
            self.hasFixedDefault = false
            super.init(name: name, suite: suite)
        }

        /// Creates a key whose default is computed on every read, with a summary of what it means.
        ///
        /// The closure is not called when the key is created, nor by a published schema, which
        /// shows no default for such a key.
        ///
        /// - Parameters:
        ///   - name: The name in the suite; any non-empty string. An empty name stops the program.
        ///   - suite: Where the value is stored.
        ///   - summary: One line saying what the key means.
        ///   - defaultValue: Computes the default.
        public init(
            _ name: String,
            suite: Suite = .standard,
            summary: String,
            default defaultValue: @escaping @Sendable () -> Value
        ) {
            self.makeDefault = defaultValue
            self.hasFixedDefault = false
            super.init(name: name, suite: suite, summary: summary)
        }

        /// Creates an optional key, whose default is `nil`.
        ///
        /// - Parameters:
        ///   - name: The name in the suite; any non-empty string. An empty name stops the program.
        ///   - suite: Where the value is stored.
        public convenience init<Wrapped>(_ name: String, suite: Suite = .standard) where Value == Wrapped? {
            self.init(name, default: nil, suite: suite)
        }

        /// Creates an optional key, whose default is `nil`, with a summary of what it means.
        ///
        /// - Parameters:
        ///   - name: The name in the suite; any non-empty string. An empty name stops the program.
        ///   - suite: Where the value is stored.
        ///   - summary: One line saying what the key means.
        public convenience init<Wrapped>(_ name: String, suite: Suite = .standard, summary: String)
        where Value == Wrapped? {
            self.init(name, default: nil, suite: suite, summary: summary)
        }
    }
}

extension Defaults.Key where Value: Comparable & Numeric {
    /// Creates a number key that allows only the values in `range`, with a summary.
    ///
    /// The range shows in the suite's published schema, and `defaults write` refuses a value
    /// outside it. Reads are not clamped: a program that writes a value outside the range reads it
    /// back, so check it where it is set.
    ///
    /// ```swift
    /// static let fontSize = Key<Int>("fontSize", default: 13, summary: "Font size in points", range: 6...72)
    /// ```
    ///
    /// - Parameters:
    ///   - name: The name in the suite; any non-empty string. An empty name stops the program.
    ///   - defaultValue: The value read while nothing is stored.
    ///   - suite: Where the value is stored.
    ///   - summary: One line saying what the key means.
    ///   - range: The least and greatest values allowed.
    public convenience init(
        _ name: String,
        default defaultValue: Value,
        suite: Defaults.Suite = .standard,
        summary: String? = nil,
        range: ClosedRange<Value>
    ) {
        guard let lower = ValueCoding.encode(range.lowerBound), let upper = ValueCoding.encode(range.upperBound) else {
            preconditionFailure("Defaults.Key: the bounds of the range of \"\(name)\" cannot be stored")
        }
        self.init(name, default: defaultValue, suite: suite, summary: summary, storedRange: (lower, upper))
    }
}

extension Defaults.Key where Value: Comparable {
    /// The least and greatest values the key allows, as given when it was created; `nil` when any
    /// value of its type is allowed.
    public var range: ClosedRange<Value>? {
        guard let (lower, upper) = storedRange,
            let least = ValueCoding.decode(lower, as: Value.self),
            let greatest = ValueCoding.decode(upper, as: Value.self), least <= greatest
        else { return nil }
        return least...greatest
    }
}

extension Defaults.Key where Value: Equatable {
    /// Whether the key currently reads its default value, stored or not.
    public var isDefaultValue: Bool {
        suite[self] == defaultValue
    }
}

extension Defaults.Key {
    /// `stored` decoded as this key's value, as a read finds it: the default when `stored` is `nil`
    /// or does not decode as `Value`.
    ///
    /// For code that holds stored JSON (from ``Defaults/Suite/storedValue(named:)``, a change's
    /// description or a file of its own) and wants what the key would read from it.
    ///
    /// ```swift
    /// let port = portKey.value(decoding: .number("8080"))  // 8080
    /// ```
    ///
    /// - Parameter stored: The stored JSON, or `nil` for nothing stored.
    /// - Returns: The decoded value, or ``defaultValue``.
    public func value(decoding stored: Defaults.JSONValue?) -> Value {
        guard let stored else { return defaultValue }
        return ValueCoding.decode(stored, as: Value.self) ?? defaultValue
    }
}

extension Defaults.Key where Value == String {
    /// Creates a secret key: its value is the text of the file named after the key in the suite's
    /// ``Defaults/Suite/secretsDirectory`` (`$CREDENTIALS_DIRECTORY`, or a directory given to
    /// ``Defaults/Suite/readSecrets(from:)``), less one line ending at its end; `defaultValue`
    /// while there is no such file.
    ///
    /// Nothing else sets a secret: a value for it in the suite's file or backend, in a system file,
    /// a launch argument or an environment variable (which other processes can read) is passed
    /// over. It is never written to the suite's file or backend: a write is refused and reported
    /// (``Defaults/StorageError/secretKey(key:file:)``). The published schema marks it secret
    /// (`"x-secret": true`), and the `defaults` command shows `<secret>` for its value. The file is
    /// read when the key is created and whenever it changes on disk (it is watched, with the
    /// links on its path); a read costs what any key's read costs. Only a regular file of at most
    /// 64 KiB is read, without ever waiting on it: anything else in its place is reported once
    /// (``Defaults/StorageError/unreadableSecret(key:url:reason:)``), and the key keeps its last
    /// good value meanwhile.
    ///
    /// ```swift
    /// extension Defaults.Keys {
    ///     // systemd: LoadCredential=database.password:/etc/greeter/db-password
    ///     static let databasePassword = Key<String>(secret: "database.password")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - name: The key's name, which is also the file's: not empty, not `.` or `..`, no `/`.
    ///     Another name stops the program.
    ///   - defaultValue: The value read while there is no file.
    ///   - suite: The suite whose secrets directory holds the file.
    ///   - summary: One line saying what the key means.
    public convenience init(
        secret name: String,
        default defaultValue: String = "",
        suite: Defaults.Suite = .standard,
        summary: String? = nil
    ) {
        precondition(Secrets.isValidName(name), "Defaults.Key: the secret \"\(name)\" cannot name a file")
        self.init(name, default: defaultValue, suite: suite, summary: summary, storedRange: nil, isSecret: true)
    }
}

extension Defaults.Key where Value == String? {
    /// Creates a secret key that reads `nil` while there is no file; see
    /// ``Defaults/Key/init(secret:default:suite:summary:)``.
    ///
    /// - Parameters:
    ///   - name: The key's name, which is also the file's: not empty, not `.` or `..`, no `/`.
    ///     Another name stops the program.
    ///   - suite: The suite whose secrets directory holds the file.
    ///   - summary: One line saying what the key means.
    public convenience init(secret name: String, suite: Defaults.Suite = .standard, summary: String? = nil) {
        precondition(Secrets.isValidName(name), "Defaults.Key: the secret \"\(name)\" cannot name a file")
        self.init(name, default: nil, suite: suite, summary: summary, storedRange: nil, isSecret: true)
    }
}
