import Dispatch
import Foundation
import Synchronization

/// The values behind one or more suites, and what keeps them in step with their file.
///
/// One per path per process: every ``Defaults/Suite`` opened on the same path (as given) with the
/// same system files shares it, so a write through one is read at once through the other. An
/// in-memory suite and a suite over `UserDefaults` each have one of their own.
///
/// A file store reads its file through the path it was given, so it follows the links on the way
/// as they are at each read, and writes where they lead (the links stay links). Beneath it may lie
/// system files (``SystemLayers``), read and watched the same way and never written.
///
/// A file store meets the file in three places, all under the file's lock (``FileLock``), so they
/// never interleave in this process:
/// - a **flush** (the coalescing timer, `synchronize()`, exit) takes the exclusive lock, reads the
///   file, writes into it the keys changed here since the last flush, and takes every other key from
///   it: keys another process wrote meanwhile join memory, reported as an external change;
/// - a **reload** (the watcher saw the file change) reads it with the process lock only, and applies
///   every key whose stored value differs, except keys changed here and not flushed yet;
/// - a **cross-process transaction** holds the exclusive lock from start to commit.
final class Store: Sendable {
    /// Where the values live.
    enum Kind: Sendable {
        case memory
        case file(FileStorage)
        case userDefaults(UserDefaultsStorage)
        /// A backend of the user's (``Defaults/Backend``).
        case custom(CustomBackend)
    }

    let backend: Kind
    /// The backend's object once more, as a plain reference.
    ///
    /// NB: in `backend` the pointer carries the enum's case in its spare bits, so LeakSanitizer cannot
    /// follow it and reports a store that lives to the end of the process (an adapter kept in the
    /// table of `UserDefaults` adapters) as a leak of its storage.
    private let backendObject: (any AnyObject & Sendable)?
    /// Whether writes wait in memory for a flush (a file's, or a commit to a custom backend); kept
    /// apart so the write path tests it without touching the enum.
    let isFlushed: Bool
    let state: Lock<Defaults.Suite.State>
    /// File stores only: the system files beneath the store's own, first listed first.
    let layerFiles: [FileStorage]
    /// Runs the coalescing timer's flushes.
    let flushQueue = DispatchQueue(label: "Defaults.Store.flush")
    /// File stores only: reads the files when the watcher says they changed, and retries.
    private let watchQueue: DispatchQueue?
    /// File stores only: delivers external changes, one at a time, in the order they were applied.
    private let deliveryQueue: DispatchQueue?
    /// What to do about each file changing: the store's own file first, then each system file.
    private let reloads: Lock<[FileChangeMachine]>
    /// The entries the watcher watches for each file, in the same order; changed on the watch queue.
    private let watchedEntries: Lock<[[String]]>
    private let suites = Lock<[WeakSuite]>([])
    /// Set on every store's delivery queue, so a thread can tell it is delivering.
    private static let deliveringKey = DispatchSpecificKey<Bool>()

    /// How long a file store waits after a change before writing, so bursts coalesce.
    static let coalescingDelay = Duration.milliseconds(50)

    private struct WeakSuite: @unchecked Sendable {  // only the weak reference, read under the lock
        let identifier: ObjectIdentifier
        weak var suite: Defaults.Suite?
        /// The suite's own handler, kept here so reporting needs no strong reference to the suite.
        let errorHandler: (@Sendable (Defaults.StorageError) -> Void)?
    }

    /// - Parameters:
    ///   - backend: Where the values live.
    ///   - file: The file as loaded, for a file store.
    ///   - layers: The system files beneath it and what they brought when loaded.
    ///   - writesBlocked: The file could not be read: never write over it.
    init(
        backend: Kind,
        contents: Defaults.BackendContents? = nil,
        file: FileStorage.Snapshot? = nil,
        layers: (files: [FileStorage], loaded: SystemLayers)? = nil,
        writesBlocked: Bool = false
    ) {
        self.backend = backend
        var storages: [FileStorage] = []
        switch backend {
        case .memory: backendObject = nil
        case .file(let storage):
            backendObject = storage
            storages = [storage] + (layers?.files ?? [])
        case .userDefaults(let storage): backendObject = storage
        case .custom(let custom): backendObject = custom
        }
        layerFiles = layers?.files ?? []
        reloads = Lock(Array(repeating: FileChangeMachine(), count: storages.count))
        watchedEntries = Lock(storages.map(\.current.resolved.watchedEntries))
        var initial = Defaults.Suite.State()
        initial.tree = file?.members ?? contents?.values ?? [:]
        initial.backendRevision = contents?.revision
        initial.file = file
        initial.writesBlocked = writesBlocked
        if case .file(let storage) = backend { initial.readOnlyReason = storage.readOnlyReason }
        if let layers, !layers.files.isEmpty { initial.layers = layers.loaded }
        initial.updateLayerFlags()
        self.state = Lock(initial)
        defer {
            if case .file(let storage) = backend { storage.whenMoved { [weak self] in self?.settle($0) } }
        }
        switch backend {
        case .file:
            isFlushed = true
            watchQueue = DispatchQueue(label: "Defaults.Store.watch")
            deliveryQueue = Self.makeDeliveryQueue()
        case .custom:
            isFlushed = true
            watchQueue = nil
            deliveryQueue = Self.makeDeliveryQueue()
        case .memory, .userDefaults:
            isFlushed = false
            watchQueue = nil
            deliveryQueue = nil
        }
    }

