import Defaults
import Synchronization

/// Where a subscriber listens: one key name in one suite's state (shared by every suite on a file).
struct KeyAddress: Hashable, Sendable {
    let suite: ObjectIdentifier
    let name: String

    init(suite: ObjectIdentifier, name: String) {
        self.suite = suite
        self.name = name
    }

    init(_ key: Defaults._AnyKey) {
        self.init(suite: key.suite.stateIdentifier, name: key.name)
    }
}

/// Every live subscription of this library, by the keys it listens to.
///
/// The core store hands each committed change to ``deliver(_:)`` on the writing thread. Lookup is
/// per changed key, so observers of other keys cost nothing.
///
/// Subscribers tied to an owner that is gone leave when their key is next written, or at the
/// latest at the next sweep: a tie that makes the tied subscribers outnumber max(``sweepFloor``,
/// 2 × those that outlived the previous sweep) sweeps. So the registry never holds more tied
/// subscribers than that bound, and a sweep, O(tied subscribers), comes after at least half as
/// many new ties: O(1) per tie, amortised.
final class ObserverRegistry: Sendable {
    /// The one registry; creating it adds it to the core store's change sinks.
    static let shared: ObserverRegistry = {
        let registry = ObserverRegistry()
        Defaults.addChangeSink(Defaults.ChangeSink { change in registry.deliver(change) })
        return registry
    }()

    /// The tied subscribers held before a sweep at least, so a program with few ties never sweeps.
    static let sweepFloor = 1024

    private struct State {
        var buckets: [KeyAddress: [ObjectIdentifier: Subscriber]] = [:]
        /// Subscribers to every key of a suite's state, by that state's identity.
        var wholeSuites: [ObjectIdentifier: [ObjectIdentifier: Subscriber]] = [:]
        /// Every registered subscriber that has ever been tied to an owner, whatever its keys.
        var tied: [ObjectIdentifier: Subscriber] = [:]
        /// How many entries of ``tied`` the last sweep left.
        var tiedAfterSweep = 0
    }

    private let state = Lock(State())

    func add(_ subscriber: Subscriber) {
        state.withLock { state in
            subscriber.isRegistered = true
            for address in subscriber.addresses {
                state.buckets[address, default: [:]][ObjectIdentifier(subscriber)] = subscriber
            }
            for suite in subscriber.wholeSuites {
                state.wholeSuites[suite, default: [:]][ObjectIdentifier(subscriber)] = subscriber
            }
        }
    }

    func remove(_ subscriber: Subscriber) {
        state.withLock { Self.removeEntries(of: subscriber, from: &$0) }
    }

    /// Records a tie of `subscriber` to an owner, and sweeps when tied subscribers exceed the bound.
    func noteTie(of subscriber: Subscriber) {
        let released = state.withLock { state -> [Defaults.Observation] in
            // NB: an observation already stopped is not registered, and must not come back.
            guard subscriber.isRegistered else { return [] }
            state.tied[ObjectIdentifier(subscriber)] = subscriber
            guard state.tied.count > max(Self.sweepFloor, 2 * state.tiedAfterSweep) else { return [] }
            return Self.sweep(&state)
        }
        // NB: stopped after unlocking, as in `deliver`; releasing them here frees what their
        // handlers captured.
        for observation in released { observation.invalidate() }
    }

    /// Removes every tied subscriber whose owner is gone; returns their observations, to stop
    /// once the lock is released.
    private static func sweep(_ state: inout State) -> [Defaults.Observation] {
        var released: [Defaults.Observation] = []
        var gone: [Subscriber] = []
        for subscriber in state.tied.values {
            guard let observation = subscriber.releaseIfOwnerGone() else { continue }
            released.append(observation)
            gone.append(subscriber)
        }
        for subscriber in gone { removeEntries(of: subscriber, from: &state) }
        state.tiedAfterSweep = state.tied.count
        return released
    }

    /// Removes every entry of `subscriber`, dropping buckets that become empty.
    private static func removeEntries(of subscriber: Subscriber, from state: inout State) {
        guard subscriber.isRegistered else { return }
        subscriber.isRegistered = false
        // NB: only for subscribers ever tied: a hash of the table on every `invalidate` would
        // make each observe-and-invalidate pair dearer.
        if subscriber.mayHaveBeenTied { state.tied[ObjectIdentifier(subscriber)] = nil }
        for address in subscriber.addresses {
            guard var bucket = state.buckets.removeValue(forKey: address) else { continue }
            bucket[ObjectIdentifier(subscriber)] = nil
            if !bucket.isEmpty { state.buckets[address] = bucket }
        }
        for suite in subscriber.wholeSuites {
            guard var bucket = state.wholeSuites.removeValue(forKey: suite) else { continue }
            bucket[ObjectIdentifier(subscriber)] = nil
            if !bucket.isEmpty { state.wholeSuites[suite] = bucket }
        }
    }

