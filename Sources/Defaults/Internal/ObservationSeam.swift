import Synchronization

extension Defaults {
    /// Where a committed change came from.
    package enum ChangeOrigin: Sendable, Equatable {
        /// A write made in this process.
        case local
        /// A change read from the file after another process or a person changed it.
        case external
    }

    /// One key's change, the one value its parts travel as: the stored value before and after
    /// (`nil` means nothing stored).
    ///
    /// Where the suite already held a decoded value (the old one from its cache, the new one when a
    /// lossless built-in type was written), it travels along so observers need not decode JSON;
    /// where the key has observers, their slot travels along, so they are found with no search.
    ///
    /// A local write of one key lends its observers the parts instead
    /// (``ObserverSlot/deliverChange(in:named:old:new:oldDecoded:newDecoded:isPropagationSuppressed:)``):
    /// gathering parts the writer still holds into one value copies each of them (guarded by
    /// `defaults-profile write-1`).
    package struct StoredChange: Sendable, Equatable {
        package var old: JSONValue?
        package var new: JSONValue?
        var oldDecoded: Suite.CacheEntry?
        var newDecoded: Suite.CacheEntry?
        /// The key's observers when the change was committed (see ``ObserverSlot``).
        var observers: (any ObserverSlot)?

        init(
            old: JSONValue?,
            new: JSONValue?,
            oldDecoded: Suite.CacheEntry? = nil,
            newDecoded: Suite.CacheEntry? = nil,
            observers: (any ObserverSlot)? = nil
        ) {
            self.old = old
            self.new = new
            self.oldDecoded = oldDecoded
            self.newDecoded = newDecoded
            self.observers = observers
        }

        /// Changes are equal when their stored values are; the decoded copies are a cache.
        package static func == (lhs: StoredChange, rhs: StoredChange) -> Bool {
            lhs.old == rhs.old && lhs.new == rhs.new
        }
    }

    /// One committed change to a suite: a write, a reset, a `removeAll` or a whole transaction.
    ///
    /// It lists only keys whose stored value really changed, or (from a system file) whose lock was
    /// added or lifted, where old and new may be equal.
    package struct SuiteChange: Sendable {
        package let suite: Suite
        package let origin: ChangeOrigin
        /// True when the write was made inside `Defaults.withoutPropagation`.
        package let isPropagationSuppressed: Bool
        /// The observers of every key of the suite when the change was committed.
        let suiteObservers: (any ObserverSlot)?
        private let storage: Storage

        // A write of one key holds its change inline: a dictionary would be an allocation,
        // and hashing, on every write.
        private enum Storage: Sendable {
            case one(name: String, change: StoredChange)
            case many([String: StoredChange])
        }

        /// A change of several keys (or of none), with the observers of each changed key (in its
        /// ``StoredChange``) and of the whole suite.
        init(
            suite: Suite,
            changes: [String: StoredChange],
            origin: ChangeOrigin,
            isPropagationSuppressed: Bool,
            suiteObservers: (any ObserverSlot)? = nil
        ) {
            self.suite = suite
            self.origin = origin
            self.isPropagationSuppressed = isPropagationSuppressed
            self.suiteObservers = suiteObservers
            self.storage = .many(changes)
        }

        /// A local change of the one key `name`, from its parts.
        package init(
            suite: Suite,
            name: String,
            old: JSONValue?,
            new: JSONValue?,
            oldDecoded: Suite.CacheEntry?,
            newDecoded: Suite.CacheEntry?,
            isPropagationSuppressed: Bool
        ) {
            self.suite = suite
            self.origin = .local
            self.isPropagationSuppressed = isPropagationSuppressed
            self.suiteObservers = nil
            let change = StoredChange(old: old, new: new, oldDecoded: oldDecoded, newDecoded: newDecoded)
            self.storage = .one(name: name, change: change)
        }

        /// Every changed key with its change; built on each call for a change of one key.
        package var changes: [String: StoredChange] {
            switch storage {
            case .one(let name, let change): [name: change]
            case .many(let changes): changes
            }
        }

        /// The number of changed keys.
        var count: Int {
            switch storage {
            case .one: 1
            case .many(let changes): changes.count
            }
        }

        /// Calls `body` with the parts of the change of `name` (old and new stored value, old and
        /// new decoded one), when it changed.
        package func withChange(
            named name: String,
            _ body: (JSONValue?, JSONValue?, Suite.CacheEntry?, Suite.CacheEntry?) -> Void
        ) {
            switch storage {
            case .one(let changed, let change):
                if changed == name { body(change.old, change.new, change.oldDecoded, change.newDecoded) }
            case .many(let changes):
                if let change = changes[name] { body(change.old, change.new, change.oldDecoded, change.newDecoded) }
            }
        }

        /// Whether observers travel with the change: a changed key's, or the whole suite's.
        ///
        /// A local write of one key hands the change to its observers itself; its event carries none.
        var hasObserverSlots: Bool {
            if suiteObservers != nil { return true }
            guard case .many(let changes) = storage else { return false }
            return changes.values.contains { $0.observers != nil }
        }

        /// Calls `body` with the observers of each changed key that has any, then with those of
        /// the whole suite.
        package func forEachObserverSlot(_ body: (any ObserverSlot) -> Void) {
            if case .many(let changes) = storage {
                for change in changes.values {
                    if let observers = change.observers { body(observers) }
                }
            }
            if let suiteObservers { body(suiteObservers) }
        }

        /// Calls `body` with the name of every changed key.
        func forEachName(_ body: (String) throws -> Void) rethrows {
            switch storage {
            case .one(let name, _): try body(name)
            case .many(let changes): for name in changes.keys { try body(name) }
            }
        }
    }

