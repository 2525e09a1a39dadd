import Dispatch
import Foundation
import Synchronization

/// The values behind one or more suites: what every backend shares.
///
/// A suite's values live in memory, in one ``State`` behind one lock, and are read
/// from there only. Where they persist is the store's backend: memory only (a private
/// ``Defaults/InMemoryBackend`` space, which nothing else can read, so nothing is committed), or a
/// ``Defaults/Backend`` — the JSON file (``FileBackend``), a `UserDefaults` (``UserDefaultsBackend``),
/// a shared memory space or one of the user's. The store keeps what
/// is the same whatever the backend: the state, the coalescing of writes into commits, the
/// transactions and overrides, and the change events; outside changes a backend reports arrive
/// through ``receive(_:)`` and leave as `.external` events, one at a time, on the delivery queue.
///
/// One per backend: every ``Defaults/Suite`` opened on the same file or over the same backend object
/// (``StoreRegistry``) shares it, so a write through one is read at once
/// through the other. An in-memory suite has one of its own, and so does the adapter suite of each
/// `UserDefaults` (``UserDefaultsAdapters``).
final class Store: Sendable {
    /// Where the values live.
    enum Kind: Sendable {
        /// A private memory space: nothing to commit.
        case memory
        /// A ``Defaults/Backend``: the file, a `UserDefaults`, or one of the user's.
        case backend(BackendConnection)
    }

    let backend: Kind
    /// The backend's object once more, as a plain reference.
    ///
    /// NB: in `backend` the pointer carries the enum's case in its spare bits, so LeakSanitizer cannot
    /// follow it and reports a store that lives to the end of the process (an adapter kept in the
    /// table of `UserDefaults` adapters) as a leak of its storage.
    private let backendObject: (any AnyObject & Sendable)?
    /// The backend, when other code reads and writes it directly without telling (a
    /// `UserDefaults`): reads ask it first and writes go to it at once.
    let writeThrough: (any WriteThroughBackend)?
    /// The backend, when its own lock makes transactions exclusive (the file).
    let locking: (any LockingBackend)?
    /// The backend, when it keeps values in a file at a path.
    let file: (any FileLocatedBackend)?
    /// The system files beneath the file, which the store reads and follows; `nil` for a store
    /// opened without any.
    let systemFiles: SystemFiles?
    /// Whether writes wait in memory for a commit to a backend; kept apart so the write path tests
    /// it without touching the enum.
    let commitsLater: Bool
    /// Whether a key was ever declared secret here: until then, asking whether a name is secret
    /// takes no lock (the swift-configuration provider asks on every lookup).
    let hasSecrets = Atomic<Bool>(false)
    /// Whether a key migration was ever read through here (``MigrationLayer``): until then, an
    /// outside change looks at no migration.
    let hasMigrationLayer = Atomic<Bool>(false)
    /// Key migrations declared and not run yet; see `Store+PendingMigrations.swift`.
    let pendingMigrations = Lock<PendingMigrations>(PendingMigrations())
    /// Whether `pendingMigrations` holds any: until then, what looks at the store takes no lock.
    let hasPendingMigrations = Atomic<Bool>(false)
    /// Held while pending key migrations run: one run at a time, and a caller that needs them
    /// run waits for the run under way.
    let migrationRunGate = NSLock()
    /// The thread running pending key migrations (`pthread_self()`), 0 when none is.
    let migrationRunner = Atomic<UInt>(0)
    let state: Lock<Store.State>
    /// Runs the coalescing timer's flushes.
    let flushQueue = DispatchQueue(label: "Defaults.Store.flush")
    /// Stores over a backend only: delivers external changes, one at a time, in the order they
    /// were applied.
    let deliveryQueue: DispatchQueue?
    private let suites = Lock<[WeakSuite]>([])
    /// The keys a published schema describes, by name; see `Store+Schema.swift`.
    let describedKeys = Lock<[String: DescribedKey]>([:])
    /// The types each key is read as; see `Store+ReadTypes.swift`.
    let readTypes = Lock<[String: ReadTypes]>([:])
    /// Set on every store's delivery queue, so a thread can tell it is delivering.
    private static let deliveringKey = DispatchSpecificKey<Bool>()

