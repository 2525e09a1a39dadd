// Defaults.observeActivity: commits, retries, changes from elsewhere, and what a backend says of its
// connection, with their suite. Observations are process-wide and tests run in parallel: each
// keeps its own suite's activity.
import Defaults
import DefaultsTestSupport
import Foundation
import Testing

@Suite struct ActivityObservationTests {
    /// What an observation saw of one suite.
    final class Seen: Sendable {
        let suite: Defaults.Suite
        let activity = EventLog<Defaults.Activity>()
        init(_ suite: Defaults.Suite) { self.suite = suite }

        func observe() -> Defaults.ActivityObservation {
            Defaults.observeActivity { [self] suite, activity in
                if suite == self.suite { self.activity.append(activity) }
            }
        }
    }

    @Test func aCommitIsObservedWithTheNumberOfKeysItStored() async throws {
        try await withTemporaryDirectory { directory in
            let suite = Defaults.Suite(fileURL: storeSettingsURL(in: directory)) { _ in }
            let seen = Seen(suite)
            let observation = seen.observe()
            defer { observation.cancel() }
            let first = Defaults.Key<Int>("first", default: 0, suite: suite)
            let second = Defaults.Key<String>("second", default: "", suite: suite)
            try suite.holdingTimedCommits {
                Defaults[first] = 1
                Defaults[second] = "two"
                try suite.synchronize()
            }
            #expect(await seen.activity.wait(forCount: 1))
            #expect(seen.activity.all == [.committed(keys: 2)])

            // Nothing pending: no commit, nothing observed.
            try suite.synchronize()
            try suite.holdingTimedCommits {
                Defaults[first] = 3
                try suite.synchronize()
            }
            #expect(await seen.activity.wait(forCount: 2))
            #expect(seen.activity.all == [.committed(keys: 2), .committed(keys: 1)])
        }
    }

    @Test func aFailedCommitTriedAgainIsARetryThenACommit() async throws {
        try await withTemporaryDirectory { directory in
            // NB: a regular file where the suite's directory should be; permissions would not stop root.
            let obstacle = directory.appendingPathComponent("blocked", isDirectory: false)
            try storeWriteFile(obstacle, Array("not a directory".utf8))
            let file = storeSettingsURL(in: obstacle.appendingPathComponent("suite", isDirectory: true))
            let problems = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: problems.handler)
            let seen = Seen(suite)
            let observation = seen.observe()
            defer { observation.cancel() }
            let key = Defaults.Key<Int>("count", default: 0, suite: suite)
            try suite.holdingTimedCommits {
                Defaults[key] = 1
                #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
                #expect(!problems.writeFailedReports.isEmpty)

                try FileManager.default.removeItem(at: obstacle)
                try suite.synchronize()
            }
            #expect(await seen.activity.wait(forCount: 2))
            // The failure is a problem, not activity; the next try is a retry, and it stored the key.
            #expect(seen.activity.all == [.retryingCommit, .committed(keys: 1)])
            #expect(try storeFileObject(file)["count"] as? Int == 1)

            // A commit after one that succeeded is no retry.
            try suite.holdingTimedCommits {
                Defaults[key] = 2
                try suite.synchronize()
            }
            #expect(await seen.activity.wait(forCount: 3))
            #expect(seen.activity.all.last == .committed(keys: 1))
            #expect(seen.activity.count == 3)
        }
    }

    @Test func aHandEditIsAChangeFromElsewhere() async throws {
        try await withTemporaryDirectory { directory in
            let url = storeSettingsURL(in: directory)
            try storeWriteFile(url, Array(#"{"greeting": "Hello", "count": 1}"#.utf8))
            let suite = Defaults.Suite(fileURL: url) { _ in }
            let greeting = Defaults.Key<String>("greeting", default: "", suite: suite)
            #expect(Defaults[greeting] == "Hello")
            let seen = Seen(suite)
            let observation = seen.observe()
            defer { observation.cancel() }

            // A person saves the file with two keys changed: one change event, of two keys.
            try storeWriteFile(url, Array(#"{"greeting": "Welcome", "count": 2}"#.utf8))
            #expect(await seen.activity.wait(forCount: 1))
            #expect(seen.activity.all == [.changedElsewhere(keys: 2)])
            #expect(Defaults[greeting] == "Welcome")
        }
    }

    @Test func aBackendSaysItReconnectedAndLoadedAgain() async throws {
        let backend = ReportingBackend()
        let suite = Defaults.Suite(backend: backend)
        let key = Defaults.Key<String>("greeting", default: "", suite: suite)
        let seen = Seen(suite)
        let observation = seen.observe()
        let updates = try #require(backend.updates.withLock { $0 })

        updates.reconnected()
        #expect(await seen.activity.wait(forCount: 1))
        #expect(seen.activity.all == [.reconnected(backend: "ReportingBackend")])

        // Loaded whole again, with one key changed: a reload, and one change from elsewhere.
        updates.replaced(by: Defaults.BackendContents(values: ["greeting": .string("Hi")], revision: nil))
        #expect(await seen.activity.wait(forCount: 3))
        #expect(
            Set(seen.activity.all.dropFirst()) == [.reloaded(backend: "ReportingBackend"), .changedElsewhere(keys: 1)]
        )
        #expect(Defaults[key] == "Hi")

        // Cancelled: nothing more reaches it.
        observation.cancel()
        updates.reconnected()
        let after = Seen(suite)
        let witness = after.observe()
        defer { witness.cancel() }
        updates.reconnected()
        #expect(await after.activity.wait(forCount: 1))
        #expect(seen.activity.count == 3)
    }
}

/// A backend that keeps what the suite hands it to report with: the test plays the other party.
private final class ReportingBackend: Defaults.Backend {
    let updates = Lock<Defaults.BackendUpdates?>(nil)

    func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        Defaults.BackendContents(values: [:], revision: nil)
    }

    func startReporting(to updates: Defaults.BackendUpdates) {
        self.updates.withLock { $0 = updates }
    }

    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult {
        .stored
    }
}
