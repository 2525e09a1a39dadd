import Defaults
import Foundation

/// What plays a shared store several machines reach: named spaces of keys, each with a revision
/// that grows with every commit, and the backends that watch each space.
///
/// Written as a user of the library would write it, against its public API only.
final class SharedTable: @unchecked Sendable {  // every stored property is guarded by `lock`
    private struct Space {
        var values: [String: Defaults.JSONValue] = [:]
        var revision: UInt64 = 0
        var watchers: [ObjectIdentifier: SharedDictionaryBackend] = [:]
    }

    private let lock = NSLock()
    private var spaces: [String: Space] = [:]
    private var commitCount = 0
    private var conflictCount = 0
    /// When set, every load and commit fails, as a store out of reach does.
    private var isUnreachable = false
    /// Run once, before the next conditional commit looks at the table.
    private var beforeConditionalCommit: (@Sendable () -> Void)?

    /// How many commits were asked for (stored something or not), and how many conditional commits
    /// met a conflict.
    var counts: (commits: Int, conflicts: Int) { lock.withLock { (commitCount, conflictCount) } }

    /// Makes every later load and commit fail, or succeed again.
    func setUnreachable(_ unreachable: Bool) { lock.withLock { isUnreachable = unreachable } }

    func load(_ space: String) throws(Defaults.StorageError) -> Defaults.BackendContents {
        let result = lock.withLock { () -> Defaults.BackendContents? in
            guard !isUnreachable else { return nil }
            let stored = spaces[space] ?? Space()
            return Defaults.BackendContents(values: stored.values, revision: stored.revision)
        }
        guard let result else { throw .backendFailed(backend: "shared table", reason: "unreachable") }
        return result
    }

    /// Runs `work` once, just before the next conditional commit compares what it expects with the
    /// table, outside the table's lock: a test puts another machine's commit there, between what a
    /// transaction read and what it commits.
    func beforeNextConditionalCommit(_ work: @escaping @Sendable () -> Void) {
        lock.withLock { beforeConditionalCommit = work }
    }

    /// Applies `changes` to `space` if every value in `expected` holds.
    ///
    /// Tells every watcher but `origin`. Returns the conflicting values, or `nil` when it committed.
    func commit(
        _ changes: Defaults.BackendChanges,
        to space: String,
        ifUnchanged expected: [String: Defaults.JSONValue?],
        from origin: SharedDictionaryBackend
    ) throws(Defaults.StorageError) -> [String: Defaults.JSONValue?]? {
        if !expected.isEmpty, let work = lock.withLock({ beforeConditionalCommit.take() }) { work() }
        var conflict: [String: Defaults.JSONValue?]?
        var unreachable = false
        var toTell: [(SharedDictionaryBackend, [String: Defaults.JSONValue?], UInt64)] = []
        lock.withLock {
            guard !isUnreachable else {
                unreachable = true
                return
            }
            commitCount += 1
            var stored = spaces[space] ?? Space()
            if expected.contains(where: { stored.values[$0.key] != $0.value }) {
                conflictCount += 1
                conflict = expected.mapValues { _ in nil }
                for name in expected.keys { conflict![name] = .some(stored.values[name]) }
                return
            }
            // What each watcher is told: the keys whose value this commit changed.
            var told: [String: Defaults.JSONValue?] = [:]
            let after = changes.applied(to: stored.values)
            for (name, value) in after where stored.values[name] != value { told[name] = .some(value) }
            for name in stored.values.keys where after[name] == nil { told[name] = .some(nil) }
            guard !told.isEmpty else { return }
            stored.values = after
            stored.revision += 1
            for (id, watcher) in stored.watchers where id != ObjectIdentifier(origin) {
                toTell.append((watcher, told, stored.revision))
            }
            spaces[space] = stored
            // NB: queued in commit order under the lock, so each watcher is told in that order.
            for (watcher, values, revision) in toTell { watcher.enqueue(values, revision: revision) }
        }
        if unreachable { throw .backendFailed(backend: "shared table", reason: "unreachable") }
        return conflict
    }

    func watch(_ space: String, by backend: SharedDictionaryBackend) {
        lock.withLock { spaces[space, default: Space()].watchers[ObjectIdentifier(backend)] = backend }
    }

    func unwatch(_ space: String, by backend: SharedDictionaryBackend) {
        lock.withLock { _ = spaces[space]?.watchers.removeValue(forKey: ObjectIdentifier(backend)) }
    }
}

/// One machine's view of a ``SharedTable`` space: a backend of its own for suites.
///
/// Changes made by other backends reach it as a network watch would, on a queue of its own, one
/// at a time and in the order they were committed.
final class SharedDictionaryBackend: Defaults.Backend, @unchecked Sendable {  // `updates` is guarded by `lock`
    let table: SharedTable
    let space: String
    private let queue = DispatchQueue(label: "SharedDictionaryBackend.watch")
    private let lock = NSLock()
    private var updates: Defaults.BackendUpdates?
    /// Whether this machine may only read, as a user without write permission: commits are refused.
    private var isReadOnly = false

    /// Makes this machine's commits refused (``Defaults/StorageError/writeRefused(backend:reason:)``),
    /// or accepted again.
    func setReadOnly(_ readOnly: Bool) { lock.withLock { isReadOnly = readOnly } }

    init(_ table: SharedTable, space: String = "settings") {
        self.table = table
        self.space = space
    }

    var name: String { "shared table \(space)" }

    func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        try table.load(space)
    }

    func startReporting(to updates: Defaults.BackendUpdates) {
        lock.withLock { self.updates = updates }
        table.watch(space, by: self)
    }

    func stopReporting() {
        table.unwatch(space, by: self)
        lock.withLock { updates = nil }
    }

    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult {
        let (readOnly, updates) = lock.withLock { (isReadOnly, self.updates) }
        if readOnly {
            // As the protocol asks: what the table holds for the keys refused, for memory to go
            // back to.
            let stored = try table.load(space).values
            var held: [String: Defaults.JSONValue?] = [:]
            for name in changes.values.keys { held[name] = .some(stored[name]) }
            updates?.changed(held)
            throw .writeRefused(backend: name, reason: "this machine may only read")
        }
        _ = try table.commit(changes, to: space, ifUnchanged: [:], from: self)
        return .stored
    }

    var supportsConditionalCommit: Bool { true }

    func commit(
        _ changes: Defaults.BackendChanges,
        ifUnchanged expected: [String: Defaults.JSONValue?]
    ) throws(Defaults.StorageError) -> Defaults.ConditionalCommitResult {
        if let current = try table.commit(changes, to: space, ifUnchanged: expected, from: self) {
            return .conflict(current: current)
        }
        return .committed
    }

    /// Returns once every report queued so far has reached the suite.
    func waitForReports() {
        queue.sync {}
    }

    /// Tells the suite of a commit made elsewhere, later, on the watch queue.
    func enqueue(_ values: [String: Defaults.JSONValue?], revision: UInt64) {
        queue.async { [self] in
            let updates = lock.withLock { self.updates }
            updates?.changed(values, revision: revision)
        }
    }
}
