import Defaults

/// Every live subscription of this library.
///
/// The subscribers of a key hang on the key in its suite's state (the key's observer slot): the
/// subscriber itself when it is the only one, a ``Bucket`` of them when there are more; those of a
/// whole suite hang on its state. The state is the only index: a write of one key finds them in
/// the search of its state's table it makes anyway, and calls them, with no lock for a lone
/// subscriber and no change event for keys nobody observes; other changes (transactions, resets,
/// changes read from the file) carry the slots of the keys they change, and come here through the
/// slots' type (``Defaults/ObserverSlot/deliver(_:)``) only when they carry any.
///
/// Subscribers tied to an owner that is gone leave when their key is next written, or at the
/// latest at the next sweep: a tie that makes the tied subscribers outnumber max(``sweepFloor``,
/// 2 × those that outlived the previous sweep) sweeps. So the registry never holds more tied
/// subscribers than that bound, and a sweep, O(tied subscribers), comes after at least half as
/// many new ties: O(1) per tie, amortised. The table of tied subscribers is all the registry's
/// lock guards.
///
/// Locks: a suite state's, then a bucket's (while what hangs on a key changes); a delivery takes
/// a bucket's alone.
final class ObserverRegistry: Sendable {
    /// The one registry.
    static let shared = ObserverRegistry()

    /// The tied subscribers held before a sweep at least, so a program with few ties never sweeps.
    static let sweepFloor = 1024

    private struct State {
        /// Every registered subscriber that has ever been tied to an owner, whatever its keys.
        var tied: [ObjectIdentifier: Subscriber] = [:]
        /// How many entries of ``tied`` the last sweep left.
        var tiedAfterSweep = 0
    }

    private let state = Lock(State())

    func add(_ subscriber: Subscriber) {
        subscriber.register()
        // A subscriber of one key notes the bucket it joins, for a removal that leaves the
        // bucket as it hangs (see `remove`).
        let notesBucket = subscriber.otherTargets.isEmpty && subscriber.wholeSuites.isEmpty
        subscriber.forEachTarget { target in
            target.suite.updateObservers(named: target.address.name, hash: target.address.nameHash) { slot in
                let bucket = Self.join(subscriber, &slot)
                if notesBucket { subscriber.joinedBucket = bucket }
            }
        }
        for suite in subscriber.wholeSuites {
            suite.updateSuiteObservers { Self.join(subscriber, &$0) }
        }
    }

    /// Takes `subscriber` off its keys, and out of the table of tied subscribers unless
    /// `isInTiedTable` says a sweep took it out already.
    func remove(_ subscriber: Subscriber, isInTiedTable: Bool = true) {
        guard subscriber.unregister() else { return }
        // A bucket that keeps two subscribers or more after this one leaves still hangs as it
        // is, so leaving it needs no change of what hangs on the key, and not the suite's lock: a
        // bucket no longer hanging has one subscriber at most, so never goes this way.
        let bucket = subscriber.joinedBucket
        subscriber.joinedBucket = nil
        if let bucket, bucket.remove(subscriber, keepingMoreThan: 1) {
            // Taken out: nothing hangs differently.
        } else {
            subscriber.forEachTarget { target in
                target.suite.updateObservers(named: target.address.name, hash: target.address.nameHash) {
                    Self.leave(subscriber, &$0)
                }
            }
        }
        for suite in subscriber.wholeSuites {
            suite.updateSuiteObservers { Self.leave(subscriber, &$0) }
        }
        // Only for subscribers ever tied: the registry's lock on every `invalidate` would make
        // each observe-and-invalidate pair dearer.
        if isInTiedTable && subscriber.mayHaveBeenTied {
            state.withLock { $0.tied[ObjectIdentifier(subscriber)] = nil }
        }
    }

    /// Makes `subscriber` hang on a key (or a state) where `slot` hangs: alone, or in a bucket.
    ///
    /// - Returns: The bucket it joined; `nil` when it hangs alone.
    @discardableResult
    private static func join(_ subscriber: Subscriber, _ slot: inout (any Defaults.ObserverSlot)?) -> Bucket? {
        guard let current = slot else {
            slot = subscriber
            return nil
        }
        if let bucket = current as? Bucket {
            bucket.insert(subscriber)
            return bucket
        }
        guard let other = current as? Subscriber, other !== subscriber else { return nil }
        let bucket = Bucket(other, subscriber)
        slot = bucket
        return bucket
    }

