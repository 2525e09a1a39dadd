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
/// Each observed key has a ``Bucket`` of its subscribers, hung on the key in the suite's state
/// (its observer slot): a write of one key finds the bucket in the search of its state's table it
/// makes anyway, and calls it, with no lookup here and no change event for keys nobody observes.
/// Other changes (transactions, resets, changes read from the file) come through the core's change
/// sink, and are looked up here per changed key, so observers of other keys cost nothing.
///
/// Subscribers tied to an owner that is gone leave when their key is next written, or at the
/// latest at the next sweep: a tie that makes the tied subscribers outnumber max(``sweepFloor``,
/// 2 × those that outlived the previous sweep) sweeps. So the registry never holds more tied
/// subscribers than that bound, and a sweep, O(tied subscribers), comes after at least half as
/// many new ties: O(1) per tie, amortised.
///
/// A key's bucket stays on the key when its last subscriber leaves, so observing and invalidating
/// again and again makes no bucket and touches no suite; when empty buckets outnumber
/// max(``emptyBucketFloor``, the others), they all go.
///
/// Locks: the registry's, then a bucket's or a suite state's; a delivery takes a bucket's alone.
/// Buckets are made, filled, emptied and hung under the registry's lock.
final class ObserverRegistry: Sendable {
    /// The one registry; creating it adds it to the core store's change sinks.
    static let shared: ObserverRegistry = {
        let registry = ObserverRegistry()
        Defaults.addChangeSink(Defaults.ChangeSink(usesObserverSlots: true) { change in registry.deliver(change) })
        return registry
    }()

    /// The tied subscribers held before a sweep at least, so a program with few ties never sweeps.
    static let sweepFloor = 1024

    /// The empty buckets kept at least before they are taken off their keys.
    static let emptyBucketFloor = 256

    private struct State {
        var buckets: [KeyAddress: Bucket] = [:]
        /// Subscribers to every key of a suite's state, by that state's identity.
        var wholeSuites: [ObjectIdentifier: Bucket] = [:]
        /// Every registered subscriber that has ever been tied to an owner, whatever its keys.
        var tied: [ObjectIdentifier: Subscriber] = [:]
        /// How many entries of ``tied`` the last sweep left.
        var tiedAfterSweep = 0
        /// How many of ``buckets`` are empty.
        var emptyBuckets = 0
    }

    private let state = Lock(State())