    private struct WeakSuite: Sendable {
        let identifier: ObjectIdentifier
        weak let suite: Defaults.Suite?
        /// The suite's own handler, kept here so reporting needs no strong reference to the suite.
        let errorHandler: (@Sendable (Defaults.StorageError) -> Void)?
    }

    /// - Parameters:
    ///   - backend: Where the values live.
    ///   - contents: What the backend held when loaded.
    ///   - systemFiles: The system files beneath the file, which the store follows from then on.
    ///   - layers: What the system files brought when loaded.
    ///   - readOnlyReason: Why the file may not be written, if it may not.
    init(
        backend: Kind,
        contents: Defaults.BackendContents? = nil,
        systemFiles: SystemFiles? = nil,
        layers: SystemLayers? = nil,
        readOnlyReason: String? = nil
    ) {
        self.systemFiles = systemFiles
        self.backend = backend
        switch backend {
        case .memory:
            backendObject = nil
            writeThrough = nil
            locking = nil
            file = nil
            commitsLater = false
            deliveryQueue = nil
        case .backend(let custom):
            backendObject = custom
            writeThrough = custom.backend as? any WriteThroughBackend
            locking = custom.backend as? any LockingBackend
            file = custom.backend as? any FileLocatedBackend
            commitsLater = writeThrough == nil
            let queue = DispatchQueue(label: "Defaults.Store.delivery")
            queue.setSpecific(key: Self.deliveringKey, value: true)
            deliveryQueue = queue
        }
        var initial = Store.State()
        initial.take(contents?.values ?? [:], deferredRecord: contents?.deferredRecord)
        initial.backendRevision = contents?.revision
        initial.layered.readOnlyReason = readOnlyReason
        initial.mode = State.WriteMode(commitsLater: commitsLater, writeThrough: writeThrough)
        if let layers, !layers.layers.isEmpty { initial.layered.systemFiles = layers }
        self.state = Lock(initial)
    }

    deinit {
        guard case .backend(let custom) = backend else { return }
        custom.backend.stopReporting()
        StoreRegistry.storeWentAway()
    }

    // MARK: - Suites

    /// Records that `suite` uses this store.
    func attach(_ suite: Defaults.Suite) {
        let entry = WeakSuite(identifier: ObjectIdentifier(suite), suite: suite, errorHandler: suite.errorHandler)
        suites.withLock { $0.append(entry) }
    }

    /// Records that the suite `identifier` is gone; true when no suite uses this store any more.
    func detach(_ identifier: ObjectIdentifier) -> Bool {
        suites.withLock { suites in
            suites.removeAll { $0.identifier == identifier }
            return suites.isEmpty
        }
    }

    /// A live suite of this store, to name in an external change event.
    var anySuite: Defaults.Suite? {
        // The strong references leave the lock in the array, so a suite whose last other
        // reference goes meanwhile is released (and detaches) after the lock, not inside it.
        let alive = suites.withLock { $0.compactMap(\.suite) }
        return alive.first
    }

    /// The handlers to tell about a problem: each suite's own, and the global one once for the
    /// suites without one (or when no suite is left).
    var errorHandlers: [@Sendable (Defaults.StorageError) -> Void] {
        let entries = suites.withLock { $0.map(\.errorHandler) }
        var handlers = entries.compactMap { $0 }
        if handlers.count < entries.count || entries.isEmpty { handlers.append(Defaults.errorHandler) }
        return handlers
    }

    /// Reports `error` to the error handlers of this store's suites, on a global queue.
    ///
    /// For problems no single caller asked about: the background flush, the watcher, a file that
    /// broke while open.
    func reportInBackground(_ error: Defaults.StorageError) {
        let handlers = errorHandlers
        DispatchQueue.global()
            .async { [weak self] in
                for handler in handlers { handler(error) }
                // Found here, not by the caller: the suites it takes a reference to are released
                // on this queue, not inside the caller's locks.
                if let suite = self?.anySuite { ProblemObservers.deliver(error, from: suite) }
            }
    }

