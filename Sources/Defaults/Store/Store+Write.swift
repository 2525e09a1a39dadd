import Foundation

// The store's decisions about a write, each under its lock: the suite (`Suite+Write.swift`) asks,
// then tells observers and reports after the lock. There are two write paths: the one-key path
// (`Suite.setValue`), tried first in place (`writeInPlace`: a value with no references, into the
// key's box, no JSON made) and then by the value's JSON (`commitOne`); and the general commit
// (`commit`: any number of keys, transactions, layers, refusals), which the one-key path hands
// over to whenever it cannot decide alone. Both JSON tiers make each key's decisions in one body,
// `State.applyWrite`.
extension Store {
    /// What ``commitOne(_:named:decoded:)`` did.
    enum OneKeyCommit {
        /// A transaction is open on this suite, or system files or refusals are in play: the write
        /// takes the general path.
        case general
        /// The stored value was already the new one.
        case unchanged
        /// `isReported` is false when observers are not told (the key has an override).
        case changed(isReported: Bool, schedulesFlush: Bool)
    }

    /// A one-key write in place (see ``State/writeInPlace(of:_:savingOldTo:observers:writer:encoder:commitsLater:)``),
    /// when nothing needs its JSON now: no transaction open, no system file, override or refusal,
    /// no whole-suite observers.
    ///
    /// A key with observers that take its values as bytes is written too: the value the write
    /// replaces is copied to `old`, and `observers` set to them when it changed.
    // Inlined into the suite's write: a call of its own cost the hot path instructions.
    @inline(__always)
    func writeInPlace(
        of name: HashedName,
        _ value: UnsafeRawPointer,
        savingOldTo old: inout InPlaceWriter.ValueBytes,
        observers: inout (any Defaults.ObserverSlot)?,
        writer: InPlaceWriter,
        encoder: () -> ValueCoding.NativeEncoder
    ) -> State.InPlaceOutcome {
        state.withLock { state in
            state.writeInPlace(
                of: name,
                value,
                savingOldTo: &old,
                observers: &observers,
                writer: writer,
                encoder: encoder
            )
        }
    }

    /// Stores `new` (`nil` removes) under `name` as one change: the general path for one key, with
    /// each of the state's tables searched once.
    ///
    /// - Returns: What it did; the old stored and decoded values, the key's observers and the
    ///   whole state's, for the caller to tell after the lock.
    // Inlined into the suite's read or write: a call of its own cost the hot path instructions.
    @inline(__always)
    func commitOne(
        _ new: JSONValue?,
        named hashedName: HashedName,
        decoded: CacheEntry?
    ) -> (OneKeyCommit, JSONValue?, CacheEntry?, (any Defaults.ObserverSlot)?, (any Defaults.ObserverSlot)?) {
        state.withLock { $0.commitOne(new, named: hashedName, decoded: decoded) }
    }

    /// Commits the changes `makeWrites` computes from the stored values, as one change.
    ///
    /// `decoded`, for a write of one key, is the written value to keep as the decoded one; with
    /// `removesEverything` (a `removeAll()`), the next commit removes every key the backend holds.
    ///
    /// - Parameters:
    ///   - all: Every change made, reported or not, for the caller to release after the lock: the
    ///     old decoded values may be instances of classes of the user's, whose `deinit` must not
    ///     run under it.
    ///   - refused: The writes refused, for the caller to report.
    /// - Returns: The changes to report, whether the caller must arm the timer, and the whole
    ///   state's observers; `nil` when nothing changed.
    func commit(
        _ makeWrites: ([String: JSONValue]) -> [String: JSONValue?],
        decoded: CacheEntry?,
        commitsLater: Bool,
        removesEverything: Bool,
        all: inout [String: Defaults.StoredChange],
        refused: inout [(name: String, refusal: Defaults.Suite.WriteRefusal)]
    ) -> (changes: [String: Defaults.StoredChange], flush: Bool, suiteObservers: (any Defaults.ObserverSlot)?)? {
        state.withLock { state in
            state.commit(
                makeWrites,
                decoded: decoded,
                commitsLater: commitsLater,
                removesEverything: removesEverything,
                all: &all,
                refused: &refused
            )
        }
    }