    func add(_ subscriber: Subscriber) {
        state.withLock { state in
            subscriber.isRegistered = true
            for target in subscriber.targets {
                if let bucket = state.buckets[target.address] {
                    if !bucket.isEmpty {
                        bucket.insert(subscriber)
                        continue
                    }
                    state.emptyBuckets -= 1
                    // NB: an empty bucket whose suite is gone may hang on no state, or on a state
                    // gone since (whose identity a new one may now have): a new one replaces it.
                    if bucket.suite != nil {
                        bucket.insert(subscriber)
                        continue
                    }
                }
                let bucket = Bucket(suite: target.suite, name: target.address.name)
                bucket.insert(subscriber)
                state.buckets[target.address] = bucket
                target.suite.setObservers(bucket, forKeyNamed: target.address.name)
            }
            for suite in subscriber.wholeSuites {
                let identifier = suite.stateIdentifier
                if let bucket = state.wholeSuites[identifier] {
                    bucket.insert(subscriber)
                    continue
                }
                let bucket = Bucket(suite: suite, name: nil)
                bucket.insert(subscriber)
                state.wholeSuites[identifier] = bucket
                suite.setSuiteObservers(bucket)
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

    /// Removes every entry of `subscriber`, dropping buckets that become empty (and taking them
    /// off their keys).
    private static func removeEntries(of subscriber: Subscriber, from state: inout State) {
        guard subscriber.isRegistered else { return }
        subscriber.isRegistered = false
        // NB: only for subscribers ever tied: a hash of the table on every `invalidate` would
        // make each observe-and-invalidate pair dearer.
        if subscriber.mayHaveBeenTied { state.tied[ObjectIdentifier(subscriber)] = nil }
        for target in subscriber.targets {
            guard let bucket = state.buckets[target.address], bucket.remove(subscriber) else { continue }
            // NB: left on its key, for the next subscriber of the key.
            state.emptyBuckets += 1
        }
        if state.emptyBuckets > max(emptyBucketFloor, state.buckets.count - state.emptyBuckets) {
            removeEmptyBuckets(from: &state)
        }
        for suite in subscriber.wholeSuites {
            let identifier = suite.stateIdentifier
            guard let bucket = state.wholeSuites[identifier], bucket.remove(subscriber) else { continue }
            state.wholeSuites[identifier] = nil
            suite.setSuiteObservers(nil)
        }
    }

    /// Takes every empty bucket off its key and out of the registry.
    private static func removeEmptyBuckets(from state: inout State) {
        state.buckets = state.buckets.filter { address, bucket in
            guard bucket.isEmpty else { return true }
            bucket.suite?.setObservers(nil, forKeyNamed: address.name)
            return false
        }
        state.emptyBuckets = 0
    }

    /// Calls every subscriber of the changed keys once, outside the lock: the changes that do not
    /// reach the buckets through the keys (transactions, resets, removals, outside changes).
    func deliver(_ change: Defaults.SuiteChange) {
        let suite = change.suite.stateIdentifier
        // NB: the first target apart from the rest: a change seen by one subscriber allocates no array.
        let (first, others) = state.withLock { state -> (Subscriber?, [Subscriber]) in
            var first: Subscriber?
            var others: [Subscriber] = []
            var seen: Set<ObjectIdentifier> = []
            let isOneKey = change.count == 1
            change.forEachName { name in
                guard let bucket = state.buckets[KeyAddress(suite: suite, name: name)] else { return }
                bucket.forEachMember { subscriber in
                    guard isOneKey || seen.insert(ObjectIdentifier(subscriber)).inserted else { return }
                    if first == nil { first = subscriber } else { others.append(subscriber) }
                }
            }
            // NB: tested for emptiness first, so a program that never watches a whole suite pays
            // one load here, not a hash lookup.
            if !state.wholeSuites.isEmpty, let bucket = state.wholeSuites[suite] {
                bucket.forEachMember { subscriber in
                    if first == nil { first = subscriber } else { others.append(subscriber) }
                }
            }
            return (first, others)
        }
        guard let first else { return }
        var released: [Defaults.Observation] = []
        if let tie = first.releaseIfOwnerGone() {
            released.append(tie)
        } else if !change.isPropagationSuppressed && first.isActive {
            first.deliver(change)
        }
        for subscriber in others {
            if let tie = subscriber.releaseIfOwnerGone() {
                released.append(tie)
            } else if !change.isPropagationSuppressed && subscriber.isActive {
                subscriber.deliver(change)
            }
        }
        // NB: stopped after the calls, outside every lock: stopping runs a debouncer's `onStop`,
        // which cancels a task sleeping on a user-supplied clock.
        for observation in released { observation.invalidate() }
    }

    /// The key buckets, and how many of them are empty; for tests of cleanup.
    var bucketCounts: (all: Int, empty: Int) {
        state.withLock { state in (state.buckets.count, state.emptyBuckets) }
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

/// The subscribers of one key of a suite's state, or of all its keys; hung on the key (or the
/// state) as its observer slot, so a write of one key calls it directly.
///
/// Its members change under the registry's lock (and its own); a delivery takes its own alone.
final class Bucket: Defaults.ObserverSlot {
    /// A suite of the state where the bucket hangs, so the registry can take it off again.
    ///
    /// NB: weak, since the state holds the bucket: an empty bucket kept on its key must not keep
    /// the suite alive.
    weak let suite: Defaults.Suite?
    /// The key it hangs on; `nil` for the whole state.
    let name: String?
    private let members = Lock<[ObjectIdentifier: Subscriber]>([:])

    init(suite: Defaults.Suite, name: String?) {
        self.suite = suite
        self.name = name
    }

    /// The number of subscribers.
    var count: Int { members.withLock { $0.count } }

    /// Whether the bucket has no subscriber.
    var isEmpty: Bool { members.withLock { $0.isEmpty } }

    func insert(_ subscriber: Subscriber) {
        members.withLock { $0[ObjectIdentifier(subscriber)] = subscriber }
    }

    /// Removes `subscriber`; returns true when the bucket is empty after it.
    func remove(_ subscriber: Subscriber) -> Bool {
        members.withLock { members in
            members[ObjectIdentifier(subscriber)] = nil
            return members.isEmpty
        }
    }

    /// Calls `body` with each subscriber, under the bucket's lock.
    func forEachMember(_ body: (Subscriber) -> Void) {
        members.withLock { members in
            for subscriber in members.values { body(subscriber) }
        }
    }

    func deliverChange(
        in suite: Defaults.Suite,
        named name: String,
        old: JSONValue?,
        new: JSONValue?,
        oldDecoded: Defaults.Suite.CacheEntry?,
        newDecoded: Defaults.Suite.CacheEntry?,
        isPropagationSuppressed: Bool
    ) {
        // NB: the first subscriber apart from the rest, as in the registry's `deliver`: a key with
        // one observer, the common case, allocates no array.
        let (first, others) = members.withLock { members -> (Subscriber?, [Subscriber]) in
            if members.count == 1 { return (members.first!.value, []) }
            return (nil, Array(members.values))
        }
        // NB: built only for a subscriber that needs the event; most take the change's parts.
        var event: Defaults.SuiteChange?
        var released: [Defaults.Observation] = []
        func call(_ subscriber: Subscriber) {
            if let tie = subscriber.releaseIfOwnerGone() {
                released.append(tie)
                return
            }
            guard !isPropagationSuppressed, subscriber.isActive else { return }
            if let keyHandler = subscriber.keyHandler {
                keyHandler(old, new, oldDecoded, newDecoded)
                return
            }
            if event == nil {
                event = Defaults.SuiteChange(
                    suite: suite,
                    name: name,
                    old: old,
                    new: new,
                    oldDecoded: oldDecoded,
                    newDecoded: newDecoded,
                    isPropagationSuppressed: isPropagationSuppressed
                )
            }
            subscriber.deliver(event!)
        }
        if let first { call(first) }
        for subscriber in others { call(subscriber) }
        // NB: stopped after the calls, outside every lock, as in the registry's `deliver`.
        for observation in released { observation.invalidate() }
    }
}

/// One subscription: the keys, what to call, and an optional tie to an owner's lifetime.
final class Subscriber: Sendable {
    /// A watched key: where it is, and a suite it is in.
    struct Target: Sendable {
        let address: KeyAddress
        let suite: Defaults.Suite
    }

    /// The keys watched, each once.
    let targets: [Target]
    /// The suites of which every key is watched, each state once.
    let wholeSuites: [Defaults.Suite]
    /// Called with each change; `nil` for a subscriber with a ``keyHandler``.
    private let handler: (@Sendable (Defaults.SuiteChange) -> Void)?
    /// For a subscriber of one key: called with the parts of each change of it (old and new
    /// stored values, old and new decoded ones), so a write of the key makes no change event.
    let keyHandler: KeyHandler?
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

    /// What a subscriber of one key is called with: the old and new stored values of the key, and
    /// the old and new decoded ones where the suite had them.
    typealias KeyHandler =
        @Sendable (
            JSONValue?, JSONValue?, Defaults.Suite.CacheEntry?, Defaults.Suite.CacheEntry?
        ) -> Void

    /// A subscriber of `key` alone, called with the parts of each change of it.
    init(key: Defaults._AnyKey, keyHandler: @escaping KeyHandler) {
        self.targets = [Target(address: KeyAddress(key), suite: key.suite)]
        self.wholeSuites = []
        self.onStop = nil
        self.keyHandler = keyHandler
        self.handler = nil
    }

    /// A subscriber of `keys` (each state and name once) and of every key of `wholeSuites`.
    init(
        keys: [Defaults._AnyKey],
        wholeSuites: [Defaults.Suite] = [],
        onStop: (@Sendable () -> Void)? = nil,
        handler: @escaping @Sendable (Defaults.SuiteChange) -> Void
    ) {
        // NB: a set to drop repeats only where there can be any: one for a subscriber of one key
        // would be most of what making the subscriber costs.
        if keys.count < 2 {
            self.targets = keys.map { Target(address: KeyAddress($0), suite: $0.suite) }
        } else {
            var seen: Set<KeyAddress> = []
            self.targets = keys.compactMap { key in
                let address = KeyAddress(key)
                return seen.insert(address).inserted ? Target(address: address, suite: key.suite) : nil
            }
        }
        if wholeSuites.count < 2 {
            self.wholeSuites = wholeSuites
        } else {
            var seen: Set<ObjectIdentifier> = []
            self.wholeSuites = wholeSuites.filter { seen.insert($0.stateIdentifier).inserted }
        }
        self.onStop = onStop
        self.keyHandler = nil
        self.handler = handler
    }

    /// Calls the subscriber with `change`: its handler, or its key handler with the parts of the
    /// change of its key.
    func deliver(_ change: Defaults.SuiteChange) {
        if let handler {
            handler(change)
        } else if let keyHandler {
            change.withChange(named: targets[0].address.name, keyHandler)
        }
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

    /// The fewest empty key buckets the registry keeps before it takes them all off their keys.
    package static var emptyObserverBucketFloor: Int { ObserverRegistry.emptyBucketFloor }

    /// The registry's key buckets, and how many of them are empty, read at one instant.
    package static var observerBucketCounts: (all: Int, empty: Int) { ObserverRegistry.shared.bucketCounts }
}
