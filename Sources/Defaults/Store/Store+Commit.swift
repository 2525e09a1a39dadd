import Foundation

/// Commits to the backend, and what it reports: every report and every commit passes here.
extension Store {
    /// Asks the backend to start reporting changes made elsewhere; once, by the opener of a new store.
    func startReporting() {
        guard case .backend(let custom) = backend else { return }
        custom.backend.startReporting(to: makeUpdates())
    }

    /// What the store hands its backend to report with.
    func makeUpdates() -> Defaults.BackendUpdates {
        // The store weakly: a backend keeps its receiver, and must not keep the store alive.
        Defaults.BackendUpdates(
            changed: { [weak self] values, revision in
                guard let self else { return }
                backendReadWell()
                receive(.changed(values, revision: revision))
            },
            replaced: { [weak self] contents in
                guard let self else { return }
                backendReadWell()
                receive(.replaced(contents))
                noteActivity(.reloaded(backend: backendName))
            },
            report: { [weak self] error in self?.reportFromBackend(error) },
            reconnected: { [weak self] in
                guard let self else { return }
                noteActivity(.reconnected(backend: backendName))
            },
            writability: { [weak self] reason in self?.setReadOnlyReason(reason) },
            commitWaiting: { [weak self] in self?.armTimerIfDirty() },
            receiver: { [weak self] in self }
        )
    }

    /// Reports what the backend reported, in the background, unless a commit reported the same
    /// failure and none has succeeded since (``FlushMachine/reportsBackendProblem(_:)``).
    private func reportFromBackend(_ error: Defaults.StorageError) {
        let text = error.description
        guard state.withLock({ $0.flushing.machine.reportsBackendProblem(text) }) else { return }
        reportInBackground(error)
    }

    /// Notes that loading the store found `problem` and its opener reports it: a commit that fails
    /// the same way says nothing new (``FlushMachine/reportsBackendProblem(_:)``).
    func noteLoadProblem(_ problem: Defaults.StorageError) {
        let text = problem.description
        state.withLock { _ = $0.flushing.machine.reportsBackendProblem(text) }
    }

    /// The backend reported values: what it reported as a problem before is behind it.
    private func backendReadWell() {
        state.withLock { $0.flushing.machine.backendReadWell() }
    }

    /// Whether a commit's failure `error` is to be reported to the error handlers.
    ///
    /// A refusal always is: its changes are given up, each a loss of its own. A failure, whose
    /// changes wait for the next try, is reported once while it lasts: not again when a retry (the
    /// timer's, or `synchronize()`) fails the same way, nor when the backend reported it already,
    /// until a commit succeeds (``FlushMachine/reportsFailure(_:)``).
    func reportsCommitFailure(_ error: Defaults.StorageError) -> Bool {
        guard !error.isRefusal else { return true }
        let text = error.description
        return state.withLock { $0.flushing.machine.reportsFailure(text) }
    }

    /// An exclusive transaction's commit succeeded: a failure reported before is behind it, so
    /// the next one is news (``reportsCommitFailure(_:)``).
    func committedOutsideFlush() {
        state.withLock { $0.flushing.machine.committedOutside() }
    }

    /// Takes in what the backend reported, now or after the commit under way.
    func receive(_ report: BackendConnection.Report) {
        guard case .backend(let custom) = backend else { return }
        custom.receive(report) { apply($0, leaving: $1) }
    }

    /// Takes in `report`, but for the keys `leaving` (a commit wrote newer values for them).
    private func apply(_ report: BackendConnection.Report, leaving stale: Set<String>) {
        switch report {
        case .changed(var values, let revision):
            for name in stale { values.removeValue(forKey: name) }
            absorbOutside(values, isWhole: false, revision: revision)
        case .replaced(let contents):
            var values = contents.values.mapValues { Optional($0) }
            if let record = contents.deferredRecord { values[Defaults.Suite.migrationRecordName] = record.value }
            // Left out, and kept: a key a whole report lacks would read as removed.
            for name in stale { values.removeValue(forKey: name) }
            absorbOutside(values, isWhole: true, revision: contents.revision, leaving: stale)
        }
    }

    /// Commits the changes made here since the last commit to `custom`; the caller reports a failure.
    func commitPending(to custom: BackendConnection) -> Result<Void, Defaults.StorageError> {
        guard state.withLock({ $0.flushing.commitNeeded }) else { return .success(()) }
        custom.commitLock.lock()
        defer { custom.commitLock.unlock() }
        return commitPendingLocked(to: custom).map { _ in () }
    }

    /// What waits to be committed: the changed keys' values, their names, and whether everything
    /// else goes (a `removeAll()`).
    typealias Pending = (changes: [String: JSONValue?], changed: Set<String>, clears: Bool, keeping: Set<String>)

