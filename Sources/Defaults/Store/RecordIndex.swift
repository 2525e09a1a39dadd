/// The ids a store's record of migrations lists, by the key name each may be a key's migration
/// of: so a key asks whether its migration ran with one search of a name it hashed already, and
/// no id is made.
///
/// A key's migration id is `<name> from <former names, joined by ", ", or the name> [(<type>)]`
/// (``Defaults/Suite/migrationID(name:formerly:convertsFrom:)``). A name may itself hold
/// `" from "`, so an id is listed under every name it could begin with.
struct RecordIndex: Sendable {
    /// By name: the ids that may be of that name's key, each with what follows `" from "`.
    private var byName: [Defaults.Suite.HashedName: [(id: String, rest: String)]] = [:]

    init(_ ids: [String]) {
        let separator = Array(" from ".utf8)
        for id in ids {
            let bytes = Array(id.utf8)
            guard bytes.count > separator.count else { continue }
            for start in 1...(bytes.count - separator.count) where bytes[start] == separator[0] {
                guard bytes[start..<start + separator.count].elementsEqual(separator) else { continue }
                let name = Defaults.Suite.HashedName(String(decoding: bytes[..<start], as: UTF8.self))
                let rest = String(decoding: bytes[(start + separator.count)...], as: UTF8.self)
                byName[name, default: []].append((id, rest))
            }
        }
    }

    /// Whether the record lists the migration of the key `name` made of `formerly` and `convertsFrom`.
    func lists(_ name: Defaults.Suite.HashedName, formerly: [String], convertsFrom: String?) -> Bool {
        guard let candidates = byName[name] else { return false }
        // A rename from one name, the most common: what follows " from " is that name.
        if formerly.count == 1, convertsFrom == nil {
            return candidates.contains { $0.rest == formerly[0] }
        }
        let id = Defaults.Suite.migrationID(name: name.text, formerly: formerly, convertsFrom: convertsFrom)
        return candidates.contains { $0.id == id }
    }
}