    /// Tells the activity observers (``Defaults/observeActivity(_:)``) of `activity`.
    ///
    /// In order, on their queue: the caller may hold the store's locks. Nothing is made while
    /// nobody observes.
    func noteActivity(_ activity: @autoclosure () -> Defaults.Activity) {
        guard !ActivityObservers.observers.isEmpty else { return }
        let activity = activity()
        ActivityObservers.queue
            .async { [weak self] in
                if let suite = self?.anySuite { ActivityObservers.deliver(activity, from: suite) }
            }
    }

    /// The backend's name, for activity: "memory" for a suite in memory alone.
    var backendName: String {
        guard case .backend(let custom) = backend else { return "memory" }
        return custom.backend.name
    }

    // MARK: - Flushing

    /// Carries out what the flush machine decided (``FlushMachine``); the caller has left the lock.
    func perform(_ action: FlushMachine.Action) {
        switch action {
        case .none: return
        case .arm(let delay): armTimer(after: delay)
        case .commit:
            // Only the timer's firing asks for a commit, never a commit's outcome: the commit lock
            // is not held here, and is not reentrant.
            if case .failure(let error) = flushNow(), reportsCommitFailure(error) {
                // Not on the flush queue: a handler that calls `synchronize()` or `exit()` would
                // then wait behind itself.
                reportInBackground(error)
            }
        }
    }

    /// Arms the timer for a commit after the coalescing delay; for a write that
    /// ``FlushMachine/changed()`` told to.
    func armTimer() {
        armTimer(after: FlushMachine.coalescingDelay)
    }

    private func armTimer(after delay: Duration) {
        flushQueue.asyncAfter(deadline: .now() + delay.dispatchInterval) { [weak self] in
            guard let self else { return }
            let action = state.withLock { $0.flushing.timerFired() }
            // On the flush queue, so `holdTimedCommits(true)` can wait for a timed commit under way.
            perform(action)
        }
    }

    /// Commits the changes made here since the last commit; the caller reports a failure.
    ///
    /// Never calls user code but the backend's. Returns at once when nothing is pending and no
    /// commit is running.
    func flushNow() -> Result<Void, Defaults.StorageError> {
        guard case .backend(let custom) = backend else { return .success(()) }
        return commitPending(to: custom)
    }

    /// Holds the timer's commits (the coalescing delay's and retries') back, or lets them go again.
    ///
    /// For tests that look at the file between their own `synchronize()` calls: however long those
    /// take, no commit of the timer's runs in between. Holding waits for a timed commit under way.
    func holdTimedCommits(_ held: Bool) {
        let action = state.withLock { $0.flushing.hold(held) }
        if held { flushQueue.sync {} }
        perform(action)
    }

    /// Arms the timer for a commit when changes are waiting and nothing has armed it.
    func armTimerIfDirty() {
        perform(state.withLock { $0.flushing.pending() })
    }

    /// Records why the file may not be written now (`nil`: it may); writes are refused meanwhile.
    func setReadOnlyReason(_ reason: String?) {
        state.withLock { state in
            state.layered.readOnlyReason = reason
        }
    }

    /// Whether this thread is delivering outside changes now (it runs on a file store's delivery
    /// queue): nothing written in this process is waiting for what it delivers.
    static var isDeliveringOutsideChanges: Bool { DispatchQueue.getSpecific(key: deliveringKey) == true }

    /// Returns once every outside change queued for delivery so far has been delivered.
    ///
    /// For a caller about to deliver local changes that followed them (an exclusive transaction
    /// that caught up with the file first), so observers see the two in order. Called from a
    /// delivery queue (an observer starting an exclusive transaction), it returns at once: waiting
    /// there could wait for itself, or for another store's queue that waits for this one.
    func waitForQueuedDeliveries() {
        guard let deliveryQueue, DispatchQueue.getSpecific(key: Self.deliveringKey) != true else { return }
        deliveryQueue.sync {}
    }
}

extension Duration {
    /// The span in whole nanoseconds.
    var nanoseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    }

    /// The same span of time, for Dispatch.
    var dispatchInterval: DispatchTimeInterval { .nanoseconds(nanoseconds) }
}

extension Defaults.StorageError {
    /// A `corruptFile` report turned into the one for a file that broke while the suite was open.
    var brokeWhileOpen: Defaults.StorageError {
        guard case .corruptFile(let url, let movedTo, let reason) = self else { return self }
        return .corruptFileRewritten(url: url, movedTo: movedTo, reason: reason)
    }
}
