/// The types each key is read (or written) as, so that a value from elsewhere that is none of them
/// (an operator's `etcdctl put` of text for a number, a hand edit that breaks a value) does not
/// take a running program back to the key's default: reads go on seeing the last value that was
/// good, and take the next one.
///
/// Memory still takes the value as stored (so a write, or an exclusive transaction's compare, is
/// made against what the backend holds); only the key's decoded value stays the last good one, and
/// nobody is told of a change. A program that opens on such a value has no good one to keep: the
/// key reads its default, as before.
struct ReadTypes: Sendable {
    /// One type a key is read as.
    struct Reader: Sendable {
        let type: ObjectIdentifier
        /// The type, whose name a report gives: named only then (naming a type costs thousands of
        /// instructions, and every key's first read tells its type).
        let valueType: any Any.Type
        /// The type's name, for the report.
        var typeName: String { String(reflecting: valueType) }
        /// A value decoded as the type; `nil` when it does not decode.
        ///
        /// Runs the type's bridge, user code: never under the state's lock; and the value it
        /// returns is released only where an old value may be (a `deinit` of the user's may call
        /// the suite).
        let decode: @Sendable (JSONValue) -> Defaults.Suite.CacheEntry?
    }

    /// The types the key is read as, the one read last first.
    var readers: [Reader] = []

    /// Notes that the key is read as `Value`, now the type read last.
    mutating func learn<Value: Defaults.Serializable>(_: Value.Type) {
        let id = ObjectIdentifier(Value.self)
        if readers.first?.type == id { return }
        readers.removeAll { $0.type == id }
        let reader = Reader(
            type: id,
            valueType: Value.self,
            decode: { json in ValueCoding.decode(json, as: Value.self).map { .holding($0) } }
        )
        readers.insert(reader, at: 0)
    }

    /// The decoded value of `json` as the first of the key's types it decodes as; `nil` if none.
    func decode(_ json: JSONValue) -> Defaults.Suite.CacheEntry? {
        for reader in readers {
            if let entry = reader.decode(json) { return entry }
        }
        return nil
    }
}

/// What ``Store/refusedChanges(in:)`` found.
struct RefusedChanges {
    /// The values kept out, by name.
    var refused: [String: JSONValue] = [:]
    /// Each value that decoded, by name: kept as the key's decoded value.
    var decoded: [String: Defaults.Suite.CacheEntry] = [:]
    /// For a value kept out: the value memory held before, decoded, for reads to go on seeing.
    var lastGood: [String: Defaults.Suite.CacheEntry] = [:]
    /// A report for each value kept out, to send once memory holds the values: a handler that
    /// reads the stored value when told must find the one it was told of.
    var reports: [Defaults.StorageError] = []
}

extension Store {
    /// Notes that `name` is read (or written) as `Value`.
    func learnReadType<Value: Defaults.Serializable>(_ name: String, as type: Value.Type) {
        readTypes.withLock { $0[name, default: ReadTypes()].learn(Value.self) }
    }

    /// The values of `values` that name a key of `table`, with the types the key is read as.
    ///
    /// The smaller searched by the other's names: a file another process wrote brings thousands
    /// of keys this program never reads, or a program reads many keys of which a report names a few.
    private static func readKeys(
        in values: [String: JSONValue?],
        table: [String: ReadTypes]
    ) -> [(String, JSONValue, ReadTypes)] {
        guard !table.isEmpty else { return [] }
        guard table.count < values.count else {
            return values.compactMap { name, value in
                guard let value, let known = table[name] else { return nil }
                return (name, value, known)
            }
        }
        return table.compactMap { name, known in
            guard let value = values[name] ?? nil else { return nil }
            return (name, value, known)
        }
    }

    /// The values of `values` (changes from elsewhere) that decode as none of the types their key
    /// is read as, with a report of each for the caller to send.
    ///
    /// The decoded values it made are the caller's to keep as the keys' decoded values, or to
    /// release where an old value is released.
    func refusedChanges(in values: [String: JSONValue?]) -> RefusedChanges {
        let checks = readTypes.withLock { Self.readKeys(in: values, table: $0) }
        guard !checks.isEmpty else { return RefusedChanges() }
        // Only values that change memory (a whole report repeats every unchanged one), with
        // what memory holds now.
        let (changed, converted) = state.withLock { $0.changes(of: checks) }
        var found = RefusedChanges()
        for (name, value, old, known) in changed {
            if let entry = known.decode(value) {
                found.decoded[name] = entry
                continue
            }
            found.refused[name] = value
            if let old, let good = known.decode(old) { found.lastGood[name] = good }
            // An older form a migration read through converts (an old version wrote it during a
            // rolling upgrade): no problem, and the converted value reaches observers once the
            // layer is worked out again.
            if converted.contains(name) { continue }
            // Once per change: memory takes the value, so the same value again is no change.
            var text = String(decoding: JSONWriter.compactBytes(value), as: UTF8.self)
            if text.count > 80 { text = String(text.prefix(77)) + "..." }
            let typeName = known.readers.map(\.typeName).joined(separator: " or ")
            found.reports.append(.changeDoesNotDecode(key: name, expectedType: typeName, value: text))
        }
        return found
    }
}

extension Store.State {
    /// Of `checks` (a name, its new value, and the types it is read as), those that change memory,
    /// with what memory holds now; and the names migrations convert, for ``Store/refusedChanges(in:)``.
    ///
    /// Reads of a locked or secret name do not see the stored value: nothing to check there.
    mutating func changes(
        of checks: [(String, JSONValue, ReadTypes)]
    ) -> (changed: [(String, JSONValue, JSONValue?, ReadTypes)], converted: Set<String>) {
        let changed = checks.compactMap { name, value, known -> (String, JSONValue, JSONValue?, ReadTypes)? in
            if layered.isLocked(name) { return nil }
            let old = values[name]
            return old == value ? nil : (name, value, old, known)
        }
        return (changed, layered.migrations?.convertedNames ?? [])
    }
}
