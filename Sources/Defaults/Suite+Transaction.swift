import Synchronization

extension Defaults.Suite {
    /// Runs `body` as one transaction and returns its value.
    ///
    /// Writes to this suite inside `body` land together when it returns: other threads see all of
    /// them or none, they make one change event listing every key that changed, and at most one
    /// file write. Reads inside `body` see the suite as it was when the transaction began plus the
    /// body's own writes. If `body` throws, nothing it wrote is kept. A transaction opened inside
    /// another on the same suite folds into the outer one (and if it throws, only its own writes
    /// are dropped).
    ///
    /// ```swift
    /// suite.transaction {
    ///     suite[.width] = 800
    ///     suite[.height] = 600
    /// }
    /// ```
    ///
    /// Writes from other threads made while `body` runs are not part of the transaction; where
    /// both write the same key, the transaction's value lands last.
    ///
    /// - Parameter body: The work to do; it runs on the calling thread.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    @discardableResult
    public func transaction<Result>(_ body: () throws -> Result) rethrows -> Result {
        let (result, delivery) = try runTransaction(isExclusive: false, body) {
            writes,
            suppressedKeys,
            removesEverything,
            _ in
            committing(suppressedKeys: suppressedKeys, removesEverything: removesEverything) { _ in writes }
        }
        delivery?.deliver()
        if delivery != nil { store.refreshMigrationLayerIfAny() }
        return result
    }

    /// Runs `body` as a transaction and hands its writes to `commit`; returns the body's value and
    /// the events to deliver, so a caller holding the file's lock can deliver them after releasing it.
    ///
    /// `commit` gets the writes (`nil` removes), the keys last written inside `withoutPropagation`,
    /// whether the body called `removeAll()` (so the file is to be cleared of keys memory does
    /// not know too), and, for an exclusive transaction, the stored value of each key the body read
    /// before writing it, as the transaction began (`nil`: absent); it is not called when the body
    /// wrote nothing, or for a transaction nested in another on the same suite (whose writes join
    /// the outer one's).
    func runTransaction<Result>(
        isExclusive: Bool,
        _ body: () throws -> Result,
        commit: ([String: JSONValue?], Set<String>, Bool, [String: JSONValue?]) -> Delivery?
    ) rethrows -> (Result, Delivery?) {
        if let outer = TransactionScope.find(for: self) {
            let saved = outer.savePoint()
            do {
                return (try body(), nil)
            } catch {
                outer.rollBack(to: saved)
                throw error
            }
        }
        let scope = store.openTransaction(on: self, isExclusive: isExclusive)
        defer { store.closeTransaction() }
        let result: Result
        do {
            result = try TransactionScope.$current.withValue(scope) { try body() }
        } catch {
            _ = scope.close()
            throw error
        }
        // Closed first, so a task the body started writes directly from now on.
        var (writes, suppressedKeys, removedAll, reads) = scope.close()
        guard !writes.isEmpty || removedAll else { return (result, nil) }
        // Before the commit, which an exclusive transaction puts in the file directly.
        let refused = store.refuse(&writes)
        reportRefusals(refused)
        guard !writes.isEmpty || removedAll else { return (result, nil) }
        return (result, commit(writes, suppressedKeys, removedAll, reads))
    }