    /// Keeps `first`, a write refused now, for the next `synchronize()` to throw, unless one is
    /// kept already.
    func rememberRefusal(_ first: Defaults.StorageError?) {
        state.withLock { $0.flushing.rememberRefusal(first) }
    }

    /// Takes in `current`, what a write-through backend holds for `name` now.
    ///
    /// - Returns: The decoded value forgotten, for the caller to release after the lock.
    func takeWrittenThrough(_ current: JSONValue?, named name: String) -> CacheEntry? {
        state.withLock { state -> CacheEntry? in
            guard state.values[name] != current else { return nil }
            state.values[name] = current
            state.generation &+= 1
            return state.table.forgetDecoded(name)
        }
    }

    // MARK: - Transactions and overrides

    /// Opens a transaction on `suite`: reads consult the task-local scope from now on.
    func openTransaction(on suite: Defaults.Suite, isExclusive: Bool) -> TransactionScope {
        let parent = TransactionScope.current
        let snapshot = state.withLock { state in
            state.openTransactions += 1
            return state.values
        }
        return TransactionScope(suite: suite, snapshot: snapshot, parent: parent, isExclusive: isExclusive)
    }

    /// Closes a transaction ``openTransaction(on:isExclusive:)`` opened.
    func closeTransaction() {
        state.withLock { $0.openTransactions -= 1 }
    }

    /// Takes the writes a system file's lock or a read-only file refuses out of `writes`.
    ///
    /// - Returns: Those that would have changed something, for the caller to report.
    func refuse(_ writes: inout [String: JSONValue?]) -> [(name: String, refusal: Defaults.Suite.WriteRefusal)] {
        state.withLock { $0.refuse(&writes) }
    }

    /// Changes this run's overrides with `change`; they are looked up afresh after it.
    func changeOverrides(_ change: (inout Overrides) -> Void) {
        state.withLock { state in
            var overrides = state.layered.overrides ?? Overrides()
            change(&overrides)
            overrides.reset()
            // None at all keeps reads on their fastest path.
            state.layered.overrides = overrides.isEmpty ? nil : overrides
        }
    }
}

extension Store.State {
    /// A write of one key by the fast path, decided.
    ///
    /// ``Store/commitOne(_:named:decoded:)`` asks it under the lock. `.general` when the write
    /// needs the general path (a transaction, a layer that checks writes, a secret's name).
    @inline(__always)
    mutating func commitOne(
        _ new: JSONValue?,
        named hashedName: Defaults.Suite.HashedName,
        decoded: Defaults.Suite.CacheEntry?
    ) -> (
        Store.OneKeyCommit, JSONValue?, Defaults.Suite.CacheEntry?, (any Defaults.ObserverSlot)?,
        (any Defaults.ObserverSlot)?
    ) {
        if openTransactions > 0 || !layered.layering.isDisjoint(with: .checkedByWrites)
            || layered.layering.contains(.secrets) && layered.secrets!.contains(hashedName.text)
        {
            return (.general, nil, nil, nil, nil)
        }
        let outcome = applyWrite(
            new,
            named: hashedName,
            decoded: decoded,
            marksChanged: mode.commitsLater
        )
        guard case .changed(let old, let oldDecoded, let observers) = outcome else {
            // Refusals were ruled out above.
            return (.unchanged, nil, nil, nil, nil)
        }
        generation &+= 1
        let schedulesFlush = mode.commitsLater && flushing.machine.changed()
        let isReported = layered.reportsChange(of: hashedName.text)
        return (
            .changed(isReported: isReported, schedulesFlush: schedulesFlush), old, oldDecoded, observers,
            suiteObservers
        )
    }
}
