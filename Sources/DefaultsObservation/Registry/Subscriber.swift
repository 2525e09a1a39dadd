import Defaults
import Synchronization

/// One subscription: the keys, what to call, and an optional tie to an owner's lifetime.
@usableFromInline
final class Subscriber: Sendable {
    /// A watched key: where it is, and the key, which keeps its suite alive.
    ///
    /// The key rather than its suite: a suite is weakly referenced (by its store), so every
    /// retain and release of one takes the runtime's slow path, and a subscriber's life made four.
    struct Target: Sendable {
        let address: KeyAddress
        let key: Defaults._AnyKey

        /// The suite the key is in.
        var suite: Defaults.Suite { key.suite }
    }

    /// The first key watched; `nil` for a subscriber of whole suites only.
    ///
    /// Apart from the others, so a subscriber of one key, the common case, makes no array.
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
    /// For a subscriber of one key whose values hold no references: called with the old and new
    /// value's bytes when a write of the key stays in place, so no JSON is made (see
    /// ``Defaults/ObserverSlot/valueType``).
    let valueHandler: ValueHandler?
    /// `ObjectIdentifier(Value.self)` for the values ``valueHandler`` takes.
    let valueType: ObjectIdentifier?
    /// Called once when the subscriber stops, for subscribers that hold work of their own (timers).
    let onStop: (@Sendable () -> Void)?
    private let active = Atomic<Bool>(true)
    private let tie = Lock<LifetimeTie?>(nil)
    /// Whether ``tie`` may hold a tie: lets a delivery skip the tie's lock for untied subscribers.
    private let mayBeTied = Atomic<Bool>(false)
    /// Whether the subscriber hangs on its keys.
    ///
    /// Sequentially consistent, with ``mayBeTied``: a tie and a removal on two threads must
    /// not each miss the other's flag, or the registry would keep a removed subscriber as tied.
    private let registered = Atomic<Bool>(false)

    /// For a subscriber of one key: the bucket it joined when added; `nil` when it hung alone.
    ///
    /// Written when the subscriber is added (under the suite's lock) and when it is removed, by
    /// the one thread that stops it (after `unregister()`, which only one caller wins); an add
    /// happens before the removal of the same subscriber, so the two never meet.
    nonisolated(unsafe) var joinedBucket: Bucket?

    /// Keeps the observation alive while `owner` lives.
    ///
    /// A class, so the subscriber's optional tie is one pointer: a struct with a weak reference
    /// in it is copied, tested and destroyed through runtime calls, on every stop of every
    /// subscriber, tied or not (`defaults-profile observe-pair`).
    final class LifetimeTie: @unchecked Sendable {  // `owner` is only ever compared to nil, never used
        weak var owner: AnyObject?
        let observation: Defaults.Observation

        init(owner: AnyObject, observation: Defaults.Observation) {
            self.owner = owner
            self.observation = observation
        }
    }

    /// What a subscriber of one key is called with: the old and new stored values of the key, and
    /// the old and new decoded ones where the suite had them, lent one by one (see
    /// ``Defaults/StoredChange``).
    @usableFromInline
    typealias KeyHandler =
        @Sendable (
            JSONValue?, JSONValue?, Defaults.Suite.CacheEntry?, Defaults.Suite.CacheEntry?
        ) -> Void

    /// What a subscriber of one key whose values hold no references is called with when a write
    /// stays in place: the old and the new value, as bytes of the key's type.
    @usableFromInline
    typealias ValueHandler = @Sendable (UnsafeRawPointer, UnsafeRawPointer) -> Void

    /// A subscriber of `key` alone, called with the parts of each change of it, or, when
    /// `valueHandler` is given, with the values of `valueType` a write in place stored.
    @usableFromInline
    init(
        key: Defaults._AnyKey,
        keyHandler: @escaping KeyHandler,
        valueType: ObjectIdentifier? = nil,
        valueHandler: ValueHandler? = nil
    ) {
        self.firstTarget = Target(address: KeyAddress(key), key: key)
        self.otherTargets = []
        self.wholeSuites = []
        self.onStop = nil
        self.keyHandler = keyHandler
        self.handler = nil
        self.valueHandler = valueHandler
        self.valueType = valueHandler == nil ? nil : valueType
    }

    /// A subscriber of `keys` (each state and name once) and of every key of `wholeSuites`.
    init(
        keys: [Defaults._AnyKey],
        wholeSuites: [Defaults.Suite] = [],
        onStop: (@Sendable () -> Void)? = nil,
        handler: @escaping @Sendable (Defaults.SuiteChange) -> Void
    ) {
        // A set to drop repeats only where there can be any: one for a subscriber of one key
        // would be most of what making the subscriber costs.
        var targets: [Target]
        if keys.count < 2 {
            targets = keys.map { Target(address: KeyAddress($0), key: $0) }
        } else {
            var seen: Set<KeyAddress> = []
            targets = keys.compactMap { key in
                let address = KeyAddress(key)
                return seen.insert(address).inserted ? Target(address: address, key: key) : nil
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
        self.valueHandler = nil
        self.valueType = nil
    }

    /// Calls the subscriber with `change`: its handler, or its key handler with the parts of the
    /// change of its key.
    func deliver(_ change: Defaults.SuiteChange) {
        if let handler {
            handler(change)
        } else if let keyHandler {
            change.withChange(named: firstTarget!.address.name, keyHandler)
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
            // Outside every lock: stopping takes the registry's.
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

// A key's only subscriber hangs on the key itself, so telling it takes no lock.
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

    func deliverValue(
        in suite: Defaults.Suite,
        named name: String,
        old: UnsafeRawPointer,
        new: UnsafeRawPointer,
        isPropagationSuppressed: Bool
    ) {
        if let tie = releaseIfOwnerGone() {
            // Outside every lock: stopping takes the registry's.
            tie.invalidate()
            return
        }
        guard !isPropagationSuppressed, isActive else { return }
        valueHandler?(old, new)
    }

    static func deliver(_ change: Defaults.SuiteChange) {
        ObserverRegistry.shared.deliver(change)
    }
}
