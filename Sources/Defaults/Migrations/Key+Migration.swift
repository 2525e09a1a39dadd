extension Defaults.Key {
    /// Creates a key whose value earlier versions stored under other names: a rename.
    ///
    /// When the key is created, a value found under a former name is read through at once, and
    /// moved to `name` (the first former name that holds one wins) once per store, under the
    /// file's exclusive lock, with the migrations of the other keys created meanwhile (see
    /// "When your settings change shape"); the store records that it ran. A value already stored
    /// under `name` is kept, and the former names' values are removed; so is a value an old
    /// version writes under a former name after that, the next time the key is created. (When no
    /// former name holds a value and `name` does, or the store records migrations already, there
    /// is nothing to move: nothing is written or recorded.) A former
    /// value that is not a value of `Value` is not moved: it is reported
    /// (``Defaults/StorageError/migrationFailed(migration:reason:)``), nothing changes, and the
    /// migration runs again the next time.
    ///
    /// While the move cannot be made — the file is read-only, a system file locks one of the
    /// names — and while it is not final (`isFinal: false`, a rolling upgrade: old versions still
    /// run beside this one and write the former names), nothing is moved: the key reads its own
    /// stored value once it has one, and until then the former name's value, following each
    /// change of it live (observers of the key are told).
    ///
    /// ```swift
    /// static let fontSize = Key<Int>("editor.fontSize", default: 13, formerly: ["fontSize"])
    /// ```
    ///
    /// - Parameters:
    ///   - name: The name in the suite; any non-empty string. An empty name stops the program.
    ///   - defaultValue: The value read while nothing is stored.
    ///   - suite: Where the value is stored.
    ///   - summary: One line saying what the key means.
    ///   - formerly: The names earlier versions stored the value under, newest first. An empty
    ///     name stops the program, as an empty `name` does.
    ///   - isFinal: Whether to move the value now; `false` while old versions still run.
    public convenience init(
        _ name: String,
        default defaultValue: Value,
        suite: Defaults.Suite = .standard,
        summary: String? = nil,
        formerly: [String],
        isFinal: Bool = true
    ) {
        precondition(!formerly.contains(where: \.isEmpty), "Defaults.Key: a former name cannot be empty")
        let hashedName = Defaults.Suite.HashedName(name)
        // The one look a program whose migrations ran pays: nothing to move (``declareMigration``
        // asks it too). Asked before the key is made, so that `self.init` is the last use of
        // `suite` and `formerly` when it says so: using an initializer's arguments after handing
        // them on costs a retain and a release of each (the suite's on the slow path, as it is
        // weakly referenced), a fifth of what a key whose migration ran adds to opening.
        if isFinal, suite.isMigrationSettled(hashedName, formerly: formerly) {
            self.init(
                name,
                default: defaultValue,
                suite: suite,
                summary: summary,
                hashedName: hashedName,
                formerNames: formerly,
                declaredMigration: (nil, isFinal)
            )
            return
        }
        self.init(
            name,
            default: defaultValue,
            suite: suite,
            summary: summary,
            hashedName: hashedName,
            formerNames: formerly,
            declaredMigration: (nil, isFinal)
        )
        suite.declareMigration(
            of: hashedName,
            formerly: formerly,
            convertsFrom: nil,
            isFinal: isFinal,
            readsAsNew: { ValueCoding.decode($0, as: Value.self) != nil },
            make: { id in
                Self.declaredMigration(id: id, name: name, formerly: formerly, from: Value.self, transform: nil)
            }
        )
    }

    /// Creates a key whose value earlier versions stored as another type, and maybe under other
    /// names: a type change.
    ///
    /// When the key is created, the value under `name` (when `formerly` is empty or names it) or
    /// under the first former name that holds one is converted by `transform` and stored under
    /// `name`, once per store, under the file's exclusive lock, with the migrations of the other
    /// keys created meanwhile; the store records that it ran. A value under `name` that is already
    /// of type `Value` is kept as it is (the new type is tried first there: give a type change
    /// whose old values also read as the new type a new name); a value under a former name is
    /// read as `Old` first. One that is neither, or a `transform` that throws, changes nothing: it is reported
    /// (``Defaults/StorageError/migrationFailed(migration:reason:)``), the old value stays
    /// readable under its old name, and the migration runs again the next time. As for a rename,
    /// nothing is stored while the file is read-only, a system file locks a name, or `isFinal` is
    /// `false`: the key reads the converted value in memory, and follows the old one live.
    ///
    /// ```swift
    /// enum Theme: String, Defaults.Serializable { case light, dark, system }
    /// static let theme = Key<Theme>("theme", default: .system, formerly: ["darkMode"]) { (dark: Bool) in
    ///     dark ? .dark : .light
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - name: The name in the suite; any non-empty string. An empty name stops the program.
    ///   - defaultValue: The value read while nothing is stored.
    ///   - suite: Where the value is stored.
    ///   - summary: One line saying what the key means.
    ///   - formerly: The names earlier versions stored the value under, newest first; empty when
    ///     only the type changed. An empty name stops the program, as an empty `name` does.
    ///   - isFinal: Whether to store the converted value now; `false` while old versions still run.
    ///   - transform: Makes the new value from the old one; it must not use the suite. It is
    ///     always handed the old value, and may be called more than once (to read the value
    ///     through in each process that opens the store before the move, and again by the one
    ///     that moves it): keep it free of side effects.
    public convenience init<Old: Defaults.Serializable>(
        _ name: String,
        default defaultValue: Value,
        suite: Defaults.Suite = .standard,
        summary: String? = nil,
        formerly: [String] = [],
        isFinal: Bool = true,
        migrating transform: @escaping @Sendable (Old) throws -> Value
    ) {
        precondition(!formerly.contains(where: \.isEmpty), "Defaults.Key: a former name cannot be empty")
        let hashedName = Defaults.Suite.HashedName(name)
        // As for a rename (and asked before the key is made for the same reason), when the key's
        // own name is no former one (a value there may be an older form an old version stored
        // after the conversion ran: ``declareMigration`` looks).
        if isFinal, !formerly.isEmpty, !formerly.contains(name),
            suite.isMigrationSettled(hashedName, formerly: formerly)
        {
            self.init(
                name,
                default: defaultValue,
                suite: suite,
                summary: summary,
                hashedName: hashedName,
                formerNames: formerly,
                declaredMigration: (Old.self, isFinal)
            )
            return
        }
        self.init(
            name,
            default: defaultValue,
            suite: suite,
            summary: summary,
            hashedName: hashedName,
            formerNames: formerly,
            declaredMigration: (Old.self, isFinal)
        )
        // The type's name without the reflection `String(describing:)` goes through.
        let convertsFrom = _typeName(Old.self, qualified: false)
        suite.declareMigration(
            of: hashedName,
            formerly: formerly,
            convertsFrom: convertsFrom,
            isFinal: isFinal,
            readsAsNew: { ValueCoding.decode($0, as: Value.self) != nil },
            make: { id in
                Self.declaredMigration(id: id, name: name, formerly: formerly, from: Old.self, transform: transform)
            }
        )
    }
}