    /// ``commitPending(to:)`` for a caller that holds the commit lock; succeeds with
    /// whether there was anything to commit.
    func commitPendingLocked(to custom: BackendConnection) -> Result<Bool, Defaults.StorageError> {
        var retry = FlushMachine.Action.none
        var isRetry = false
        // The changes are taken inside `committing`, once reports are held back: a report taken
        // in between (its keys no longer marked changed, not yet committed) would put another's
        // older value in memory under the value this commit stores, and nothing would mend it.
        let outcome = custom.committing(
            { () -> (Pending, Result<Defaults.BackendCommitResult, Defaults.StorageError>)? in
                let taken = state.withLock { $0.startCommit(isRetry: &isRetry) }
                guard let pending = taken else { return nil }
                custom.callingBackend()
                do throws(Defaults.StorageError) {
                    let result = try custom.backend.commit(
                        Defaults.BackendChanges(
                            values: pending.changes,
                            removesEverything: pending.clears,
                            keeping: pending.keeping
                        )
                    )
                    return (pending, .success(result))
                } catch {
                    return (pending, .failure(error))
                }
            },
            settle: { outcome -> BackendConnection.Settled in
                guard let (pending, result) = outcome else { return BackendConnection.Settled() }
                // Before the reports held meanwhile are taken in: a key put back is not
                // overwritten by a report of another's value.
                switch result {
                case .success(let committed):
                    state.withLock { $0.flushing.machine.committed() }
                    // What the commit found others had changed is taken in but for the keys it
                    // wrote, in its place among the reports held meanwhile.
                    guard !committed.foundChanges.isEmpty else {
                        return BackendConnection.Settled(written: pending.changed)
                    }
                    return BackendConnection.Settled(
                        written: pending.changed,
                        found: (committed.foundChanges, committed.reportsBefore)
                    )
                case .failure(let error) where error.isRefusal:
                    // Refused, not failed: the changes are given up, and memory goes back to what
                    // the backend holds (it reports that). The next `synchronize()` throws it.
                    state.withLock { $0.flushing.commitRefused(error) }
                case .failure:
                    retry = state.withLock { state in
                        state.markChanged(pending.changed)
                        return state.flushing.commitFailed(clears: pending.clears)
                    }
                }
                // A refused or failed commit stored nothing: the reports held meanwhile are taken in
                // whole (a refused one's put memory back).
                return BackendConnection.Settled()
            },
            apply: { apply($0, leaving: $1) }
        )
        guard let (pending, result) = outcome else { return .success(false) }
        if isRetry { noteActivity(.retryingCommit) }
        switch result {
        case .success:
            noteActivity(.committed(keys: pending.changed.count))
            return .success(true)
        case .failure(let error):
            perform(retry)
            return .failure(error)
        }
    }

    /// Commits `writes` (an exclusive transaction's) to `custom` only if every key in `expected`
    /// still holds the value given; on a conflict, takes in the current values it was told.
    ///
    /// The caller has committed everything pending first.
    func commitConditionally(
        _ writes: [String: JSONValue?],
        removesEverything: Bool,
        ifUnchanged expected: [String: JSONValue?],
        to custom: BackendConnection
    ) -> Result<Bool, Defaults.StorageError> {
        custom.commitLock.lock()
        defer { custom.commitLock.unlock() }
        let outcome = custom.committing(
            { () -> Result<Defaults.ConditionalCommitResult, Defaults.StorageError> in
                custom.callingBackend()
                do throws(Defaults.StorageError) {
                    let changes = Defaults.BackendChanges(values: writes, removesEverything: removesEverything)
                    return .success(try custom.backend.commit(changes, ifUnchanged: expected))
                } catch {
                    return .failure(error)
                }
            },
            settle: { _ in BackendConnection.Settled() },
            apply: { apply($0, leaving: $1) }
        )
        switch outcome {
        case .success(.committed):
            committedOutsideFlush()
            noteActivity(.committed(keys: writes.count))
            return .success(true)
        case .success(.conflict(let current)):
            absorbOutside(current, isWhole: false, revision: nil)
            return .success(false)
        case .failure(let error):
            return .failure(error)
        }
    }
}

extension Store.State {
    /// Takes what waits to be committed, and notes that a commit started.
    ///
    /// Returns `nil` when nothing waits. `isRetry` is set when the last commit failed.
    mutating func startCommit(isRetry: inout Bool) -> Store.Pending? {
        guard flushing.isDirty else { return nil }
        let changed = takeChanged()
        let clears: Bool
        (clears, isRetry) = flushing.commitStarted()
        var changes: [String: JSONValue?] = .init(minimumCapacity: changed.count)
        for name in changed { changes[name] = .some(values[name]) }
        // A `removeAll()` keeps the user's values of the keys a system file locks.
        let keeping = clears ? layered.systemFiles.map { Set($0.locks.keys) } ?? [] : []
        return (changes, changed, clears, keeping)
    }
}
