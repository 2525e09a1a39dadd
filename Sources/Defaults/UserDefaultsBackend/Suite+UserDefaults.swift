import Foundation

extension Defaults.Suite {
    /// The suite that the `UserDefaults` spellings of the API (`suite: UserDefaults`, the subscript
    /// on `UserDefaults`) reach for `userDefaults`.
    ///
    /// One rule: `UserDefaults.standard` is ``standard``, the JSON file; any other instance is an
    /// adapter over it (``init(userDefaults:)``), one per instance, the same each time while it is
    /// in use. So keys made with equal arguments are equal, as they are for suites given directly.
    static func resolving(_ userDefaults: UserDefaults) -> Defaults.Suite {
        if userDefaults === UserDefaults.standard { return .standard }
        return UserDefaultsAdapters.shared.adapter(for: userDefaults)
    }
}

extension Defaults.Suite {
    /// Whether this is an adapter over a `UserDefaults` that nothing else holds.
    fileprivate var holdsTheOnlyReferenceToItsUserDefaults: Bool {
        guard case .backend(let custom) = store.backend, let storage = custom.backend as? UserDefaultsBackend else {
            return false
        }
        return storage.holdsTheOnlyReference
    }
}

/// The adapter suite of each `UserDefaults` instance in use, so the instance gets the same one every time.
///
/// An adapter holds its `UserDefaults`, and the table holds the adapter, for as long as anyone else
/// holds either: a key made with the instance, the adapter, or the instance itself. An entry that
/// nobody else can reach any more is released the next time an adapter is made for another instance,
/// so instances that are gone are not kept.
final class UserDefaultsAdapters: Sendable {
    /// The one table of the process.
    static let shared = UserDefaultsAdapters()

    private let table = Lock(Table())

    /// The adapter over `userDefaults`, made now if it has none.
    func adapter(for userDefaults: UserDefaults) -> Defaults.Suite {
        let identifier = ObjectIdentifier(userDefaults)
        if let existing = table.withLock({ $0.adapter(for: identifier) }) { return existing }
        // Made outside the lock; if another thread made one meanwhile, that one is kept.
        let made = Defaults.Suite(userDefaults: userDefaults)
        let (kept, released) = table.withLock { $0.insert(made, for: identifier) }
        // The entries nobody else holds are freed here, after the lock, with the adapter made
        // in vain, if any.
        withExtendedLifetime(released) {}
        return kept
    }

    /// How many entries the table holds; for tests that it does not grow with instances that are gone.
    var entryCount: Int { table.withLock { $0.entries.count } }

    /// The table's state: decides under the lock; what it releases is freed by the caller after it.
    struct Table: Sendable {
        /// The adapter of each instance, by the instance's identity.
        ///
        /// The adapter holds its `UserDefaults`, so an identifier here names a live instance.
        var entries: [ObjectIdentifier: Defaults.Suite] = [:]

        /// The adapter recorded for `identifier`, if any.
        func adapter(for identifier: ObjectIdentifier) -> Defaults.Suite? {
            entries[identifier]
        }

        /// Records `made` for `identifier` unless an adapter is there already, and takes out the
        /// entries nobody else can reach; returns the adapter kept and the entries taken out.
        mutating func insert(
            _ made: Defaults.Suite,
            for identifier: ObjectIdentifier
        ) -> (kept: Defaults.Suite, released: [Defaults.Suite]) {
            if let existing = entries[identifier] { return (existing, [made]) }
            var released: [Defaults.Suite] = []
            for other in Array(entries.keys) {
                guard var adapter = entries.removeValue(forKey: other) else { continue }
                // Only this table holds the adapter, and only the adapter its `UserDefaults`: no key
                // and no one else can reach either again. Nothing else can take a new reference
                // meanwhile: the adapter is reachable only through this table, under its lock.
                if isKnownUniquelyReferenced(&adapter), adapter.holdsTheOnlyReferenceToItsUserDefaults {
                    released.append(adapter)
                } else {
                    entries[other] = adapter
                }
            }
            entries[identifier] = made
            return (made, released)
        }
    }
}

// MARK: - Reading through

// What other code stored in a UserDefaults is not in the suite's memory until read: the suite's
// files ask for it here by name, and this asks whether the suite is over a UserDefaults at all.
extension Defaults.Suite {
    /// Takes in what the UserDefaults under this suite holds for `name` now; nothing over any
    /// other backend.
    @inline(__always)
    func refreshWrittenThrough(_ name: String) {
        guard let storage = store.writeThrough else { return }
        takeWrittenThrough(named: name, current: storage.value(forKey: name))
    }

    /// ``refreshWrittenThrough(_:)``, reading the value as `type` does (a `Date` or `Data` the
    /// UserDefaults holds as itself).
    @inline(__always)
    func refreshWrittenThrough<Value: Defaults.Serializable>(_ name: String, readAs type: Value.Type) {
        guard let storage = store.writeThrough else { return }
        takeWrittenThrough(named: name, current: storage.value(forKey: name, readAs: type))
    }

    /// ``refreshWrittenThrough(_:)`` of each of `names`.
    func refreshWrittenThrough(names: some Sequence<String>) {
        guard let storage = store.writeThrough else { return }
        for name in names { takeWrittenThrough(named: name, current: storage.value(forKey: name)) }
    }

    /// ``refreshWrittenThrough(_:)`` of every name the UserDefaults holds.
    func refreshEverythingWrittenThrough() {
        guard let storage = store.writeThrough else { return }
        for name in storage.storedNames { takeWrittenThrough(named: name, current: storage.value(forKey: name)) }
    }

    /// Takes in `current`, what the UserDefaults holds for `name` now.
    private func takeWrittenThrough(named name: String, current: JSONValue?) {
        let forgotten = store.takeWrittenThrough(current, named: name)
        // Released after the lock: it may hold an instance of a class of the user's.
        _ = forgotten
    }
}