    /// Runs `body` as one transaction that no other process can interleave with: a
    /// read-modify-write across processes.
    ///
    /// For a file-backed suite it takes the file's exclusive lock (the one every writer of the file
    /// takes, in every process), brings this suite up to the file's current contents, runs `body`,
    /// commits its writes, writes the file, and only then releases the lock. So four processes that
    /// each add one to a counter this way 250 times end at exactly 1,000:
    ///
    /// ```swift
    /// try suite.exclusiveTransaction {
    ///     suite[.launchCount] += 1
    /// }
    /// ```
    ///
    /// Everything ``transaction(_:)`` promises holds too: one change event, readers in this process
    /// never see half of it, and if `body` throws nothing it wrote is kept. The writes reach memory
    /// only once the file holds them: if the file cannot be written, nothing the body wrote is kept,
    /// and the error is thrown. Observers are called after the lock is released, on the calling
    /// thread, after any outside changes the transaction took in first. Other processes' writers
    /// wait while `body` runs, so keep it short; their readers do not wait. Inside `body`, do not
    /// synchronize or start an exclusive transaction on another file: two processes doing so in
    /// opposite order would each wait for the other's lock.
    ///
    /// On a file this process may not write, it runs nothing and throws
    /// ``Defaults/StorageError/readOnlyFile(url:reason:)``; writes to keys a system file locks are
    /// left out of the commit and reported.
    ///
    /// For an in-memory suite or one over `UserDefaults` it is a plain ``transaction(_:)``. Inside
    /// another exclusive transaction on the same file it folds into that one; inside a plain
    /// transaction on the same suite it stops the program, since the outer one could not hold the lock.
    ///
    /// - Parameter body: The work to do; it runs on the calling thread.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or a ``Defaults/StorageError`` when the file could not be
    ///   locked, read or written (also reported to the error handler: a failed commit of what was
    ///   pending once while the same failure lasts, as `synchronize()` and the timer report it).
    @discardableResult
    public func exclusiveTransaction<Result>(_ body: () throws -> Result) throws -> Result {
        if let outer = TransactionScope.find(for: self) {
            precondition(
                outer.isExclusive,
                "Defaults: exclusiveTransaction cannot run inside a plain transaction on the same suite"
            )
            return try transaction(body)
        }
        // The migrations of keys created just now run before, in a transaction of their own.
        store.settlePendingMigrations()
        // Over UserDefaults, other code writes directly: nothing could make the commit exclusive.
        guard case .backend(let custom) = store.backend, store.writeThrough == nil else { return try transaction(body) }
        if let locking = store.locking { return try exclusiveTransaction(on: locking, custom, body) }
        return try exclusiveTransaction(on: custom, body)
    }

    /// ``exclusiveTransaction(_:)`` over a backend with a lock of its own (the file): the body runs
    /// holding that lock (the file's exclusive lock), after memory has caught up with the backend.
    private func exclusiveTransaction<Result>(
        on file: any LockingBackend,
        _ custom: BackendConnection,
        _ body: () throws -> Result
    ) throws -> Result {
        var failure: Defaults.StorageError?
        var outcome: (Result, Delivery?)?
        var bodyRan = false
        do {
            // The commit lock, then the file's: the order every commit takes them in.
            custom.commitLock.lock()
            defer { custom.commitLock.unlock() }
            let store = store
            let catchUp = { store.commitPendingLocked(to: custom) }
            try file.exclusively(catchUp: catchUp) {
                bodyRan = true
                // A `removeAll()` in the body removes every key the file holds: it was read
                // under the lock just now, so memory knows every one of them.
                outcome = try runTransaction(isExclusive: true, body) { writes, suppressedKeys, _, _ in
                    // Into the file first, then into memory: a write that fails leaves nothing.
                    do throws(Defaults.StorageError) {
                        // The file was read under this lock as the body began, so it brings
                        // nothing new unless a broken file was put back meanwhile.
                        let found = try file.writeLocked(writes, removesEverything: false)
                        store.committedOutsideFlush()
                        if !found.isEmpty { store.absorbOutside(found, isWhole: false, revision: nil) }
                    } catch {
                        failure = error
                        return nil
                    }
                    return committing(suppressedKeys: suppressedKeys, isWritten: true) { _ in writes }
                }
            }
        } catch let error as Defaults.StorageError where !bodyRan {
            // The file could not be locked, read or written before the body ran: a read-only file,
            // a lock that failed, pending changes that could not be committed. Once while it lasts,
            // as every failed commit is (``Store/reportsCommitFailure(_:)``).
            if store.reportsCommitFailure(error) { report(error) }
            throw error
        }
        // After the lock, and after the outside changes taken in while catching up.
        store.waitForQueuedDeliveries()
        outcome?.1?.deliver()
        if let failure {
            // Once while it lasts, as every failed commit is: a `migrate()` or a transaction
            // tried again over the same obstacle says nothing new.
            if store.reportsCommitFailure(failure) { report(failure) }
            throw failure
        }
        return outcome!.0
    }
}

