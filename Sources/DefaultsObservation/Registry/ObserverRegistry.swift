import Defaults
import Synchronization

/// Where a subscriber listens: one key name in one suite's state (shared by every suite on a file).
struct KeyAddress: Hashable, Sendable {
    let suite: ObjectIdentifier
    /// The name, with its hash worked out once.
    let name: Defaults.Suite.HashedName

    init(suite: ObjectIdentifier, name: String) {
        self.suite = suite
        self.name = Defaults.Suite.HashedName(name)
    }

    init(_ key: Defaults._AnyKey) {
        self.suite = key.suite.stateIdentifier
        self.name = key.hashedName
    }
}

/// Every live subscription of this library.
///
/// The subscribers of a key hang on the key in its suite's state (the key's observer slot): the
/// subscriber itself when it is the only one, a ``Bucket`` of them when there are more; those of a
/// whole suite hang on its state. The state is the only index: a write of one key finds them in
/// the search of its state's table it makes anyway, and calls them, with no lock for a lone
/// subscriber and no change event for keys nobody observes; other changes (transactions, resets,
/// changes read from the file) carry the slots of the keys they change, and come here through the
/// core's change sink only when they carry any.
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
    /// The one registry; creating it adds it to the core store's change sinks.
    static let shared: ObserverRegistry = {
        let registry = ObserverRegistry()
        Defaults.addChangeSink(Defaults.ChangeSink(usesObserverSlots: true) { change in registry.deliver(change) })
        return registry
    }()

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
        // NB: a subscriber of one key notes the bucket it joins, for a removal that leaves the
        // bucket as it hangs (see `remove`).
        let notesBucket = subscriber.otherTargets.isEmpty && subscriber.wholeSuites.isEmpty
        subscriber.forEachTarget { target in
            target.suite.updateObservers(named: target.address.name) { slot in
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
        // NB: a bucket that keeps two subscribers or more after this one leaves still hangs as it
        // is, so leaving it needs no change of what hangs on the key, and not the suite's lock: a
        // bucket no longer hanging has one subscriber at most, so never goes this way.
        let bucket = subscriber.joinedBucket
        subscriber.joinedBucket = nil
        if let bucket, bucket.remove(subscriber, keepingMoreThan: 1) {
            // Taken out: nothing hangs differently.
        } else {
            subscriber.forEachTarget { target in
                target.suite.updateObservers(named: target.address.name) { Self.leave(subscriber, &$0) }
            }
        }
        for suite in subscriber.wholeSuites {
            suite.updateSuiteObservers { Self.leave(subscriber, &$0) }
        }
        // NB: only for subscribers ever tied: the registry's lock on every `invalidate` would make
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
            // NB: an observation already stopped is not registered, and must not come back.
            guard subscriber.isRegistered else { return [] }
            state.tied[ObjectIdentifier(subscriber)] = subscriber
            guard state.tied.count > max(Self.sweepFloor, 2 * state.tiedAfterSweep) else { return [] }
            return Self.sweep(&state)
        }
        // NB: stopped after unlocking: stopping takes the suites' locks, and releasing them frees
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
    /// changes), which carry their slots.
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
        // NB: a subscriber of several changed keys is told once.
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
        // NB: stopped after the calls: stopping runs a debouncer's `onStop`, which cancels a task
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

/// The subscribers of one key of a suite's state, or of all its keys, when there are two or more.
///
/// It hangs on the key (or the state) as its observer slot, so a write of the key calls it
/// directly. Its members change under the lock of the state it hangs on (and its own); a delivery
/// takes its own alone.
final class Bucket: Defaults.ObserverSlot {
    private let members: Lock<Members>

    /// The subscribers by identity, and the array of them a delivery reads.
    private struct Members {
        var byIdentity: [ObjectIdentifier: Subscriber]
        /// The subscribers in an array, made again by the first delivery after they changed.
        ///
        /// NB: kept apart from the table, so an observer that comes and goes costs one insert
        /// and one removal, and a key written often reads a ready array.
        var list: [Subscriber]?

        /// The subscribers in an array.
        mutating func array() -> [Subscriber] {
            if let list { return list }
            let made = Array(byIdentity.values)
            list = made
            return made
        }
    }

    /// What hangs on the key after a removal.
    enum AfterRemoval {
        /// The bucket stays.
        case unchanged
        /// One subscriber is left: it hangs on the key alone, for a delivery that takes no lock.
        case hang(Subscriber)
        /// No subscriber is left: nothing hangs on the key.
        case empty
    }

    /// A bucket of two subscribers.
    init(_ first: Subscriber, _ second: Subscriber) {
        members = Lock(
            Members(byIdentity: [ObjectIdentifier(first): first, ObjectIdentifier(second): second], list: nil)
        )
    }

    /// The number of subscribers.
    var count: Int { members.withLock { $0.byIdentity.count } }

    func insert(_ subscriber: Subscriber) {
        members.withLock { members in
            guard members.byIdentity.updateValue(subscriber, forKey: ObjectIdentifier(subscriber)) == nil else {
                return
            }
            members.list = nil
        }
    }

    /// Removes `subscriber` when more than `minimum` subscribers stay; whether it did.
    func remove(_ subscriber: Subscriber, keepingMoreThan minimum: Int) -> Bool {
        members.withLock { members in
            guard members.byIdentity.count > minimum + 1,
                members.byIdentity.removeValue(forKey: ObjectIdentifier(subscriber)) != nil
            else { return false }
            members.list = nil
            return true
        }
    }

    /// Removes `subscriber`; returns what is to hang on the key after it.
    func remove(_ subscriber: Subscriber) -> AfterRemoval {
        members.withLock { members in
            guard members.byIdentity.removeValue(forKey: ObjectIdentifier(subscriber)) != nil else {
                return .unchanged
            }
            members.list = nil
            switch members.byIdentity.count {
            case 0: return .empty
            case 1: return .hang(members.byIdentity.first!.value)
            default: return .unchanged
            }
        }
    }

    /// Calls `body` with each subscriber, under the bucket's lock.
    func forEachMember(_ body: (Subscriber) -> Void) {
        members.withLock { members in
            for subscriber in members.byIdentity.values { body(subscriber) }
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
        let list = members.withLock { $0.array() }
        // NB: made once, for the subscribers that need the event; most take the change's parts.
        var event: Defaults.SuiteChange?
        for subscriber in list {
            subscriber.deliverChange(
                in: suite,
                named: name,
                old: old,
                new: new,
                oldDecoded: oldDecoded,
                newDecoded: newDecoded,
                isPropagationSuppressed: isPropagationSuppressed,
                event: &event
            )
        }
    }
}

/// One subscription: the keys, what to call, and an optional tie to an owner's lifetime.
@usableFromInline
final class Subscriber: Sendable {
    /// A watched key: where it is, and a suite it is in.
    struct Target: Sendable {
        let address: KeyAddress
        let suite: Defaults.Suite
    }

    /// The first key watched; `nil` for a subscriber of whole suites only.
    ///
    /// NB: apart from the others, so a subscriber of one key, the common case, makes no array.
    let firstTarget: Target?
    /// The other keys watched, each once.
    let otherTargets: [Target]
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
    /// Whether the subscriber hangs on its keys.
    ///
    /// NB: sequentially consistent, with ``mayBeTied``: a tie and a removal on two threads must
    /// not each miss the other's flag, or the registry would keep a removed subscriber as tied.
    private let registered = Atomic<Bool>(false)

    /// For a subscriber of one key: the bucket it joined when added; `nil` when it hung alone.
    ///
    /// NB: written when the subscriber is added (under the suite's lock) and when it is removed, by
    /// the one thread that stops it (after `unregister()`, which only one caller wins); an add
    /// happens before the removal of the same subscriber, so the two never meet.
    nonisolated(unsafe) var joinedBucket: Bucket?

    /// Keeps the observation alive while `owner` lives.
    struct LifetimeTie: @unchecked Sendable {  // `owner` is only ever compared to nil, never used
        weak var owner: AnyObject?
        let observation: Defaults.Observation
    }

    /// What a subscriber of one key is called with: the old and new stored values of the key, and
    /// the old and new decoded ones where the suite had them.
    @usableFromInline
    typealias KeyHandler =
        @Sendable (
            JSONValue?, JSONValue?, Defaults.Suite.CacheEntry?, Defaults.Suite.CacheEntry?
        ) -> Void

    /// A subscriber of `key` alone, called with the parts of each change of it.
    @usableFromInline
    init(key: Defaults._AnyKey, keyHandler: @escaping KeyHandler) {
        self.firstTarget = Target(address: KeyAddress(key), suite: key.suite)
        self.otherTargets = []
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
        var targets: [Target]
        if keys.count < 2 {
            targets = keys.map { Target(address: KeyAddress($0), suite: $0.suite) }
        } else {
            var seen: Set<KeyAddress> = []
            targets = keys.compactMap { key in
                let address = KeyAddress(key)
                return seen.insert(address).inserted ? Target(address: address, suite: key.suite) : nil
            }
        }
        self.firstTarget = targets.first
        self.otherTargets = Array(targets.dropFirst())
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
            change.withChange(named: firstTarget!.address.name.text, keyHandler)
        }
    }

    /// Calls `body` with each key watched.
    func forEachTarget(_ body: (Target) -> Void) {
        guard let firstTarget else { return }
        body(firstTarget)
        for target in otherTargets { body(target) }
    }

    /// Calls the subscriber with a local change of its key `name`, from the change's parts: its
    /// key handler with them, or its handler with `event`, made from them when still `nil`.
    ///
    /// A subscriber tied to an owner that is gone is stopped instead.
    func deliverChange(
        in suite: Defaults.Suite,
        named name: String,
        old: JSONValue?,
        new: JSONValue?,
        oldDecoded: Defaults.Suite.CacheEntry?,
        newDecoded: Defaults.Suite.CacheEntry?,
        isPropagationSuppressed: Bool,
        event: inout Defaults.SuiteChange?
    ) {
        if let tie = releaseIfOwnerGone() {
            // NB: outside every lock: stopping takes the registry's.
            tie.invalidate()
            return
        }
        guard !isPropagationSuppressed, isActive else { return }
        if let keyHandler {
            keyHandler(old, new, oldDecoded, newDecoded)
            return
        }
        guard let handler else { return }
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
        handler(event!)
    }

    var isActive: Bool { active.load(ordering: .acquiring) }

    /// Whether the subscriber hangs on its keys.
    var isRegistered: Bool { registered.load(ordering: .sequentiallyConsistent) }

    /// Marks the subscriber as hanging on its keys.
    func register() {
        registered.store(true, ordering: .sequentiallyConsistent)
    }

    /// Marks the subscriber as taken off its keys; true the first time only.
    func unregister() -> Bool {
        registered.exchange(false, ordering: .sequentiallyConsistent)
    }

    /// Whether a tie was ever set; false means the registry's table of tied subscribers lacks it.
    var mayHaveBeenTied: Bool { mayBeTied.load(ordering: .sequentiallyConsistent) }

    /// Marks the subscriber stopped; true the first time only.
    func deactivate() -> Bool {
        let wasActive = active.exchange(false, ordering: .acquiringAndReleasing)
        if wasActive { onStop?() }
        return wasActive
    }

    func setTie(_ newTie: LifetimeTie?) -> LifetimeTie? {
        if newTie != nil { mayBeTied.store(true, ordering: .sequentiallyConsistent) }
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

// NB: a key's only subscriber hangs on the key itself, so telling it takes no lock.
extension Subscriber: Defaults.ObserverSlot {
    func deliverChange(
        in suite: Defaults.Suite,
        named name: String,
        old: JSONValue?,
        new: JSONValue?,
        oldDecoded: Defaults.Suite.CacheEntry?,
        newDecoded: Defaults.Suite.CacheEntry?,
        isPropagationSuppressed: Bool
    ) {
        var event: Defaults.SuiteChange?
        deliverChange(
            in: suite,
            named: name,
            old: old,
            new: new,
            oldDecoded: oldDecoded,
            newDecoded: newDecoded,
            isPropagationSuppressed: isPropagationSuppressed,
            event: &event
        )
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