extension Defaults.Key {
    /// The migration a key declares: its value carried over from its former names, converted
    /// from `Old` by `transform` when there is one.
    static func declaredMigration<Old: Defaults.Serializable>(
        id: String,
        name: String,
        formerly: [String],
        from: Old.Type,
        transform: (@Sendable (Old) throws -> Value)?
    ) -> Defaults.Migration {
        // What a value stored in an older form reads as now. Under the key's own name a value of
        // the new type is kept as it is (a newer version, a config tool or a backup wrote it), so
        // it is tried first; under a former name only older versions wrote, so the old type is.
        let convert: @Sendable (String, JSONValue) throws -> JSONValue = { stored, json in
            if stored == name, ValueCoding.decode(json, as: Value.self) != nil { return json }
            if let transform, let old = ValueCoding.decode(json, as: Old.self) {
                guard let new = ValueCoding.encode(try transform(old)) else {
                    throw Defaults.MigrationError("the value made from \"\(stored)\" cannot be stored as \(Value.self)")
                }
                return new
            }
            guard ValueCoding.decode(json, as: Value.self) != nil else {
                let expected = transform == nil ? "\(Value.self)" : "\(Old.self) or \(Value.self)"
                throw Defaults.MigrationError("\"\(stored)\" holds \(json), which is not a value of type \(expected)")
            }
            return json
        }
        return Defaults.Migration(id) { values in
            // The key's own name holds an older form only when no other name held the value before.
            if transform != nil, formerly.isEmpty || formerly.contains(name), let own = values[name] {
                values[name] = try convert(name, own)
            }
            for former in formerly where former != name {
                guard let old = values[former] else { continue }
                // A value the new version stored is never replaced by an old one.
                if values[name] == nil { values[name] = try convert(former, old) }
                values.removeValue(named: former)
            }
        }
    }
}