    deinit {
        switch backend {
        case .file:
            FileWatcher.shared.unwatch(store: ObjectIdentifier(self))
            FileStores.storeWentAway()
        case .custom(let custom):
            custom.backend.stopReporting()
        case .memory, .userDefaults:
            break
        }
    }

    /// A queue that delivers outside changes one at a time, marked so a thread can tell it is one.
    private static func makeDeliveryQueue() -> DispatchQueue {
        let queue = DispatchQueue(label: "Defaults.Store.delivery")
        queue.setSpecific(key: deliveringKey, value: true)
        return queue
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
    private var anySuite: Defaults.Suite? {
        // NB: the strong references leave the lock in the array, so a suite whose last other
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
            .async {
                for handler in handlers { handler(error) }
            }
    }

    // MARK: - Flushing

    /// Arms the coalescing timer.
    func scheduleFlush(after delay: Duration) {
        flushQueue.asyncAfter(deadline: .now() + delay.dispatchInterval) { [weak self] in
            guard let self else { return }
            if case .failure(let error) = self.flushNow(fromTimer: true) {
                // NB: not on the flush queue: a handler that calls `synchronize()` or `exit()` would
                // then wait behind itself.
                self.reportInBackground(error)
            }
        }
    }

    /// Writes the changes made here since the last flush, under the exclusive lock; the caller
    /// reports a failure.
    ///
    /// Never calls user code. Returns at once when nothing is pending and no flush is running.
    func flushNow(fromTimer: Bool = false) -> Result<Void, Defaults.StorageError> {
        if case .custom(let custom) = backend { return commitPending(to: custom, fromTimer: fromTimer) }
        guard case .file(let storage) = backend else { return .success(()) }
        let needed = state.withLock { state in
            // NB: only the timer's own flush disarms it. A `synchronize()` leaves an armed timer
            // armed, so writes right after it do not arm a second one: at most one background
            // write per coalescing delay, however often `synchronize()` is called.
            if fromTimer { state.flushScheduled = false }
            // NB: a flush running on another thread has taken the pending keys already; wait for it.
            return state.isDirty || state.flushInFlight
        }
        guard needed else { return .success(()) }
        // NB: what the file brought from other processes is taken in once they may write again:
        // comparing a file of thousands of keys with memory need not keep them waiting.
        // NB: a file that is read-only now (a link re-pointed into a read-only place) cannot even
        // be locked: what waits for it is refused, not retried for ever.
        storage.resolveAgain()
        if let reason = storage.readOnlyReason { return refusePending(storage, reason: reason) }
        var later: FileStorage.Snapshot?
        do {
            return try storage.withExclusiveLock(
                afterward: {
                    if let later { absorb(later) }
                    // NB: only now: a `synchronize()` on another thread waits for this flush until
                    // memory holds what it brought.
                    state.withLock { $0.flushInFlight = false }
                },
                { () throws(Defaults.StorageError) in flushLocked(storage, absorbingLater: &later) }
            )
        } catch {
            scheduleRetry()
            return .failure(error)
        }
    }

    /// ``flushNow(fromTimer:)`` for a caller that holds the exclusive lock.
    ///
    /// - Parameters:
    ///   - transaction: Writes that go into the file on top of the pending ones, and reach memory
    ///     only once the file is written (an exclusive transaction's); not kept if the write fails.
    ///   - commit: Applies `transaction` to memory; called once the file holds it, before the
    ///     file's other keys are taken in.
    func flushLocked(
        _ storage: FileStorage,
        adding transaction: [String: JSONValue?] = [:],
        commit: () -> Void = {}
    ) -> Result<Void, Defaults.StorageError> {
        var now: FileStorage.Snapshot?
        let result = flushLocked(storage, adding: transaction, commit: commit, absorbingLater: &now)
        if let now { absorb(now) }
        state.withLock { $0.flushInFlight = false }
        return result
    }

    /// ``flushLocked(_:adding:commit:)``, leaving what the written file brought from elsewhere in
    /// `later`, for the caller to take in (``absorb(_:)``) before it releases the process lock.
    ///
    /// The flush stays in flight (`State.flushInFlight`) until the caller says it is done, once
    /// memory holds what it brought.
    private func flushLocked(
        _ storage: FileStorage,
        adding transaction: [String: JSONValue?] = [:],
        commit: () -> Void = {},
        absorbingLater later: inout FileStorage.Snapshot?
    ) -> Result<Void, Defaults.StorageError> {
        // NB: a file that could not be read when opened is never written over. Look again: its
        // permissions may have been fixed, or it may be gone.
        if state.withLock({ $0.writesBlocked }) {
            switch storage.read(locked: true) {
            case .parsed(let snapshot), .unchanged(let snapshot): absorb(snapshot)
            case .missing: absorb(nil)
            case .broken, .unreadable: break
            }
        }
        let pending = state.withLock {
            state -> (tree: [String: JSONValue], changed: Set<String>, clears: Bool, locked: Set<String>)? in
            guard state.isDirty || !transaction.isEmpty, !state.writesBlocked else { return nil }
            let changed = state.takeChanged()
            let clears = state.clearsFile
            state.clearsFile = false
            state.flushInFlight = true
            return (state.tree, changed, clears, clears && state.hasLayers ? Set(state.layers!.locks.keys) : [])
        }
        guard let pending else {
            let blocked = state.withLock { $0.writesBlocked && ($0.isDirty || !transaction.isEmpty) }
            guard blocked else { return .success(()) }
            return .failure(
                .unreadableFile(url: storage.url, reason: "the file could not be read, so it is not overwritten")
            )
        }
        var changed = pending.changed
        var document: [String: JSONValue]
        // NB: the file as this process last saw it: memory already holds it, but for pending keys.
        var baseIsKnown = false
        var movedAside: Defaults.StorageError?
        // NB: reported once the outcome is known, so a handler that looks finds the new file.
        defer { if let movedAside { reportInBackground(movedAside.brokeWhileOpen) } }
        switch storage.readSettled(knowing: state.withLock { $0.file }, locked: true) {
        case .missing:
            document = [:]
            // NB: a new file that gets every key memory holds is memory's own, as a known one is:
            // comparing all of it with memory afterwards (most of a first write of many keys)
            // would find nothing.
            baseIsKnown =
                transaction.isEmpty && pending.tree.count <= changed.count
                && pending.tree.keys.allSatisfy(changed.contains)
        case .parsed(let snapshot):
            document = snapshot.members
        case .unchanged(let snapshot):
            document = snapshot.members
            baseIsKnown = true
        case .broken(let reason):
            switch storage.moveAside(reason: reason) {
            case .success(let report):
                movedAside = report
                // Memory holds the last good state: all of it goes into the new file (and, should
                // this write fail, into the next one, since there is no file now).
                document = [:]
                changed.formUnion(pending.tree.keys)
                state.withLock { $0.file = nil }
            case .failure(let error):
                return failed(changed, error, clears: pending.clears)
            }
        case .unreadable(let error):
            return failed(changed, error, clears: pending.clears)
        }
        if pending.clears {
            // `removeAll()`: every key the file holds goes, whoever wrote it and whether this
            // process saw it or not; a key a system file locks keeps the user's value.
            document = document.filter { pending.locked.contains($0.key) }
            baseIsKnown = false
        }
        for name in changed { document[name] = pending.tree[name] }
        for (name, value) in transaction { document[name] = value }
        let written: FileStorage.Snapshot
        do {
            written = try storage.replace(with: document)
        } catch {
            return failed(changed, error, clears: pending.clears)
        }
        state.withLock { $0.retryDelay = 0 }
        commit()
        if baseIsKnown {
            // Nothing came from elsewhere: what was written is memory's own (a diff of the whole
            // file against memory would find nothing, at the cost of comparing every value).
            state.withLock { $0.file = written }
        } else {
            // Keys the file brought, written by another process since this one last looked, join memory.
            later = written
        }
        return .success(())
    }

    /// Gives up the changes waiting for a file this process may not write: memory goes back to the
    /// file, as one external change, and the failure is returned for the caller to report.
    private func refusePending(_ storage: FileStorage, reason: String) -> Result<Void, Defaults.StorageError> {
        let refused = state.withLock { state -> Bool in
            guard state.isDirty else { return false }
            _ = state.takeChanged()
            state.clearsFile = false
            return true
        }
        guard refused else { return .success(()) }
        storage.lock.withProcessLock {
            switch storage.read() {
            case .parsed(let snapshot), .unchanged(let snapshot): absorb(snapshot)
            case .missing: absorb(nil)
            case .broken, .unreadable: break
            }
        }
        return .failure(.readOnlyFile(url: storage.url, reason: reason))
    }

    /// Puts back the keys (and the `removeAll()`) a failed flush took, and arms a retry; returns
    /// the failure.
    func failed(
        _ changed: Set<String>,
        _ error: Defaults.StorageError,
        clears: Bool = false
    ) -> Result<Void, Defaults.StorageError> {
        state.withLock { state in
            state.markChanged(changed)
            if clears { state.clearsFile = true }
        }
        scheduleRetry()
        return .failure(error)
    }

    /// Arms the timer for a retry, with a growing delay, so a full disk is retried without a busy loop.
    func scheduleRetry() {
        let delay = state.withLock { state -> Double? in
            guard !state.flushScheduled else { return nil }
            state.flushScheduled = true
            state.retryDelay = min(max(state.retryDelay * 2, 0.5), 30)
            return state.retryDelay
        }
        if let delay { scheduleFlush(after: .milliseconds(Int(delay * 1000))) }
    }

    // MARK: - Following the path

    /// Takes in where the store's own file is now (``FileStorage/resolveAgain()`` found it moved):
    /// whether it may be written; the watch follows on the watch queue.
    private func settle(_ location: FileStorage.Location) {
        state.withLock { state in
            state.readOnlyReason = location.readOnlyReason
            state.updateLayerFlags()
        }
        fileMayHaveChanged(source: 0)
    }

    /// Resolves the path of the file `source` again, and watches where it leads now; run on the
    /// watch queue before the file is read.
    ///
    /// Looks until two resolutions agree, so links changed while the watch moved are not missed.
    private func followLinks(_ source: Int) {
        let storage = source == 0 ? backendFile : layerFiles[source - 1]
        guard let storage else { return }
        for _ in 0..<8 {
            storage.resolveAgain()
            let entries = storage.current.resolved.watchedEntries
            let changed = watchedEntries.withLock { watched in
                guard watched[source] != entries else { return false }
                watched[source] = entries
                return true
            }
            guard changed else { return }
            FileWatcher.shared.rewatch(self, source: source, entries: entries)
        }
    }

    /// The store's own file, for a file store.
    private var backendFile: FileStorage? {
        guard case .file(let storage) = backend else { return nil }
        return storage
    }

    // MARK: - Reading the files again

    /// Called by the watcher when the file `source` (0, the store's own; then each system file)
    /// may have changed: it is read on this store's watch queue.
    func fileMayHaveChanged(source: Int = 0) {
        // NB: weakly, here and in the retries: a store whose last suite is gone is released at
        // once, so a suite opened on the file next reads it afresh.
        watchQueue?.async { [weak self] in self?.run(.fileEvent, source: source) }
    }

    /// Feeds `event` to the state machine of the file `source` and runs what it decides.
    private func run(_ event: FileChangeMachine.Event, source: Int) {
        guard case .file(let storage) = backend, let watchQueue else { return }
        var action = reloads.withLock { $0[source].handle(event) }
        if action == .read {
            followLinks(source)
            // NB: under the process lock for a system file too, so its events leave in order with
            // those of the store's own file.
            action = storage.lock.withProcessLock {
                source == 0 ? readAndApply(storage) : readAndApplyLayer(source)
            }
        }
        switch action {
        case .retry(let delay, let token):
            watchQueue.asyncAfter(deadline: .now() + delay.dispatchInterval) { [weak self] in
                self?.run(.retryFired(token: token), source: source)
            }
        case .moveAside where source > 0 || storage.readOnlyReason != nil:
            // Not this store's to move: read it as empty, and leave its bytes as they are.
            let url = source == 0 ? storage.url : layerFiles[source - 1].url
            let reason: String
            switch (source == 0 ? storage : layerFiles[source - 1]).read() {
            case .broken(let why): reason = why
            default:
                fileMayHaveChanged(source: source)
                return
            }
            storage.lock.withProcessLock {
                if source == 0 {
                    absorb(nil)
                } else {
                    applyLayer(source - 1, SystemLayers.Layer(url: url))
                }
            }
            reportInBackground(.corruptFileLeftInPlace(url: url, reason: reason))
        case .moveAside:
            do {
                try storage.withExclusiveLock { () throws(Defaults.StorageError) in
                    guard case .broken(let reason) = storage.read(locked: true) else {
                        // Fixed or replaced while the lock was awaited: look again.
                        fileMayHaveChanged(source: 0)
                        return
                    }
                    replaceBrokenFileLocked(storage, reason: reason)
                }
            } catch {
                reportInBackground(error)
            }
        case .read, .apply, .applyDeletion, .reportUnreadable, .none:
            break
        }
    }

    /// Reads the file and acts on what was found; the caller holds the process lock.
    ///
    /// Returns what is left to do after the lock is released.
    private func readAndApply(_ storage: FileStorage) -> FileChangeMachine.Action {
        let known = state.withLock { $0.file }
        let result = storage.read(knowing: known)
        // NB: the read opens the path as given, so a link re-pointed since `followLinks` gives the
        // new target's bytes. Resolved again before they are applied, so whether the file may be
        // written (`settle`) is known first: applied before it, a read-only file's values reached
        // observers while writes were still taken (seen once in CI: a write accepted, then refused
        // at its flush). A move found here also queues a look at the file where it now leads.
        storage.resolveAgain()
        let finding: FileChangeMachine.Finding
        switch result {
        case .unreadable: finding = .unreadable
        case .unchanged: finding = .unchanged
        case .missing:
            // NB: gone where there was none is no change, unless it was there but unreadable.
            finding = known == nil && !state.withLock({ $0.writesBlocked }) ? .unchanged : .missing
        case .parsed: finding = .parsed
        case .broken: finding = .broken
        }
        let action = reloads.withLock { $0[0].handle(.readFound(finding)) }
        switch (action, result) {
        case (.apply, .parsed(let snapshot)):
            absorb(snapshot)
            return .none
        case (.applyDeletion, _):
            absorb(nil)
            return .none
        case (.reportUnreadable, .unreadable(let error)):
            reportInBackground(error)
            return .none
        default:
            return action
        }
    }

    /// Reads the system file `source` and acts on what was found; the caller holds the process lock.
    ///
    /// Returns what is left to do after the lock is released.
    private func readAndApplyLayer(_ source: Int) -> FileChangeMachine.Action {
        let index = source - 1
        let file = layerFiles[index]
        let known = state.withLock { $0.layers?.layers[index].snapshot }
        let result = file.read(knowing: known)
        let finding: FileChangeMachine.Finding
        switch result {
        case .unreadable: finding = .unreadable
        case .unchanged: finding = .unchanged
        case .missing: finding = known == nil ? .unchanged : .missing
        case .parsed: finding = .parsed
        case .broken: finding = .broken
        }
        let action = reloads.withLock { $0[source].handle(.readFound(finding)) }
        switch (action, result) {
        case (.apply, .parsed(let snapshot)):
            var problem: Defaults.StorageError?
            applyLayer(index, SystemLayers.Layer(url: file.url, snapshot: snapshot, problem: &problem))
            if let problem { reportInBackground(problem) }
            return .none
        case (.applyDeletion, _):
            applyLayer(index, SystemLayers.Layer(url: file.url))
            return .none
        case (.reportUnreadable, .unreadable(let error)):
            reportInBackground(error)
            return .none
        default:
            return action
        }
    }

    /// Brings memory up to the file as it is now; the caller holds the exclusive lock.
    ///
    /// Pending changes are flushed (which takes in what the file holds); otherwise the file is read
    /// and applied, and a missing file means every key is gone.
    func catchUpLocked(_ storage: FileStorage) -> Result<Void, Defaults.StorageError> {
        if state.withLock({ $0.isDirty }) { return flushLocked(storage) }
        switch storage.readSettled(knowing: state.withLock { $0.file }, locked: true) {
        case .missing:
            absorb(nil)
        case .unchanged:
            break
        case .parsed(let snapshot):
            absorb(snapshot)
        case .broken(let reason):
            replaceBrokenFileLocked(storage, reason: reason)
        case .unreadable(let error):
            return .failure(error)
        }
        return .success(())
    }

    /// Moves a file that broke while open aside, keeps memory as it is (not the defaults), and
    /// writes memory back as the file; the caller holds the exclusive lock.
    private func replaceBrokenFileLocked(_ storage: FileStorage, reason: String) {
        switch storage.moveAside(reason: reason) {
        case .success(let report):
            state.withLock { state in
                let names = state.tree.keys
                state.markChanged(names)
                state.file = nil
            }
            let written = flushLocked(storage)
            // NB: after the flush, so a handler that looks finds the new file.
            reportInBackground(report.brokeWhileOpen)
            if case .failure(let error) = written { reportInBackground(error) }
        case .failure(let report):
            reportInBackground(report)
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

    /// Makes memory match `file` (the file as just read or written; `nil`: there is none), except
    /// for keys changed here since the last flush, and reports the keys that changed as one
    /// external change (those someone can be told of: see below).
    ///
    /// The caller holds the process lock, so events leave in the order they were applied.
    private func absorb(_ file: FileStorage.Snapshot?) {
        let members = file?.members ?? [:]
        // NB: everything taken out of memory leaves the lock in `dropped`, and is released after it:
        // an old decoded value may be an instance of a class of the user's, whose `deinit` is user
        // code, and a change nobody is told of is not in the event that would carry it out.
        var dropped: [Defaults.Suite.CacheEntry?] = []
        let (changes, suiteObservers) = state.withLock {
            state -> ([String: Defaults.StoredChange], (any Defaults.ObserverSlot)?) in
            // NB: a file parsed as a change of the one memory holds names the keys that changed
            // (``FileStorage/parseChange(of:to:)``); memory differs from the file it holds only in
            // keys changed here, which are not taken in, so only those names need comparing.
            let changedNames = file?.changes.flatMap { $0.base == state.file?.serial ? $0.names : nil }
            state.file = file
            state.writesBlocked = false
            // NB: listed first and made a dictionary of the right size at the end: growing one
            // key by key was a fifth of taking in a file of thousands of new keys.
            var listed: [(name: String, stored: JSONValue?, change: Defaults.StoredChange?)] = []
            let hasLocalChanges = state.isDirty
            // NB: what is kept beside a changed key, found with one search; only for keys that
            // changed, and searched by a name hashed once.
            func change(of name: String, from old: JSONValue?, to new: JSONValue?) {
                let entry = state.keys[Defaults.Suite.HashedName(name)]
                guard !hasLocalChanges || entry?.isChanged != true else { return }
                // NB: what reads see of the key: a locked key does not change, and a system
                // file's value stands in for the user's where the user's file has none.
                let seenOld = state.hasLayers ? state.valueBeneath(name, stored: old) : old
                let seenNew = state.hasLayers ? state.valueBeneath(name, stored: new) : new
                guard !state.hasLayers || (!state.isLocked(name) && seenOld != seenNew) else {
                    listed.append((name, new, nil))
                    return
                }
                let change = Defaults.StoredChange(
                    old: seenOld,
                    new: seenNew,
                    oldDecoded: entry?.decoded,
                    observers: entry?.observers
                )
                listed.append((name, new, change))
            }
            if let changedNames {
                for name in changedNames {
                    let old = state.tree[name]
                    let new = members[name]
                    if old != new { change(of: name, from: old, to: new) }
                }
                assert(
                    Set(listed.map(\.name)) == Self.differences(members, state.tree, state),
                    "memory differs from the file it holds in a key not changed here"
                )
            } else {
                // Keys of the file that memory also holds; when that is all of memory, nothing was removed.
                var shared = 0
                for (name, new) in members {
                    let old = state.tree[name]
                    if old != nil { shared += 1 }
                    if old != new { change(of: name, from: old, to: new) }
                }
                if shared < state.tree.count {
                    for (name, old) in state.tree where members[name] == nil { change(of: name, from: old, to: nil) }
                }
            }
            return Self.take(listed, into: &state, dropping: &dropped)
        }
        dropped.removeAll()
        deliverExternally(changes, suiteObservers: suiteObservers)
    }

    /// Puts `listed` (a key, its new stored value, and its change when reads see one) into memory,
    /// and returns the changes someone can be told of, with the observers of the whole suite; what
    /// leaves memory goes into `dropped`, for the caller to release after the lock.
    @inline(__always)
    static func take(
        _ listed: [(name: String, stored: JSONValue?, change: Defaults.StoredChange?)],
        into state: inout Defaults.Suite.State,
        dropping dropped: inout [Defaults.Suite.CacheEntry?]
    ) -> ([String: Defaults.StoredChange], (any Defaults.ObserverSlot)?) {
        guard !listed.isEmpty else { return ([:], nil) }
        // NB: the event lists only changes someone can be told of: those of observed keys,
        // unless a sink gets every change or the whole suite is observed. A file of thousands of
        // keys nobody observes makes no event of thousands of changes.
        let isAllReported = Defaults.hasEveryChangeSinks || state.suiteObservers != nil
        state.tree.reserveCapacity(state.tree.count + listed.count)
        var changes: [String: Defaults.StoredChange] = .init(minimumCapacity: isAllReported ? listed.count : 0)
        for (name, stored, change) in listed {
            state.tree[name] = stored
            // NB: a change reads do not see keeps the key's decoded value and tells nobody.
            guard let change else { continue }
            // NB: only a key that had a decoded value kept has one to forget.
            if change.oldDecoded != nil { dropped.append(state.forgetDecoded(name)) }
            if isAllReported || change.observers != nil {
                changes[name] = change
            } else if change.oldDecoded != nil {
                dropped.append(change.oldDecoded)
            }
        }
        state.generation &+= 1
        guard !changes.isEmpty else { return ([:], nil) }
        guard state.hasOverrides else { return (changes, state.suiteObservers) }
        // NB: reads of an overridden key return the override, which did not change.
        let reported = state.overrides!.reportable(changes)
        for (name, change) in changes where reported[name] == nil { dropped.append(change.oldDecoded) }
        return (reported, state.suiteObservers)
    }

    /// The keys whose values in `members` and in memory differ, but for those changed here: what a
    /// comparison of the whole file with memory finds; for checking the comparison of changed keys.
    private static func differences(
        _ members: [String: JSONValue],
        _ tree: [String: JSONValue],
        _ state: Defaults.Suite.State
    ) -> Set<String> {
        var names: Set<String> = []
        for (name, value) in members where tree[name] != value { names.insert(name) }
        for name in tree.keys where members[name] == nil { names.insert(name) }
        return names.filter { !state.isDirty || !state.isChanged($0) }
    }

    /// Makes the system file at `index` bring `layer` now, and reports the keys whose reads change
    /// as one external change; the caller holds the process lock.
    ///
    /// A key changes for reads when its system value changes and neither the user's file nor this
    /// run's overrides set it, or when it is locked or unlocked and the two values differ.
    private func applyLayer(_ index: Int, _ layer: SystemLayers.Layer) {
        // NB: as in `absorb`: what leaves memory is released after the lock.
        var dropped: [Defaults.Suite.CacheEntry?] = []
        let (changes, suiteObservers) = state.withLock {
            state -> ([String: Defaults.StoredChange], (any Defaults.ObserverSlot)?) in
            guard let before = state.layers else { return ([:], nil) }
            var after = before
            after.replace(index, with: layer)
            var names: Set<String> = []
            for (name, value) in after.values where before.values[name] != value { names.insert(name) }
            for name in before.values.keys where after.values[name] == nil { names.insert(name) }
            for name in after.locks.keys where before.locks[name] == nil { names.insert(name) }
            for name in before.locks.keys where after.locks[name] == nil { names.insert(name) }
            let seenBefore = names.map { Self.seen($0, under: before, in: &state) }
            state.layers = after
            state.updateLayerFlags()
            guard !names.isEmpty else { return ([:], nil) }
            state.generation &+= 1
            let isAllReported = Defaults.hasEveryChangeSinks || state.suiteObservers != nil
            var changes: [String: Defaults.StoredChange] = [:]
            for (name, old) in zip(names, seenBefore) {
                let new = Self.seen(name, under: after, in: &state)
                let hashed = Defaults.Suite.HashedName(name)
                let entry = state.keys[hashed]
                // NB: the decoded value kept is that of the stored value reads fall back to when no
                // override stands in front (the lock's, the user's, the system's): forgotten when
                // that changed, even if an override hides it from reads until now.
                if old.beneath != new.beneath { dropped.append(state.forgetDecoded(name)) }
                guard old.value != new.value, isAllReported || entry?.observers != nil else { continue }
                changes[name] = Defaults.StoredChange(
                    old: old.value,
                    new: new.value,
                    oldDecoded: old.decoded ?? (old.isOverridden ? nil : entry?.decoded),
                    newDecoded: new.decoded,
                    observers: entry?.observers
                )
            }
            return (changes, state.suiteObservers)
        }
        dropped.removeAll()
        deliverExternally(changes, suiteObservers: suiteObservers)
    }

    /// What reads of `name` see with the system files `layers` beneath the user's: a lock's value,
    /// an override's stored form (and its decoded value, when it was read already), or the user's
    /// value, or else the system value; and the stored value beneath any override.
    private static func seen(
        _ name: String,
        under layers: SystemLayers,
        in state: inout Defaults.Suite.State
    ) -> (value: JSONValue?, decoded: Defaults.Suite.CacheEntry?, isOverridden: Bool, beneath: JSONValue?) {
        if let locked = layers.lockedValue(named: name) { return (locked, nil, true, locked) }
        let beneath = state.tree[name] ?? layers.values[name]
        if state.hasOverrides, let candidate = state.overrides!.candidates(for: name).first {
            return (candidate.forms.first, state.overrides!.cache[name], true, beneath)
        }
        return (beneath, nil, false, beneath)
    }

    /// Delivers `changes`, read from outside, as one external change event, on the delivery queue.
    func deliverExternally(
        _ changes: [String: Defaults.StoredChange],
        suiteObservers: (any Defaults.ObserverSlot)?
    ) {
        guard !changes.isEmpty, let deliveryQueue else { return }
        deliveryQueue.async { [weak self] in
            // NB: no suite left means no observer left: an observer holds a key, which holds its suite.
            guard let suite = self?.anySuite else { return }
            let event = Defaults.SuiteChange(
                suite: suite,
                changes: changes,
                origin: .external,
                isPropagationSuppressed: false,
                suiteObservers: suiteObservers
            )
            Defaults.deliverToSinks(event)
        }
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

/// The file-backed stores of this process, by the path of their file as given (and those of their
/// system files): one per path.
///
/// By the path as given, not where it leads: a store follows its path, so a suite on a link and a
/// suite on the file the link leads to now part ways when the link is re-pointed.
enum FileStores {
    private final class WeakStore: @unchecked Sendable {  // only the weak reference, read under the lock
        weak var store: Store?
        init(_ store: Store) { self.store = store }
    }

    private static let stores = Lock<[String: WeakStore]>([:])
    /// Broadcast whenever a file store goes away, for ``waitUntilNoStore(under:until:)``.
    private static let gone = NSCondition()
    /// How many file stores went away; read and changed only under ``gone``.
    nonisolated(unsafe) private static var goneCount = 0

    /// Tells those waiting in ``waitUntilNoStore(under:until:)`` that a store went away.
    static func storeWentAway() {
        gone.lock()
        goneCount += 1
        gone.broadcast()
        gone.unlock()
    }

    /// Waits until no store of a file under `directory` is alive (so none will write there again),
    /// or until `deadline`.
    ///
    /// - Returns: The paths of the stores still alive at the deadline; empty when none is.
    static func waitUntilNoStore(under directory: String, until deadline: Date) -> [String] {
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        while true {
            gone.lock()
            let seen = goneCount
            gone.unlock()
            // NB: looked at holding no lock: loading a weak reference makes a strong one, which
            // may be the store's last, so its `deinit` (and `storeWentAway`) can run right here.
            let entries = stores.withLock { stores in stores.filter { $0.key.hasPrefix(prefix) } }
            let alive = entries.compactMap { key, entry in entry.store != nil ? key : nil }
            if alive.isEmpty { return [] }
            gone.lock()
            defer { gone.unlock() }
            // NB: a store gone since `seen` was read has counted: no wait then.
            while goneCount == seen {
                if !gone.wait(until: deadline) { return alive }
            }
        }
    }

    private static let installExitHandler: Void = {
        atexit { FileStores.flushAll() }
    }()

    /// The key a store is found by: the path of its file, and those of the system files beneath it.
    private static func key(_ storage: FileStorage, _ layers: [FileStorage]) -> String {
        layers.reduce(storage.givenPath) { $0 + "\n" + $1.givenPath }
    }

    /// The store of the file at `url` over the system files `systemFiles`, loading the files if no
    /// suite has them open.
    ///
    /// - Returns: The store, and what its opener must be told: what loading found wrong, and that
    ///   the file can only be polled, when this call loaded it.
    static func store(for url: URL, systemFiles: [URL] = []) -> (store: Store, problems: [Defaults.StorageError]) {
        _ = installExitHandler
        let storage = FileStorage(url: url)
        let layerFiles = systemFiles.map { FileStorage(url: $0, isWritten: false) }
        let key = key(storage, layerFiles)
        if let open = stores.withLock({ $0[key]?.store }) { return (open, []) }
        // NB: loaded outside the registry lock: loading a corrupt file takes the file's lock, which
        // another thread may hold while it opens a suite.
        var problems: [Defaults.StorageError] = []
        var snapshot: FileStorage.Snapshot?
        var writesBlocked = false
        switch storage.load() {
        case .loaded(let loaded):
            snapshot = loaded
        case .movedAside(let error), .brokenReadOnly(let error):
            problems.append(error)
        case .unreadable(let error):
            writesBlocked = true
            problems.append(error)
        }
        let layers = layerFiles.map { loadLayer($0, problems: &problems) }
        let fresh = Store(
            backend: .file(storage),
            file: snapshot,
            layers: (layerFiles, SystemLayers(layers)),
            writesBlocked: writesBlocked
        )
        let winner = stores.withLock { stores -> Store? in
            if let open = stores[key]?.store { return open }
            stores = stores.filter { $0.value.store != nil }
            stores[key] = WeakStore(fresh)
            return nil
        }
        // NB: the loser's reports still go out: its load may be what moved a corrupt file aside.
        if let winner { return (winner, problems) }
        let sources = ([storage] + layerFiles).map(\.current.resolved.watchedEntries)
        let polling = FileWatcher.shared.watch(fresh, sources: sources)
        return (fresh, problems + polling)
    }

    /// Reads a system file for a store being opened: never moved or written, whatever it holds.
    private static func loadLayer(_ file: FileStorage, problems: inout [Defaults.StorageError]) -> SystemLayers.Layer {
        var problem: Defaults.StorageError?
        defer { if let problem { problems.append(problem) } }
        switch file.readSettled() {
        case .parsed(let snapshot), .unchanged(let snapshot):
            return SystemLayers.Layer(url: file.url, snapshot: snapshot, problem: &problem)
        case .missing:
            return SystemLayers.Layer(url: file.url)
        case .broken(let reason):
            problem = .corruptFileLeftInPlace(url: file.url, reason: reason)
            return SystemLayers.Layer(url: file.url)
        case .unreadable(let error):
            problem = error
            return SystemLayers.Layer(url: file.url)
        }
    }

    /// Flushes every open file store; run at a normal exit.
    static func flushAll() {
        let open = stores.withLock { $0.values.compactMap(\.store) }
        for store in open {
            guard case .failure(let error) = store.flushNow() else { continue }
            // NB: now, on this thread: a queue would not run again before the process ends.
            for handler in store.errorHandlers { handler(error) }
        }
    }
}