    /// Takes `subscriber` off a key (or a state) where `slot` hangs; a lone subscriber left in a
    /// bucket hangs alone again.
    private static func leave(_ subscriber: Subscriber, _ slot: inout (any Defaults.ObserverSlot)?) {
        guard let current = slot else { return }
        if current === subscriber {
            slot = nil
        } else if let bucket = current as? Bucket {
            switch bucket.remove(subscriber) {
            case .unchanged: break
            case .hang(let last): slot = last
            case .empty: slot = nil
            }
        }
    }

    /// Records a tie of `subscriber` to an owner, and sweeps when tied subscribers exceed the bound.
    func noteTie(of subscriber: Subscriber) {
        let released = state.withLock { state -> [Defaults.Observation] in
            // An observation already stopped is not registered, and must not come back.
            guard subscriber.isRegistered else { return [] }
            state.tied[ObjectIdentifier(subscriber)] = subscriber
            guard state.tied.count > max(Self.sweepFloor, 2 * state.tiedAfterSweep) else { return [] }
            return Self.sweep(&state)
        }
        // Stopped after unlocking: stopping takes the suites' locks, and releasing them frees
        // what their handlers captured. The sweep took them out of the table already.
        for observation in released { observation.stop(isInTiedTable: false) }
    }

    /// Drops every tied subscriber whose owner is gone (or that was stopped) from the table;
    /// returns the observations of the first, to stop once the lock is released.
    private static func sweep(_ state: inout State) -> [Defaults.Observation] {
        var released: [Defaults.Observation] = []
        var gone: [ObjectIdentifier] = []
        for (identifier, subscriber) in state.tied {
            if let observation = subscriber.releaseIfOwnerGone() {
                released.append(observation)
                gone.append(identifier)
            } else if !subscriber.isRegistered {
                gone.append(identifier)
            }
        }
        for identifier in gone { state.tied[identifier] = nil }
        state.tiedAfterSweep = state.tied.count
        return released
    }

    /// Calls every subscriber hanging on the changed keys (and on the whole suite) once: the
    /// changes that do not reach them through a key (transactions, resets, removals, outside
    /// changes), which carry their slots, and which the core hands to the slots' type
    /// (``Defaults/ObserverSlot/deliver(_:)``).
    func deliver(_ change: Defaults.SuiteChange) {
        var subscribers: [Subscriber] = []
        var slots = 0
        change.forEachObserverSlot { slot in
            slots += 1
            if let subscriber = slot as? Subscriber {
                subscribers.append(subscriber)
            } else if let bucket = slot as? Bucket {
                bucket.forEachMember { subscribers.append($0) }
            }
        }
        // A subscriber of several changed keys is told once.
        if slots > 1 {
            var seen: Set<ObjectIdentifier> = []
            subscribers = subscribers.filter { seen.insert(ObjectIdentifier($0)).inserted }
        }
        var released: [Defaults.Observation] = []
        for subscriber in subscribers {
            if let tie = subscriber.releaseIfOwnerGone() {
                released.append(tie)
            } else if !change.isPropagationSuppressed && subscriber.isActive {
                subscriber.deliver(change)
            }
        }
        // Stopped after the calls: stopping runs a debouncer's `onStop`, which cancels a task
        // sleeping on a user-supplied clock.
        for observation in released { observation.invalidate() }
    }

    /// The number of (key, subscriber) entries for keys of `suite`, and of subscribers to the whole
    /// suite; for tests of cleanup.
    func entryCount(for suite: Defaults.Suite) -> Int {
        suite.observerSlots()
            .reduce(0) { count, slot in
                count + ((slot as? Bucket)?.count ?? 1)
            }
    }
}

extension Defaults {
    /// The number of registry entries for `suite`: one per key per live subscription, and one per
    /// live subscription to the whole suite.
    package static func observerEntryCount(for suite: Suite) -> Int {
        ObserverRegistry.shared.entryCount(for: suite)
    }

    /// The fewest tied observations the registry holds before it sweeps those whose owner is gone.
    package static var observerSweepFloor: Int { ObserverRegistry.sweepFloor }
}
