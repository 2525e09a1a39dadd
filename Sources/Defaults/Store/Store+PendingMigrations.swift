import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Key migrations declared and not run yet.
///
/// A program creates its keys one after another; each key's migration joins this list, is read
/// through in memory at once (``MigrationLayer``), and the whole list runs shortly after, in one
/// exclusive transaction: one locked write for all the keys created meanwhile, however many.
struct PendingMigrations: Sendable {
    /// A key's migration waiting to run.
    struct Entry: Sendable {
        let migration: Defaults.Migration
        /// The names it reads (for a read-through while it cannot run), and the key's name.
        let sources: [String]
        let target: String
        /// Whether it runs although the store records it: a former name holds a value again (an
        /// old version wrote it after the move), or memory has the record before the values.
        let runsWhenRecorded: Bool
        /// Whether it converts an older form stored under the key's own name.
        var convertsTarget = false
    }

    /// Waiting to run, in the order the keys were created.
    var entries: [Entry] = []
    /// The suite to run them on (and report through): the last to declare one.
    var suite: WeakReference<Defaults.Suite>?
    /// Whether a run is scheduled on the store's flush queue.
    var isScheduled = false
    /// How many have been added: a run waits until none was added for a coalescing delay.
    var added: UInt64 = 0
}

extension Store {
    /// Adds a key's migration to those that run together shortly, from `suite`.
    func addPendingMigration(_ entry: PendingMigrations.Entry, from suite: Defaults.Suite) {
        let schedules = pendingMigrations.withLock { pending in
            if pending.entries.contains(where: { $0.migration.id == entry.migration.id }) { return false }
            pending.entries.append(entry)
            pending.added &+= 1
            pending.suite = WeakReference(suite)
            hasPendingMigrations.store(true, ordering: .releasing)
            defer { pending.isScheduled = true }
            return !pending.isScheduled
        }
        guard schedules else { return }
        // In memory, or in a UserDefaults: no lock to take, nothing to gather a burst into.
        guard commitsLater else {
            settlePendingMigrations()
            return
        }
        schedulePendingMigrations(seen: pendingMigrations.withLock { $0.added }, waits: 0)
    }

    /// Runs the key migrations waiting once none was added for a coalescing delay (once a
    /// program has created its keys), or after 20 delays in all.
    private func schedulePendingMigrations(seen: UInt64, waits: Int) {
        flushQueue.asyncAfter(deadline: .now() + FlushMachine.coalescingDelay.dispatchInterval) { [weak self] in
            guard let self else { return }
            let isHeld = state.withLock { $0.flush.isHeld }
            let added = pendingMigrations.withLock { pending in
                // Held by a test (`Suite.holdingTimedCommits`): they run at the next look at the
                // store, or once another is added after the hold.
                if isHeld { pending.isScheduled = false }
                return pending.added
            }
            guard !isHeld else { return }
            guard added == seen || waits >= 20 else {
                schedulePendingMigrations(seen: added, waits: waits + 1)
                return
            }
            runPendingMigrations()
        }
    }

    /// Runs the key migrations waiting, if any, before what looks at the store itself (its
    /// record, its stored values, a commit): so that it sees them run, as it sees pending writes.
    ///
    /// Not inside a transaction (they run in one of their own later), nor on the delivery queue or
    /// in a run of them on this thread (which waits for it).
    func settlePendingMigrations() {
        guard hasPendingMigrations.load(ordering: .acquiring) else { return }
        guard TransactionScope.current == nil, !Self.isDeliveringOutsideChanges else { return }
        runPendingMigrations()
    }

    /// Runs every key migration waiting, in one exclusive transaction.
    func runPendingMigrations() {
        let thread = UInt(pthread_self())
        // A change this run delivers on this thread may look at the store: it does not wait for itself.
        guard migrationRunner.load(ordering: .acquiring) != thread else { return }
        migrationRunGate.lock()
        migrationRunner.store(thread, ordering: .releasing)
        defer {
            migrationRunner.store(0, ordering: .releasing)
            migrationRunGate.unlock()
        }
        let (entries, suite) = pendingMigrations.withLock { pending in
            defer {
                pending.entries = []
                pending.isScheduled = false
                hasPendingMigrations.store(false, ordering: .releasing)
            }
            return (pending.entries, pending.suite?.object)
        }
        guard let suite, !entries.isEmpty else { return }
        suite.runKeyMigrations(entries)
    }
}
