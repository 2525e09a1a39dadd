import Foundation

// What a store asks of the backends this package ships beyond ``Defaults/Backend``: each protocol
// is one capability a backend has or has not, asked for with `as?` once, when the store is made.
// The store names no concrete backend type.

/// A backend that other code reads and writes directly, without telling (a `UserDefaults`).
///
/// The store reads through it, asking before each read, and writes through it, at once and under
/// the store's lock, so the two orders agree. Nothing waits for a commit, and no exclusive
/// transaction is possible.
protocol WriteThroughBackend: Defaults.Backend {
    /// Every name stored now, whoever stored it.
    var storedNames: [String] { get }

    /// What is stored under `name` now, read as a key of `type` would read it; the backend learns
    /// that `name` is read as `type`.
    func value<Value: Defaults.Serializable>(forKey name: String, readAs type: Value.Type) -> JSONValue?

    /// What is stored under `name` now, read as the last key that read or wrote it.
    func value(forKey name: String) -> JSONValue?

    /// Learns, before `json` is stored under `name`, that it is `value` of its type: how to lay it
    /// out when it is stored, now or by a transaction's commit.
    func willWrite<Value: Defaults.Serializable>(_ value: Value, as json: JSONValue, forKey name: String)

    /// Stores `value` under `name` now (`nil` removes it).
    func set(_ value: JSONValue?, forKey name: String)

    /// Writes what is stored to disk, as `UserDefaults.synchronize()` does.
    func synchronize()
}

/// A backend whose own lock makes a transaction exclusive across processes (the JSON file's):
/// an exclusive transaction runs its body holding the lock, after memory caught up with what is
/// stored, rather than by conditional commits.
///
/// Its reports come from reads made under that lock, which its commits hold too: a report that
/// arrives while a commit runs was read before the commit wrote, so it never overrides the keys the
/// commit wrote.
protocol LockingBackend: Defaults.Backend {
    /// Runs `body` holding the lock, after `catchUp` committed what is pending (returning whether
    /// it committed, and so read what is stored) or, when it did not, after reading and reporting
    /// what changed.
    func exclusively<Value>(
        catchUp: () -> Result<Bool, Defaults.StorageError>,
        _ body: () throws -> Value
    ) throws -> Value

    /// Stores `writes` from inside ``exclusively(catchUp:_:)``'s body.
    ///
    /// - Returns: What it found changed elsewhere, but for the keys written, for the caller to take in.
    func writeLocked(
        _ writes: [String: JSONValue?],
        removesEverything: Bool
    ) throws(Defaults.StorageError) -> [String: JSONValue?]
}

/// A backend that keeps values in a file at a path: what a suite says of where it stores.
protocol FileLocatedBackend: Defaults.Backend {
    /// The file, at the path the suite was given.
    var fileURL: URL { get }
    /// The path as given, normalized: two suites opened on one path share a store.
    var givenPath: String { get }
    /// How many times the file was replaced by this process: for tests.
    var replacementCount: Int { get }

    /// Runs `body` with the file, when found missing or broken, looked at again until it returns:
    /// for tests.
    func holdingBrokenFileRetries<Result>(_ body: () throws -> Result) rethrows -> Result
}
