/// The ids a store's record of migrations lists, found by the key name each may be a key's
/// migration of: a key asks whether its migration ran by the name it hashed already, and for a
/// rename from one name no id is made.
///
/// A key's migration id is `<name> from <former names, joined by ", ", or the name> [(<type>)]`
/// (``Defaults/Suite/migrationID(name:formerly:convertsFrom:)``). A name may itself hold
/// `" from "`, so an id is listed under every name it could begin with.
struct RecordIndex: Sendable {
    /// Each listing: an id, and what follows `" from "` in it.
    private var listings: [(id: String, rest: String)] = []
    /// The listings of each name.
    private var byName: [Defaults.Suite.HashedName: [Int]] = [:]

    init(_ ids: [String]) {
        listings.reserveCapacity(ids.count)
        byName.reserveCapacity(ids.count)
        for id in ids {
            var text = id
            text.withUTF8 { bytes in
                guard bytes.count > 6 else { return }
                // Every place " from " begins, past the first byte (a name is not empty).
                var start = 1
                while start <= bytes.count - 6 {
                    defer { start += 1 }
                    guard bytes[start] == 0x20, bytes[start + 1] == 0x66, bytes[start + 2] == 0x72,
                        bytes[start + 3] == 0x6F, bytes[start + 4] == 0x6D, bytes[start + 5] == 0x20
                    else { continue }
                    let name = String(decoding: UnsafeBufferPointer(rebasing: bytes[..<start]), as: UTF8.self)
                    let rest = String(decoding: UnsafeBufferPointer(rebasing: bytes[(start + 6)...]), as: UTF8.self)
                    listings.append((id, rest))
                    byName[Defaults.Suite.HashedName(name), default: []].append(listings.count - 1)
                }
            }
        }
    }

    /// Whether the record lists the migration of the key `name` made of `formerly` and `convertsFrom`.
    func lists(_ name: Defaults.Suite.HashedName, formerly: [String], convertsFrom: String?) -> Bool {
        guard let found = byName[name] else { return false }
        // A rename from one name, the most common: what follows " from " is that name.
        if formerly.count == 1, convertsFrom == nil {
            return found.contains { listings[$0].rest == formerly[0] }
        }
        let id = Defaults.Suite.migrationID(name: name.text, formerly: formerly, convertsFrom: convertsFrom)
        return found.contains { listings[$0].id == id }
    }
}
