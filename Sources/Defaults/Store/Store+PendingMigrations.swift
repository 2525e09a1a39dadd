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
    /// Adds `entry`, from `suite`, unless a migration of its id waits already; true when added.
    mutating func add(_ entry: Entry, from suite: Defaults.Suite) -> Bool {
        if entries.contains(where: { $0.migration.id == entry.migration.id }) { return false }
        entries.append(entry)
        added &+= 1
        self.suite = WeakReference(suite)
        return true
    }

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
    /// The former names of each key whose migration was declared here and is not recorded yet,
    /// by the key's name: two keys must not carry the same value, nor one the other's.
    var declared: [String: [String]] = [:]
    /// The ids of those refused for that: not run, however often declared.
    var refused: Set<String> = []

    /// Notes that the key `name` carries the values of `formerly` (its own name left out).
    ///
    /// - Returns: Why it may not, when it may not: another key declared here carries the same
    ///   former name, or one of them is the other's name; then both are refused, and the other's
    ///   id is returned too, for the caller to report.
    mutating func declare(
        _ name: String,
        id: String,
        formerly: [String]
    ) -> (reason: String, other: (name: String, id: String?)?)? {
        if refused.contains(id) { return ("it was refused already", nil) }
        for (other, otherFormerly) in declared where other != name {
            let reason: String
            if formerly.contains(other) {
                reason = "its former name \"\(other)\" is the name of another key, whose value it would take"
            } else if otherFormerly.contains(name) {
                reason = "the key \"\(other)\" names it as a former name, and would take its value"
            } else if let shared = formerly.first(where: otherFormerly.contains) {
                reason = "\"\(shared)\" is a former name of \"\(other)\" too: one value cannot become both"
            } else {
                continue
            }
            refused.insert(id)
            // The other is refused too: run, it would take this key's value or the one both want.
            let otherID = entries.first { $0.target == other && !$0.runsWhenRecorded }?.migration.id
            entries.removeAll { $0.target == other }
            if let otherID { refused.insert(otherID) }
            declared[other] = nil
            return (reason, (other, otherID))
        }
        declared[name] = formerly
        return nil
    }
}

extension Store {
    /// Notes a key's migration declared here, unless it conflicts with another's (see
    /// ``PendingMigrations/declare(_:id:formerly:)``).
    func declareKeyMigration(
        _ name: String,
        id: String,
        formerly: [String]
    ) -> (reason: String, other: (name: String, id: String?)?)? {
        pendingMigrations.withLock { $0.declare(name, id: id, formerly: formerly.filter { $0 != name }) }
    }

    /// Forgets the keys' migrations `ids` names, which the record lists now.
    func forgetDeclaredMigrations(_ names: [String]) {
        pendingMigrations.withLock { pending in
            for name in names { pending.declared[name] = nil }
        }
    }

    /// Adds a key's migration to those that run together shortly, from `suite`.
    func addPendingMigration(_ entry: PendingMigrations.Entry, from suite: Defaults.Suite) {
        let schedules = pendingMigrations.withLock { pending in
            guard pending.add(entry, from: suite) else { return false }
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
            let isHeld = state.withLock { $0.flushing.machine.isHeld }
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
