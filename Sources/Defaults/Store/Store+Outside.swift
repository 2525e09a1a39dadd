import Dispatch
import Foundation

extension Store {
    /// Makes memory hold `values` (`nil`: removed) from outside, and reports the keys that changed.
    ///
    /// Keys changed here and not committed yet keep their values; the others that changed for
    /// reads make one external change (those someone can be told of: see ``take(_:into:dropping:)``).
    /// With `isWhole`, `values` is everything stored, and keys it lacks are removed (but for those
    /// in `kept`), and its `revision` is taken whatever it is; a report of some keys at a
    /// `revision` no newer than the one memory holds is dropped. The caller keeps reports in order
    /// (``receive(_:)``), so events leave in the order they were applied.
    func absorbOutside(
        _ values: [String: JSONValue?],
        isWhole: Bool,
        revision: UInt64?,
        leaving kept: Set<String> = []
    ) {
        // Everything taken out of memory leaves the lock in `dropped`, and is released after it:
        // an old decoded value may be an instance of a class of the user's, whose `deinit` is user
        // code, and a change nobody is told of is not in the event that would carry it out.
        // Checked before the lock: decoding runs the types' bridges, user code. What was
        // decoded becomes a key's decoded value, or leaves with what is dropped.
        var found = refusedChanges(in: values)
        var dropped: [Defaults.Suite.CacheEntry?] = Array(found.decoded.values) + Array(found.lastGood.values)
        // Out here, not in the closure: each change in it holds its key's observers, and the last
        // reference to an observer that stopped meanwhile may be here. Its release can release a
        // suite, which commits (taking the gate the caller holds), so it happens on the delivery
        // queue with `dropped`.
        var listed: [Store.State.Listed] = []
        let (changes, suiteObservers) = state.withLock { state in
            state.absorb(
                values,
                isWhole: isWhole,
                revision: revision,
                leaving: kept,
                found: found,
                listing: &listed,
                dropping: &dropped
            )
        }
        let observed = listed.compactMap(\.change)
        listed = []
        if !observed.isEmpty { noteActivity(.changedElsewhere(keys: observed.count)) }
        // What was decoded is released with `dropped`, on the delivery queue, not here.
        found = RefusedChanges()
        // Released on the delivery queue, before the event: the caller holds the store's gate
        // (and may hold its commit lock), and a `deinit` of the user's may synchronize.
        // Moved, not copied: a copy left here would keep the values alive until this returns,
        // on this thread, racing the delivery.
        deliverExternally(
            consume changes,
            suiteObservers: consume suiteObservers,
            releasing: consume dropped,
            and: consume observed
        )
        // A former name changed: the keys read through it follow (a rolling upgrade).
        if hasMigrationLayer.load(ordering: .acquiring), changesMigrationSources(values.keys, isWhole: isWhole) {
            refreshMigrationLayer()
        }
    }

    /// Makes the system file at `index` bring `layer` now, and tells the keys whose reads change
    /// as one external change (``SystemFiles`` calls it).
    func replaceSystemLayer(_ index: Int, with layer: SystemLayers.Layer) {
        tell(state.withLock { $0.replaceSystemLayer(index, with: layer) })
    }

    /// Delivers `changes`, read from outside, as one external change event, on the delivery queue.
    ///
    /// `dropped` and `changed` (changes no event carries, and the observers they hold) are
    /// released there too, first: the caller may hold the store's gate or its commit lock, and a
    /// release can run a `deinit` of the user's, or release a suite, which commits. The caller
    /// hands everything over with `consume` (the suite's observers too: an observer that stopped
    /// meanwhile may be held by them alone): a copy it kept would be the last reference once the
    /// delivery is done, and would be released on the caller's thread. A store with no delivery
    /// queue (one in memory, whose callers hold no lock) releases them on the caller's thread.
    func deliverExternally(
        _ changes: consuming [String: Defaults.StoredChange],
        suiteObservers: consuming (any Defaults.ObserverSlot)?,
        releasing dropped: consuming [Defaults.Suite.CacheEntry?] = [],
        and changed: consuming [Defaults.StoredChange] = []
    ) {
        guard let deliveryQueue, !changes.isEmpty || !dropped.isEmpty || !changed.isEmpty else { return }
        // Held by the box, not captured: this frame's copy of a capture outlives the call, and
        // the delivery may be over before it returns.
        let released = Released(consume dropped, consume changed, consume changes, consume suiteObservers)
        deliveryQueue.async { [weak self] in
            // First: the old values go before observers hear of the change, as they did when
            // they were released where they were taken out.
            released.values.removeAll()
            released.changes.removeAll()
            var changes = released.delivered
            released.delivered = [:]
            let suiteObservers = released.suiteObservers
            released.suiteObservers = nil
            // Another process's migration record (the empty name) is no key's change.
            changes[Defaults.Suite.migrationRecordName] = nil
            guard !changes.isEmpty else { return }
            // No suite left means no observer left: an observer holds a key, which holds its suite.
            guard let suite = self?.anySuite else { return }
            let event = Defaults.SuiteChange(
                suite: suite,
                changes: changes,
                origin: .external,
                isPropagationSuppressed: false,
                suiteObservers: suiteObservers
            )
            Defaults.deliver(event)
        }
    }
}

/// Values taken out of a store's state, released on its delivery queue at a moment of its choosing
/// (a closure's capture would keep them until the closure is gone).
private final class Released: @unchecked Sendable {  // touched by the delivery queue alone once made
    var values: [Defaults.Suite.CacheEntry?]
    var changes: [Defaults.StoredChange]
    /// The changes the event carries out.
    var delivered: [String: Defaults.StoredChange]
    /// The suite's observers, as the event carries them.
    var suiteObservers: (any Defaults.ObserverSlot)?
    init(
        _ values: consuming [Defaults.Suite.CacheEntry?],
        _ changes: consuming [Defaults.StoredChange],
        _ delivered: consuming [String: Defaults.StoredChange],
        _ suiteObservers: consuming (any Defaults.ObserverSlot)?
    ) {
        self.values = values
        self.changes = changes
        self.delivered = delivered
        self.suiteObservers = suiteObservers
    }
}