    /// A receiver of every committed change, whoever observes it.
    ///
    /// For the `defaults watch` command and the tests' recorder: observers are told through their
    /// slots (``ObserverSlot``), not here. It is called on the writing thread, after the change is committed and outside every lock.
    package final class ChangeSink: Sendable {
        package let deliver: @Sendable (SuiteChange) -> Void

        package init(_ deliver: @escaping @Sendable (SuiteChange) -> Void) {
            self.deliver = deliver
        }
    }

    /// Whether this thread is delivering changes made outside the process (a file store's delivery
    /// queue): no write of this process waits for the observers it calls.
    package static var isDeliveringOutsideChanges: Bool { Store.isDeliveringOutsideChanges }

    /// The observers of one key of a suite's state, or of all its keys, as the observation module
    /// keeps them: the one door from the core to the observation module.
    ///
    /// A state holds one beside each observed key (``Suite/updateObservers(named:_:)``), and
    /// one for the whole state (``Suite/updateSuiteObservers(_:)``). A local write of one key, which
    /// searches the state's table of keys anyway, so finds the key's observers with no search of
    /// its own, and a write of a key nobody observes makes no change event at all. Every other
    /// change (a transaction, a reset, a change from elsewhere) carries the slots of the keys it
    /// changes, and is handed to their type once. The state holds a slot strongly: whoever hangs
    /// it takes it off when it is done.
    package protocol ObserverSlot: AnyObject, Sendable {
        /// Tells the observers about a local change of the one key `name`, its parts lent (see
        /// ``StoredChange``).
        ///
        /// Called on the writing thread, after the change is committed and outside every lock. A
        /// change event is made only for observers that need one.
        func deliverChange(
            in suite: Suite,
            named name: String,
            old: JSONValue?,
            new: JSONValue?,
            oldDecoded: Suite.CacheEntry?,
            newDecoded: Suite.CacheEntry?,
            isPropagationSuppressed: Bool
        )

        /// Tells the observers hanging in every slot `change` carries (``SuiteChange/forEachObserverSlot(_:)``)
        /// about it, each once.
        ///
        /// Called once per change, on the type of one of its slots, so every type that hangs slots
        /// must hand the change to the same place (the observation module's two, a subscriber and a
        /// bucket, both hand it to its registry), after the change is committed
        /// and outside every lock: on the writing thread, or on the delivery queue for a change
        /// from elsewhere.
        static func deliver(_ change: SuiteChange)

        /// The type of value the observers take as bytes (``deliverValue(in:named:old:new:isPropagationSuppressed:)``),
        /// as `ObjectIdentifier(Value.self)`; `nil` when they need the change's parts.
        ///
        /// Read under the state's lock by a write in place of a value with no references: when
        /// it is the written value's type, the write stays in place and tells the observers with
        /// the value's bytes, and no JSON is made.
        var valueType: ObjectIdentifier? { get }

        /// Tells the observers about a local change of the one key `name` written in place: `old`
        /// and `new` point at values of the type ``valueType`` names, which hold no references.
        ///
        /// Called only when ``valueType`` is the written value's type, on the writing thread,
        /// after the change is committed and outside every lock; the pointers are valid only
        /// during the call.
        func deliverValue(
            in suite: Suite,
            named name: String,
            old: UnsafeRawPointer,
            new: UnsafeRawPointer,
            isPropagationSuppressed: Bool
        )
    }

}

extension Defaults.ObserverSlot {
    /// None: observers that do not say otherwise need the change's parts.
    package var valueType: ObjectIdentifier? { nil }

