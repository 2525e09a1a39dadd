import Defaults

/// Where a subscriber listens: one key name in one suite's state (shared by every suite on a file).
struct KeyAddress: Hashable, Sendable {
    let suite: ObjectIdentifier
    /// The name, with its hash worked out once.
    let name: Defaults.Suite.HashedName

    init(suite: ObjectIdentifier, name: String) {
        self.suite = suite
        self.name = Defaults.Suite.HashedName(name)
    }

    init(_ key: Defaults._AnyKey) {
        self.suite = key.suite.stateIdentifier
        self.name = key.hashedName
    }
}