    /// Calls every subscriber of the changed keys once, outside the lock.
    func deliver(_ change: Defaults.SuiteChange) {
        let suite = change.suite.stateIdentifier
        var released: [Defaults.Observation] = []
        // NB: the first target apart from the rest: a write seen by one subscriber, the common
        // case, allocates no array.
        let (first, others) = state.withLock { state -> (Subscriber?, [Subscriber]) in
            var first: Subscriber?
            var others: [Subscriber] = []
            var seen: Set<ObjectIdentifier> = []
            let isOneKey = change.count == 1
            change.forEachName { name in
                let address = KeyAddress(suite: suite, name: name)
                guard var bucket = state.buckets[address] else { return }
                var pruned: [Subscriber] = []
                for (identifier, subscriber) in bucket {
                    if let tie = subscriber.releaseIfOwnerGone() {
                        // NB: dropped after unlocking: releasing it runs `invalidate`, which locks.
                        released.append(tie)
                        bucket[identifier] = nil
                        pruned.append(subscriber)
                        continue
                    }
                    guard isOneKey || seen.insert(identifier).inserted else { continue }
                    if first == nil { first = subscriber } else { others.append(subscriber) }
                }
                if !pruned.isEmpty {
                    state.buckets[address] = bucket.isEmpty ? nil : bucket
                    // NB: now, not after the loop: a later key of this change must not find them.
                    for subscriber in pruned { Self.removeEntries(of: subscriber, from: &state) }
                }
            }
            // NB: tested for emptiness first, so a program that never watches a whole suite pays
            // one load here, not a hash lookup.
            if !state.wholeSuites.isEmpty, let bucket = state.wholeSuites[suite] {
                for subscriber in bucket.values {
                    if let tie = subscriber.releaseIfOwnerGone() {
                        released.append(tie)
                        Self.removeEntries(of: subscriber, from: &state)
                        continue
                    }
                    if first == nil { first = subscriber } else { others.append(subscriber) }
                }
            }
            return (first, others)
        }
        // NB: stopped after unlocking: stopping runs a debouncer's `onStop`, which cancels a task
        // sleeping on a user-supplied clock.
        for observation in released { observation.invalidate() }
        released.removeAll()
        guard !change.isPropagationSuppressed, let first else { return }
        if first.isActive { first.handler(change) }
        for subscriber in others where subscriber.isActive {
            subscriber.handler(change)
        }
    }

    /// The number of (key, subscriber) entries for keys of `suite`, and of subscribers to the whole
    /// suite; for tests of cleanup.
    func entryCount(for suite: Defaults.Suite) -> Int {
        let identifier = suite.stateIdentifier
        return state.withLock { state in
            state.buckets.reduce(0) { $0 + ($1.key.suite == identifier ? $1.value.count : 0) }
                + (state.wholeSuites[identifier]?.count ?? 0)
        }
    }
}

/// One subscription: the keys, what to call, and an optional tie to an owner's lifetime.
final class Subscriber: Sendable {
    let addresses: [KeyAddress]
    /// The states (suites) of which every key is watched.
    let wholeSuites: [ObjectIdentifier]
    let handler: @Sendable (Defaults.SuiteChange) -> Void
    /// Called once when the subscriber stops, for subscribers that hold work of their own (timers).
    let onStop: (@Sendable () -> Void)?
    private let active = Atomic<Bool>(true)
    private let tie = Lock<LifetimeTie?>(nil)
    /// Whether ``tie`` may hold a tie: lets a delivery skip the tie's lock for untied subscribers.
    private let mayBeTied = Atomic<Bool>(false)
    /// Whether the registry holds this subscriber; read and written under the registry's lock.
    nonisolated(unsafe) var isRegistered = false

    /// Keeps the observation alive while `owner` lives.
    struct LifetimeTie: @unchecked Sendable {  // `owner` is only ever compared to nil, never used
        weak var owner: AnyObject?
        let observation: Defaults.Observation
    }

    init(
        addresses: [KeyAddress],
        wholeSuites: [ObjectIdentifier] = [],
        onStop: (@Sendable () -> Void)? = nil,
        handler: @escaping @Sendable (Defaults.SuiteChange) -> Void
    ) {
        self.addresses = addresses
        self.wholeSuites = wholeSuites
        self.onStop = onStop
        self.handler = handler
    }

    var isActive: Bool { active.load(ordering: .acquiring) }

    /// Whether a tie was ever set; false means the registry's table of tied subscribers lacks it.
    var mayHaveBeenTied: Bool { mayBeTied.load(ordering: .acquiring) }

    /// Marks the subscriber stopped; true the first time only.
    func deactivate() -> Bool {
        let wasActive = active.exchange(false, ordering: .acquiringAndReleasing)
        if wasActive { onStop?() }
        return wasActive
    }

    func setTie(_ newTie: LifetimeTie?) -> LifetimeTie? {
        if newTie != nil { mayBeTied.store(true, ordering: .releasing) }
        return tie.withLock { tie in
            let old = tie
            tie = newTie
            return old
        }
    }

    /// When tied to an owner that is gone: unties, and returns the observation to stop and release
    /// once the registry lock is released.
    func releaseIfOwnerGone() -> Defaults.Observation? {
        guard mayBeTied.load(ordering: .acquiring) else { return nil }
        return tie.withLock { tie -> Defaults.Observation? in
            guard let current = tie, current.owner == nil else { return nil }
            tie = nil
            return current.observation
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