    /// Never called for observers that take no values (their ``valueType`` is `nil`).
    package func deliverValue(
        in suite: Defaults.Suite,
        named name: String,
        old: UnsafeRawPointer,
        new: UnsafeRawPointer,
        isPropagationSuppressed: Bool
    ) {
        preconditionFailure("a value was delivered to observers that take none")
    }
}

extension Defaults {
    // NB: the sinks are kept in a class box, never as a bare closure in the Mutex: reading a closure
    // back out of `withLock` re-wraps it in a thunk and stores that back, deeper on every read.
    private static let changeSinks = Lock<[ChangeSink]>([])
    /// How many sinks there are; a one-key write reads it before anything else.
    private static let changeSinkCount = Atomic<Int>(0)

    /// Starts delivering every committed change to `sink`.
    package static func addChangeSink(_ sink: ChangeSink) {
        changeSinks.withLock { sinks in
            sinks.append(sink)
            changeSinkCount.add(1, ordering: .releasing)
        }
    }

    /// Stops delivering committed changes to `sink`.
    static func removeChangeSink(_ sink: ChangeSink) {
        changeSinks.withLock { sinks in
            let count = sinks.count
            sinks.removeAll { $0 === sink }
            if sinks.count < count { changeSinkCount.subtract(1, ordering: .releasing) }
        }
    }

    /// The sinks to deliver a change to.
    static var currentChangeSinks: [ChangeSink] { changeSinks.withLock { $0 } }

    /// Whether any sink gets every change, including one-key writes nobody observes.
    static var hasEveryChangeSinks: Bool { changeSinkCount.load(ordering: .acquiring) > 0 }

    /// Whether writes made in the current task or thread are kept from observers.
    package enum Propagation {
        /// Whether writes made in the current task or thread are kept from observers.
        ///
        /// Until a scope is first entered in the process, no write is, and the task-local is not
        /// read: reading one costs about a tenth of an observed write (`defaults-profile write-1`).
        @inline(__always)
        static var isSuppressed: Bool {
            hasSuppressed.load(ordering: .acquiring) && suppressedHere
        }

        /// Runs `body` with the writes of the current task or thread (and of the tasks it starts)
        /// kept from observers.
        package static func suppressing<Result>(_ body: () throws -> Result) rethrows -> Result {
            hasSuppressed.store(true, ordering: .releasing)
            return try $suppressedHere.withValue(true) { try body() }
        }

        /// `suppressing(_:)` across suspensions.
        package static func suppressing<Result>(
            isolation: isolated (any Actor)? = #isolation,
            _ body: () async throws -> Result
        ) async rethrows -> Result {
            hasSuppressed.store(true, ordering: .releasing)
            return try await $suppressedHere.withValue(true, operation: body, isolation: isolation)
        }

        /// Set by `suppressing`; task-local so other tasks and threads still propagate.
        @TaskLocal private static var suppressedHere = false
        /// Whether `suppressing` was ever called in this process; stays set.
        private static let hasSuppressed = Atomic<Bool>(false)
    }
}

extension Defaults.Suite {
    /// The entries of the state's table of keys: keys with a decoded value kept, a change not yet
    /// flushed, or observers; for tests that it does not grow.
    package var keyEntryCount: Int { store.keyEntryCount }

    /// Changes what hangs on the key `name` of this suite's state (shared by every suite on its
    /// file): `body` gets the key's observer slot, under the state's lock, and may change it.
    ///
    /// For the observation module, which keeps a key's observers in it; see ``Defaults/ObserverSlot``.
    /// `body` must not use the suite. It runs under the lock, so what it hangs is in place for
    /// the next write, and what it takes away is not called by writes after this returns.
    /// `hash`, when given, is `name.hashValue`, worked out already (the registry keeps it).
    ///
    /// - Returns: What hung on the key before, so it is released after the lock.
    @discardableResult
    package func updateObservers(
        named name: String,
        hash: Int? = nil,
        _ body: (inout (any Defaults.ObserverSlot)?) -> Void
    ) -> (any Defaults.ObserverSlot)? {
        store.updateObservers(named: hash.map { HashedName(name, hash: $0) } ?? HashedName(name), body)
    }

    /// Changes what hangs on every key of this suite's state, as ``updateObservers(named:_:)``
    /// does for one key.
    ///
    /// - Returns: What hung on the state before, so it is released after the lock.
    @discardableResult
    package func updateSuiteObservers(
        _ body: (inout (any Defaults.ObserverSlot)?) -> Void
    ) -> (any Defaults.ObserverSlot)? {
        store.updateSuiteObservers(body)
    }

    /// Everything hanging on the keys of this suite's state, and on the whole state.
    package func observerSlots() -> [any Defaults.ObserverSlot] {
        store.observerSlots()
    }
}