extension Defaults.Suite {
    /// ``exclusiveTransaction(_:)`` over a custom backend: the body runs on memory, and its writes
    /// are committed only if every key it read still holds, in the backend, the value it read;
    /// otherwise the suite takes in the current values and runs the body again.
    private func exclusiveTransaction<Result>(on custom: BackendConnection, _ body: () throws -> Result) throws
        -> Result
    {
        guard custom.backend.supportsConditionalCommit else {
            let error = Defaults.StorageError.exclusiveCommitUnsupported(backend: custom.backend.name)
            report(error)
            throw error
        }
        while true {
            // What is pending first, so the values the body reads are the backend's.
            if case .failure(let error) = store.flushNow() {
                // Once while it lasts, as every failed commit is (``Store/reportsCommitFailure(_:)``).
                if store.reportsCommitFailure(error) { report(error) }
                // A refusal thrown here is not kept for the next `synchronize()` as well.
                if error.isRefusal { _ = takeRefusal() }
                throw error
            }
            var failure: Defaults.StorageError?
            var conflicted = false
            let (result, delivery) = try runTransaction(isExclusive: true, body) {
                writes,
                suppressedKeys,
                removedAll,
                reads in
                switch store.commitConditionally(writes, removesEverything: removedAll, ifUnchanged: reads, to: custom)
                {
                case .success(true):
                    return committing(suppressedKeys: suppressedKeys, isWritten: true) { _ in writes }
                case .success(false):
                    conflicted = true
                case .failure(let error):
                    failure = error
                }
                return nil
            }
            if conflicted { continue }
            // After the outside changes taken in first, so observers see the two in order.
            store.waitForQueuedDeliveries()
            delivery?.deliver()
            if let failure {
                if store.reportsCommitFailure(failure) { report(failure) }
                throw failure
            }
            return result
        }
    }
}

/// The writes of an open transaction, visible to the task or thread that opened it.
final class TransactionScope: Sendable {
    /// The innermost open transaction of this task or thread, on any suite.
    @TaskLocal static var current: TransactionScope?

    struct Buffer {
        var snapshot: [String: JSONValue]
        /// `nil` means removed.
        var writes: [String: JSONValue?] = [:]
        /// Keys last written inside `withoutPropagation`.
        var suppressedKeys: Set<String> = []
        /// Whether the body called `removeAll()`.
        var removedAll = false
        /// An exclusive transaction's: the stored value of each key read before it was written, as
        /// the transaction began (`nil`: absent).
        var reads: [String: JSONValue?] = [:]
        /// Set once the transaction has ended: a task started inside it may outlive it.
        var isClosed = false

        /// Every stored value as the transaction sees it.
        var values: [String: JSONValue] {
            var values = snapshot
            for (name, value) in writes { values[name] = value }
            return values
        }

        /// Counts every stored value not written yet as read, but those `isUncounted` names.
        mutating func countEveryValueRead(but isUncounted: (String) -> Bool) {
            for (name, value) in snapshot
            where writes.index(forKey: name) == nil && reads.index(forKey: name) == nil && !isUncounted(name) {
                reads[name] = .some(value)
            }
        }

        /// Records a write; the last write to a key decides whether its change is propagated.
        mutating func set(_ name: String, to value: JSONValue?, suppressed: Bool) {
            writes[name] = .some(value)
            if suppressed {
                suppressedKeys.insert(name)
            } else {
                suppressedKeys.remove(name)
            }
        }
    }

    /// The writes and suppressed keys to restore when a nested transaction throws.
    struct SavePoint {
        let writes: [String: JSONValue?]
        let suppressedKeys: Set<String>
        let removedAll: Bool
    }

