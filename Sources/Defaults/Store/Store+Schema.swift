/// A key a published schema describes: what a value read for it that does not decode is reported as.
struct DescribedKey: Sendable {
    /// The key's value type, as the report names it.
    let typeName: String
    /// The last stored value reported as not fitting, so each is reported once.
    var reported: JSONValue?
}

extension Store {
    /// Records the keys of a published schema, by name, with their value types.
    func describe(_ typeNames: [String: String]) {
        describedKeys.withLock { table in
            for (name, typeName) in typeNames where table[name]?.typeName != typeName {
                table[name] = DescribedKey(typeName: typeName)
            }
        }
    }

    /// The report of `json`, stored under `name`, not decoding as its key's type; `nil` when no
    /// published schema describes `name`, or this value was reported already.
    func mismatch(named name: String, holding json: JSONValue) -> Defaults.StorageError? {
        // Never a report that would quote a secret.
        if isSecret(name) { return nil }
        return describedKeys.withLock { table -> Defaults.StorageError? in
            guard var entry = table[name], entry.reported != json else { return nil }
            entry.reported = json
            table[name] = entry
            var text = String(decoding: JSONWriter.compactBytes(json), as: UTF8.self)
            if text.count > 80 { text = String(text.prefix(77)) + "..." }
            return .valueDoesNotFitSchema(key: name, expectedType: entry.typeName, value: text)
        }
    }
}
