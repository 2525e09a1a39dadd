import Foundation

extension Defaults.Suite {
    /// The suite that the `UserDefaults` spellings of the API (`suite: UserDefaults`, the subscript
    /// on `UserDefaults`) reach for `userDefaults`.
    ///
    /// One rule: `UserDefaults.standard` is ``standard``, the JSON file; any other instance is an
    /// adapter over it (``init(userDefaults:)``), one per instance, the same each time while it is
    /// in use. So keys made with equal arguments are equal, as they are for suites given directly.
    package static func resolving(_ userDefaults: UserDefaults) -> Defaults.Suite {
        if userDefaults === UserDefaults.standard { return .standard }
        return UserDefaultsAdapters.shared.adapter(for: userDefaults)
    }
}

/// The adapter suite of each `UserDefaults` instance in use, so the instance gets the same one every time.
///
/// Holds the adapters weakly: an adapter lives while a key or anyone else holds it, and it holds its
/// `UserDefaults`, so neither is kept alive by this table. Entries whose adapter is gone are swept
/// out whenever the table has doubled since the last sweep.
final class UserDefaultsAdapters: Sendable {
    static let shared = UserDefaultsAdapters()

    private let table = Lock(Table())

    /// The adapter over `userDefaults`, made now if it has none.
    func adapter(for userDefaults: UserDefaults) -> Defaults.Suite {
        let identifier = ObjectIdentifier(userDefaults)
        if let existing = table.withLock({ $0.adapter(for: identifier) }) { return existing }
        // NB: made outside the lock; if another thread made one meanwhile, that one is kept and this
        // one is released after the lock, as the table's state says.
        let made = Defaults.Suite(userDefaults: userDefaults)
        return table.withLock { $0.insert(made, for: identifier) }
    }

    /// How many entries the table holds, live or not; for tests that it does not grow without bound.
    var entryCount: Int { table.withLock { $0.entries.count } }

    /// The table's state: decides under the lock, keeps no strong reference.
    struct Table: Sendable {
        struct Entry: Sendable {
            weak var adapter: Defaults.Suite?
        }

        var entries: [ObjectIdentifier: Entry] = [:]
        /// Sweep dead entries once the table reaches this size.
        var sweepThreshold = 16

        /// The live adapter recorded for `identifier`, if any.
        ///
        /// A live adapter holds its `UserDefaults`, so the identifier still names that instance;
        /// once the adapter is gone the instance may be too, and its identifier reused.
        func adapter(for identifier: ObjectIdentifier) -> Defaults.Suite? {
            entries[identifier]?.adapter
        }

        /// Records `made` for `identifier` unless a live adapter is there already; returns the one kept.
        mutating func insert(_ made: Defaults.Suite, for identifier: ObjectIdentifier) -> Defaults.Suite {
            if let existing = entries[identifier]?.adapter { return existing }
            entries[identifier] = Entry(adapter: made)
            if entries.count >= sweepThreshold {
                // NB: testing a weak reference takes a strong one for a moment; an adapter released
                // meanwhile is freed here, under the lock, which runs no user code and takes no
                // lock of this table.
                entries = entries.filter { $0.value.adapter != nil }
                sweepThreshold = max(16, entries.count * 2)
            }
            return made
        }
    }
}
