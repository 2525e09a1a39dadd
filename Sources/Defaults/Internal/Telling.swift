import Dispatch
import Foundation

// Where observers and sinks are told of a change: every place, in this file.
//
// A change reaches them in the shape its path can afford, kept apart for speed (each measured by
// the profiles in `Benchmarks/README.md`, "Profiling"):
// - a one-key write in place, to observers that take values as bytes: the old and new values'
//   bytes (`tellValue`);
// - a one-key write by its JSON: the change's parts, lent one by one (`tellChange`), and an event
//   only when a sink gets every change;
// - everything else — a commit of several keys, a transaction, a `removeAll()`, a change from
//   outside (another process, a system file, a secret's file, a migration read through) — one
//   `SuiteChange` event (`Defaults.deliver`), local on the writing thread (`Delivery`), external
//   on the store's delivery queue (`Store.deliverExternally`).
// Sinks are told in one place, `Defaults.tellSinks`, before observers: a write an observer makes
// is a later change, and reaches the sinks after this one.

extension Defaults.Suite {
    /// Tells `observers`, which take the key's values as bytes, that `name` went from `old` to
    /// `new` by a write in place of this thread.
    @inline(__always)
    func tellValue(
        to observers: any Defaults.ObserverSlot,
        named name: String,
        old: UnsafeRawPointer,
        new: UnsafeRawPointer
    ) {
        observers.deliverValue(
            in: self,
            named: name,
            old: old,
            new: new,
            isPropagationSuppressed: Defaults.Propagation.isSuppressed
        )
    }

    /// Tells the sinks, the key's observers and the suite's that `name` changed by a one-key write
    /// of this thread; nothing when none of them is there.
    @inline(__always)
    func tellChange(
        named name: String,
        old: JSONValue?,
        new: JSONValue?,
        oldDecoded: CacheEntry?,
        newDecoded: CacheEntry?,
        observers: (any Defaults.ObserverSlot)?,
        suiteObservers: (any Defaults.ObserverSlot)?
    ) {
        let toSinks = Defaults.hasEveryChangeSinks
        guard toSinks || observers != nil || suiteObservers != nil else { return }
        let suppressed = Defaults.Propagation.isSuppressed
        // The parts lent one by one, not gathered into a `StoredChange`: that copies each.
        func tell(_ slot: (any Defaults.ObserverSlot)?) {
            slot?
                .deliverChange(
                    in: self,
                    named: name,
                    old: old,
                    new: new,
                    oldDecoded: oldDecoded,
                    newDecoded: newDecoded,
                    isPropagationSuppressed: suppressed
                )
        }
        // The event is made only for sinks: an event inside an optional or an enum's payload is
        // copied and destroyed through runtime value witnesses, which costs more than the rest.
        if toSinks {
            Defaults.tellSinks(
                Defaults.SuiteChange(
                    suite: self,
                    name: name,
                    old: old,
                    new: new,
                    oldDecoded: oldDecoded,
                    newDecoded: newDecoded,
                    isPropagationSuppressed: suppressed
                )
            )
        }
        tell(observers)
        tell(suiteObservers)
    }

    /// Committed local changes on their way to the sinks and observers.
    struct Delivery {
        /// The changes observers are told about.
        let propagated: Defaults.SuiteChange?
        /// The changes made inside `withoutPropagation`, delivered marked as such.
        let silenced: Defaults.SuiteChange?

        /// Hands the events to the sinks and observers, on the calling thread.
        func deliver() {
            if let propagated { Defaults.deliver(propagated) }
            if let silenced { Defaults.deliver(silenced) }
        }
    }
}

extension Defaults {
    /// Hands `event` to every sink, then to its observers, through the type of one of the slots it
    /// carries (see ``ObserverSlot/deliver(_:)``).
    ///
    /// Sinks first: a write an observer makes is a later change, and reaches the sinks after this.
    static func deliver(_ event: SuiteChange) {
        tellSinks(event)
        var door: (any ObserverSlot)?
        event.forEachObserverSlot { slot in if door == nil { door = slot } }
        if let door { type(of: door).deliver(event) }
    }

    /// Hands `event` to every sink that gets every change: the one place sinks are told.
    static func tellSinks(_ event: SuiteChange) {
        guard hasEveryChangeSinks else { return }
        for sink in currentChangeSinks { sink.deliver(event) }
    }
}

extension Store {
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
