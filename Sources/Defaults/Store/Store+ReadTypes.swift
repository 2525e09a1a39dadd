/// The type each key was last read as, so that a value from elsewhere that is not of that type
/// (an operator's `etcdctl put` of text for a number, a hand edit that breaks a value) is kept
/// out: a running program goes on reading the last value that was good, and takes the next one.
///
/// A program that opens on such a value has no good one to keep: the key reads its default, as
/// before.
struct ReadType: Sendable {
    let type: ObjectIdentifier
    /// The type's name, for the report.
    let typeName: String
    /// A value decoded as the type; `nil` when it does not decode.
    ///
    /// Runs the type's bridge, user code: never under the state's lock; and the value it returns
    /// is released only where an old value may be (a `deinit` of the user's may call the suite).
    let decode: @Sendable (JSONValue) -> Defaults.Suite.CacheEntry?
    /// The last value refused, so each is reported once.
    var refused: JSONValue?
}

extension Store {
    /// Notes that `name` was read as `Value`, a stored value decoding as it.
    func learnReadType<Value: Defaults.Serializable>(_ name: String, as type: Value.Type) {
        let id = ObjectIdentifier(Value.self)
        readTypes.withLock { table in
            guard table[name]?.type != id else { return }
            table[name] = ReadType(
                type: id,
                typeName: String(reflecting: Value.self),
                decode: { json in ValueCoding.decode(json, as: Value.self).map { .holding($0) } }
            )
        }
    }

    /// The values of `values` (changes from elsewhere) that do not decode as the type their key
    /// was last read as, which memory does not take; reports each once.
    ///
    /// - Returns: The values refused, and those decoded to find out, by name: kept as the keys'
    ///   decoded values, or released by the caller where an old value is released.
    func refusedChanges(
        in values: [String: JSONValue?]
    ) -> (refused: [String: JSONValue], decoded: [String: Defaults.Suite.CacheEntry]) {
        let checks = readTypes.withLock { table -> [(String, JSONValue, ReadType)] in
            guard !table.isEmpty else { return [] }
            return values.compactMap { name, value in
                guard let value, let known = table[name] else { return nil }
                return (name, value, known)
            }
        }
        guard !checks.isEmpty else { return ([:], [:]) }
        // NB: only values that change memory: a whole report repeats every unchanged one.
        let changed = state.withLock { state in checks.filter { state.tree[$0.0] != $0.1 } }
        var refused: [String: JSONValue] = [:]
        var decoded: [String: Defaults.Suite.CacheEntry] = [:]
        for (name, value, known) in changed {
            if let entry = known.decode(value) {
                decoded[name] = entry
            } else {
                refused[name] = value
            }
        }
        guard !refused.isEmpty else { return ([:], decoded) }
        let reports = readTypes.withLock { table -> [Defaults.StorageError] in
            var reports: [Defaults.StorageError] = []
            for (name, value) in refused.sorted(by: { $0.key < $1.key }) {
                guard var known = table[name], known.refused != value else { continue }
                known.refused = value
                table[name] = known
                var text = String(decoding: JSONWriter.compactBytes(value), as: UTF8.self)
                if text.count > 80 { text = String(text.prefix(77)) + "..." }
                reports.append(.changeDoesNotDecode(key: name, expectedType: known.typeName, value: text))
            }
            return reports
        }
        for report in reports { reportInBackground(report) }
        return (refused, decoded)
    }
}
