import Foundation

// The store's answers to reads, each under its lock: the suite's read paths (`Suite+Access.swift`)
// ask, and decode or report after the lock.
extension Store {
    /// What a read found under the lock.
    ///
    /// Not generic: a generic enum here costs a runtime metadata lookup (and value-witness copies)
    /// on every read of unspecialized generic code.
    enum Lookup: Sendable {
        case absent
        case cached(AnyBox?)
        // The JSON in a box: a JSONValue inline would make this enum too big to return in
        // registers, which every cached read would pay for.
        case decode(Box<JSONValue>, generation: UInt64)
        case uncached(Box<JSONValue>)
        /// The key has overrides for this run, not decoded as the type read yet.
        ///
        /// No payload: an array here would make every copy of this enum on the hot path costlier.
        case overridden
    }

    /// What a read of `name` as the type `typeID` finds: a decoded value kept, JSON to decode, an
    /// override to try, or nothing; inside a transaction of `suite` on this task, the
    /// transaction's view.
    // Inlined into the suite's read or write: a call of its own cost the hot path instructions.
    @inline(__always)
    func lookup(named name: HashedName, typeID: ObjectIdentifier, in suite: Defaults.Suite) -> Lookup {
        state.withLock { $0.lookup(named: name, typeID: typeID, in: suite) }
    }

    /// What `lookup` finds when `name` has an override; `nil` when it has none.
    ///
    /// Out of line, so a read in a run without overrides pays only for the flag.
    @inline(never)
    private static func overrideLookup(_ state: inout State, named name: String, typeID: ObjectIdentifier)
        -> Lookup?
    {
        // A lock wins over this run's overrides: the key reads its system value.
        if state.layered.isLocked(name) { return nil }
        if let entry = state.layered.overrides!.cache[name], entry.type == typeID { return .cached(entry.box) }
        return state.layered.overrides!.candidates(for: name).isEmpty ? nil : .overridden
    }

    /// The first write refused since the last `synchronize()`, forgotten as it is taken.
    func takeRefusal() -> Defaults.StorageError? {
        state.withLock { $0.flushing.takeRefusal() }
    }

    /// Keeps `entry`, decoded from what was stored at `generation`, as the decoded value of `name`,
    /// unless something changed since.
    ///
    /// - Returns: The value kept before, for the caller to release after the lock.
    func keepDecoded(_ entry: CacheEntry, for name: HashedName, ifStillAt generation: UInt64) -> CacheEntry? {
        state.withLock { state -> CacheEntry? in
            guard state.generation == generation else { return nil }
            return state.table.keepDecoded(entry, for: name)
        }
    }

    /// The overrides of `name` still in force, strongest first.
    func overrideCandidates(for name: String) -> [Overrides.Candidate] {
        state.withLock { state in
            state.layered.overrideCandidates(for: name)
        }
    }

    /// Keeps `entry` as the decoded override of `name`.
    func keepOverride(_ entry: CacheEntry, for name: String) {
        state.withLock { state in
            guard state.layered.overrides != nil else { return }
            state.layered.overrides!.cache[name] = entry
        }
    }

    /// Stops `source` from overriding `name`; `false` when it was stopped already.
    func rejectOverride(_ source: Overrides.Source, of name: String) -> Bool {
        state.withLock { state in
            state.layered.overrides?.reject(source, of: name) ?? false
        }
    }

    /// What a read of `name` sees as stored, inside a transaction of `suite` on this task too.
    // Inlined into the suite's read or write: a call of its own cost the hot path instructions.
    @inline(__always)
    func storedValue(named name: String, in suite: Defaults.Suite) -> JSONValue? {
        state.withLock { state in
            if state.openTransactions > 0, let scope = TransactionScope.find(for: suite) {
                let stored = scope.storedValue(named: name, countsRead: !state.layered.isSecret(name))
                return state.layered.seen(name, stored: stored)
            }
            return state.layeredValue(named: name)
        }
    }

    /// Every value reads see as stored, at one instant; inside a transaction of `suite` on this
    /// task, the transaction's view.
    func storedValues(in suite: Defaults.Suite) -> [String: JSONValue] {
        state.withLock { $0.storedValues(in: suite) }
    }

    /// Every value the user's own file holds, without the system files beneath it.
    func userStoredValues(in suite: Defaults.Suite) -> [String: JSONValue] {
        state.withLock { state in
            if state.openTransactions > 0, let scope = TransactionScope.find(for: suite) {
                return scope.storedValues(isUncounted: { state.layered.isSecret($0) })
            }
            return state.values
        }
    }

    /// The layer that sets the stored value `name` now, before any decoding; inside a transaction
    /// of `suite` on this task, the transaction's view.
    func source(ofValueNamed name: String, in suite: Defaults.Suite) -> Defaults.ValueSource {
        let storeFileURL = file?.fileURL
        return state.withLock { $0.source(ofValueNamed: name, in: suite, storeFileURL: storeFileURL) }
    }
}

extension Store.State {
    /// What a read of `name` as the type `typeID` finds.
    ///
    /// A decoded value kept, JSON to decode, an override to try, or nothing; inside a
    /// transaction of `suite` on this task, the transaction's view.
    /// ``Store/lookup(named:typeID:in:)`` asks it under the lock.
    @inline(__always)
    mutating func lookup(
        named name: Defaults.Suite.HashedName,
        typeID: ObjectIdentifier,
        in suite: Defaults.Suite
    ) -> Store.Lookup {
        if layered.layering.contains(.overrides),
            let overridden = Store.overrideLookup(&self, named: name.text, typeID: typeID)
        {
            return overridden
        }
        if openTransactions > 0, let scope = TransactionScope.find(for: suite) {
            // A secret's read is its file's: what is stored under its name is not read.
            let stored = scope.storedValue(named: name.text, countsRead: !layered.isSecret(name.text))
            // A key the transaction has not written reads as it does outside: its decoded
            // value is that of what is stored (or the last good one, when a value of another
            // type was kept out).
            if stored == values[name.text], let index = table.keys.index(forKey: name),
                let box = Self.decodedBox(&table.keys.values[index], as: typeID)
            {
                return .cached(box)
            }
            guard let json = layered.seen(name.text, stored: stored) else { return .absent }
            return .uncached(Defaults.Suite.Box(json))
        }
        if let index = table.keys.index(forKey: name) {
            // The entry is lent in place (`inout`); read as a value, all of it would be
            // copied, and its observers retained and released, on every read.
            if let box = Self.decodedBox(&table.keys.values[index], as: typeID) { return .cached(box) }
        }
        // The decoded value kept is that of what reads see, system files and locks included.
        guard let json = layeredValue(named: name.text) else { return .absent }
        return .decode(Defaults.Suite.Box(json), generation: generation)
    }
}

extension Store.State {
    /// Every value reads see as stored, for ``Store/storedValues(in:)``.
    mutating func storedValues(in suite: Defaults.Suite) -> [String: JSONValue] {
        if openTransactions > 0, let scope = TransactionScope.find(for: suite) {
            let secrets = layered.layering.contains(.secrets) ? layered.secrets : nil
            return layered.seen(stored: scope.storedValues(isUncounted: { secrets?.contains($0) ?? false }))
        }
        // Read first: as an argument, the values' mutating accessor overlapped the call's
        // borrow of `self`, which was copied for it.
        let values = values
        return layered.seen(stored: values)
    }
}