    /// The state the transaction is on: every suite on one file shares it.
    let suite: ObjectIdentifier
    let parent: TransactionScope?
    /// Whether it holds the file's exclusive lock (``Defaults/Suite/exclusiveTransaction(_:)``).
    let isExclusive: Bool
    private let buffer: Lock<Buffer>

    init(suite: Defaults.Suite, snapshot: [String: JSONValue], parent: TransactionScope?, isExclusive: Bool) {
        self.suite = suite.stateIdentifier
        self.parent = parent
        self.isExclusive = isExclusive
        self.buffer = Lock(Buffer(snapshot: snapshot))
    }

    /// The open transaction on `suite` in this task or thread, if any.
    static func find(for suite: Defaults.Suite) -> TransactionScope? {
        var scope = current
        let identifier = suite.stateIdentifier
        while let candidate = scope {
            if candidate.suite == identifier, candidate.isOpen { return candidate }
            scope = candidate.parent
        }
        return nil
    }

    private var isOpen: Bool { buffer.withLock { !$0.isClosed } }

    /// The stored value of `name` as the transaction sees it; an exclusive transaction counts it
    /// as read, unless `countsRead` is `false` (a secret's name: reads see its file, never what
    /// is stored under it, so the commit must not depend on that).
    func storedValue(named name: String, countsRead: Bool = true) -> JSONValue? {
        buffer.withLock { buffer in
            if let written = buffer.writes[name] { return written }
            let value = buffer.snapshot[name]
            if isExclusive, countsRead, buffer.reads.index(forKey: name) == nil { buffer.reads[name] = .some(value) }
            return value
        }
    }

    /// Every stored value as the transaction sees it, without counting any as read.
    func snapshotValues() -> [String: JSONValue] {
        buffer.withLock { $0.values }
    }

    /// Every stored value as the transaction sees it; an exclusive transaction counts each as
    /// read, but those `isUncounted` names (secrets' names, as in ``storedValue(named:countsRead:)``).
    func storedValues(isUncounted: (String) -> Bool = { _ in false }) -> [String: JSONValue] {
        buffer.withLock { buffer in
            if isExclusive { buffer.countEveryValueRead(but: isUncounted) }
            return buffer.values
        }
    }

    /// Adds writes to the transaction; `false` when it has already ended (write directly then).
    func record(_ writes: [String: JSONValue?], suppressed: Bool) -> Bool {
        buffer.withLock { buffer in
            guard !buffer.isClosed else { return false }
            for (name, value) in writes { buffer.set(name, to: value, suppressed: suppressed) }
            return true
        }
    }

    /// Removes every value as part of the transaction; `false` when it has already ended.
    func removeAll(suppressed: Bool) -> Bool {
        buffer.withLock { buffer in
            guard !buffer.isClosed else { return false }
            for name in Set(buffer.snapshot.keys).union(buffer.writes.keys) {
                buffer.set(name, to: nil, suppressed: suppressed)
            }
            buffer.removedAll = true
            return true
        }
    }

    /// Ends the transaction and hands over its writes.
    func close() -> (
        writes: [String: JSONValue?], suppressedKeys: Set<String>, removedAll: Bool, reads: [String: JSONValue?]
    ) {
        buffer.withLock { buffer in
            buffer.isClosed = true
            return (buffer.writes, buffer.suppressedKeys, buffer.removedAll, buffer.reads)
        }
    }

    func savePoint() -> SavePoint {
        buffer.withLock {
            SavePoint(writes: $0.writes, suppressedKeys: $0.suppressedKeys, removedAll: $0.removedAll)
        }
    }

    func rollBack(to savePoint: SavePoint) {
        buffer.withLock { buffer in
            buffer.writes = savePoint.writes
            buffer.suppressedKeys = savePoint.suppressedKeys
            buffer.removedAll = savePoint.removedAll
        }
    }
}
