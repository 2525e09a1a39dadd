import Defaults

/// Where a subscriber listens: one key name in one suite's state (shared by every suite on a file).
struct KeyAddress: Hashable, Sendable {
    let suite: ObjectIdentifier
    let name: String
    /// The name's hash (`name.hashValue`), worked out once: addresses are looked up for every
    /// change from elsewhere, and the store's table of keys is searched by it.
    let nameHash: Int

    init(suite: ObjectIdentifier, name: String) {
        self.suite = suite
        self.name = name
        self.nameHash = name.hashValue
    }

    init(_ key: Defaults._AnyKey) {
        // The key's hash, worked out when it was declared: hashing the name again was a tenth of
        // an observe-and-invalidate pair.
        self.suite = key.suite.stateIdentifier
        self.name = key.name
        self.nameHash = key.nameHash
    }

    static func == (lhs: KeyAddress, rhs: KeyAddress) -> Bool {
        lhs.nameHash == rhs.nameHash && lhs.suite == rhs.suite && lhs.name == rhs.name
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(suite)
        hasher.combine(nameHash)
    }
}
