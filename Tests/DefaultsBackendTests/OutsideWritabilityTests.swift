import Defaults
import Foundation
import Synchronization
import Testing

/// A backend written outside the package whose writability changes while it is open (a database
/// in maintenance): it says so through ``Defaults/BackendUpdates/refusesWrites(because:)``, as
/// the JSON file does when its folder becomes read-only.
final class GatedBackend: Defaults.Backend {
    private let updates = Mutex<Defaults.BackendUpdates?>(nil)
    /// What it stores, and how many commits reached it.
    let stored = Mutex<(values: [String: Defaults.JSONValue], commits: Int)>(([:], 0))

    var name: String { "gated test backend" }

    func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        Defaults.BackendContents(values: stored.withLock { $0.values })
    }

    func startReporting(to updates: Defaults.BackendUpdates) {
        self.updates.withLock { $0 = updates }
    }

    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult {
        stored.withLock { stored in
            stored.commits += 1
            if changes.removesEverything { stored.values = [:] }
            for (name, value) in changes.values { stored.values[name] = value }
        }
        return .stored
    }

    /// What the suite's store handed the backend to report with.
    var receivedUpdates: Defaults.BackendUpdates? { updates.withLock { $0 } }

    /// Tells the suite whether it may write, as the backend's own state changes.
    func refuseWrites(because reason: String?) {
        updates.withLock { $0 }?.refusesWrites(because: reason)
    }
}

@Suite struct OutsideWritabilityTests {
    @Test func aBackendThatRefusesWritesForAWhileHasThemRefusedByNameAndTakesThemAgainAfter() throws {
        let backend = GatedBackend()
        let errors = Mutex<[Defaults.StorageError]>([])
        let suite = Defaults.Suite(backend: backend) { error in errors.withLock { $0.append(error) } }
        let x = Defaults.Key<Int>("x", default: 0, suite: suite)
        suite[x] = 1
        try suite.synchronize()
        #expect(backend.stored.withLock { $0.values["x"] } == .number("1"))

        backend.refuseWrites(because: "the database is in maintenance")
        suite[x] = 2
        suite[x] = 3
        // Refused in memory, as a read-only file's writes are: the key reads what the backend holds.
        #expect(suite[x] == 1)
        #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
        let reported = errors.withLock { $0 }
        #expect(reported.count == 2, "\(reported)")
        for error in reported {
            guard case .writeRefused(let name, let reason) = error else {
                Issue.record("not a refusal by the backend: \(error)")
                continue
            }
            #expect(name == "gated test backend")
            #expect(reason.contains("the database is in maintenance") && reason.contains("\"x\""), "\(reason)")
        }
        #expect(backend.stored.withLock { $0.values["x"] } == .number("1"))
        let commitsWhileRefused = backend.stored.withLock { $0.commits }

        backend.refuseWrites(because: nil)
        suite[x] = 4
        try suite.synchronize()
        #expect(suite[x] == 4)
        #expect(backend.stored.withLock { $0.values["x"] } == .number("4"))
        #expect(backend.stored.withLock { $0.commits } == commitsWhileRefused + 1)
        #expect(errors.withLock { $0.count } == 2)
    }

    /// A backend that acts for its suites beside reporting (the JSON file moves a broken file
    /// aside and writes their folder) does it while they are there, and not once they are gone.
    @Test func aBackendActsForItsSuitesOnlyWhileOneIsThere() throws {
        let backend = GatedBackend()
        var suite: Defaults.Suite? = Defaults.Suite(backend: backend)
        weak let weakSuite = suite
        let updates = try #require(backend.receivedUpdates)
        #expect(updates.whileReceiving { 7 } == 7)
        suite = nil
        #expect(weakSuite == nil)
        #expect(updates.whileReceiving { 7 } == nil)

        // Updates a backend's own tests make have a receiver that is always there.
        let own = Defaults.BackendUpdates(changed: { _, _ in }, replaced: { _ in }, report: { _ in })
        #expect(own.whileReceiving { 7 } == 7)
    }

    /// A `removeAll()` keeps the keys a system file locks: an outside backend that applies the
    /// changes with `applied(to:)` keeps them as the file does.
    @Test func aRemovalOfEverythingKeepsWhatItSaysToKeep() {
        let changes = Defaults.BackendChanges(values: ["b": .number("2")], removesEverything: true, keeping: ["a"])
        let stored: [String: Defaults.JSONValue] = ["a": .number("1"), "c": .number("3")]
        #expect(changes.applied(to: stored) == ["a": .number("1"), "b": .number("2")])
        #expect(Defaults.BackendChanges(values: [:], removesEverything: true).applied(to: stored).isEmpty)
    }
}

/// A backend written outside the package whose commits fail while it is down (a database whose
/// server went away): the article's ``DictionaryBackend`` (exclusive commits included) behind a
/// switch.
final class FailingBackend: Defaults.Backend {
    /// What it stores, while it is up.
    let stored = DictionaryBackend()
    /// Whether commits fail now.
    let isDown = Atomic<Bool>(false)

    var name: String { "failing test backend" }

    func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        try stored.load()
    }

    func startReporting(to updates: Defaults.BackendUpdates) {}

    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult {
        try checkUp()
        return try stored.commit(changes)
    }

    var supportsConditionalCommit: Bool { true }

    func commit(
        _ changes: Defaults.BackendChanges,
        ifUnchanged expected: [String: Defaults.JSONValue?]
    ) throws(Defaults.StorageError) -> Defaults.ConditionalCommitResult {
        try checkUp()
        return try stored.commit(changes, ifUnchanged: expected)
    }

    private func checkUp() throws(Defaults.StorageError) {
        guard !isDown.load(ordering: .relaxed) else {
            throw .backendFailed(backend: name, reason: "the server is down")
        }
    }
}

@Suite struct FailedCommitReportTests {
    /// An exclusive transaction over a backend whose commits fail reports the failure as every
    /// failed commit is: once while it lasts (each transaction reported it again).
    @Test func anExclusiveTransactionReportsAFailedCommitOnceWhileItLasts() throws {
        let backend = FailingBackend()
        let errors = Mutex<[Defaults.StorageError]>([])
        let suite = Defaults.Suite(backend: backend) { error in errors.withLock { $0.append(error) } }
        let x = Defaults.Key<Int>("x", default: 0, suite: suite)
        backend.isDown.store(true, ordering: .relaxed)
        suite[x] = 1
        #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
        for _ in 0..<2 {
            #expect(throws: Defaults.StorageError.self) { try suite.exclusiveTransaction { suite[x] = 2 } }
        }
        let reported = errors.withLock { $0 }
        #expect(reported.count == 1, "each call throws it, none reports it again: \(reported)")

        backend.isDown.store(false, ordering: .relaxed)
        try suite.synchronize()
        #expect(try backend.stored.load().values["x"] == .number("1"))
    }
}
