// What suites do, counted by DefaultsService through swift-metrics' test factory: commits, a
// retried commit, a hand edit, a backend that reconnects and reloads. Real files and a real
// ServiceGroup shutdown.
import Defaults
import DefaultsServices
import Foundation
import Logging
import MetricsTestKit
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing

@Suite struct ActivityMetricsTests {
    @Test func whatTheSuitesDoIsCountedPerSuite() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ActivityMetricsTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let written = directory.appendingPathComponent("written.json")
        let edited = directory.appendingPathComponent("edited.json")
        try Data(#"{"greeting": "Hello"}"#.utf8).write(to: edited)
        // NB: a regular file where the suite's directory should be; permissions would not stop root.
        let obstacle = directory.appendingPathComponent("blocked")
        try Data("not a directory".utf8).write(to: obstacle)
        let retried = obstacle.appendingPathComponent("suite").appendingPathComponent("settings.json")
        let backend = ReconnectingBackend()

        let suites = [
            Defaults.Suite(fileURL: written) { _ in }, Defaults.Suite(fileURL: edited) { _ in },
            Defaults.Suite(fileURL: retried) { _ in }, Defaults.Suite(backend: backend) { _ in },
        ]
        let metrics = TestMetrics()
        let lines = LineStream()
        let service = DefaultsService(
            suites: suites,
            logger: Logger(label: "test") { _ in lines.handler },
            metrics: metrics
        )
        // Seen after the service's own observation, which was made first: when an activity is
        // here, the service has counted it.
        let seen = ActivityLog()
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup { group in
                group.addTask { try await service.run() }
                await lines.wait { $0.message.description.contains("looking after") }
                let observation = seen.observe()
                defer { observation.cancel() }

                suites[0].setStoredValues(["greeting": .string("Hi"), "shout": .bool(true)])
                try suites[0].synchronize()
                #expect(await seen.wait { $0.contains { $0.0 == suites[0] && $0.1 == .committed(keys: 2) } })

                try Data(#"{"greeting": "Welcome"}"#.utf8).write(to: edited, options: .atomic)
                #expect(await seen.wait { $0.contains { $0.0 == suites[1] && $0.1 == .changedElsewhere(keys: 1) } })

                suites[2].setStoredValues(["greeting": .string("stored at last")])
                #expect(throws: Defaults.StorageError.self) { try suites[2].synchronize() }
                try FileManager.default.removeItem(at: obstacle)
                try suites[2].synchronize()
                #expect(await seen.wait { $0.contains { $0.0 == suites[2] && $0.1 == .committed(keys: 1) } })

                let updates = try #require(backend.updates.withLock { $0 })
                updates.reconnected()
                updates.replaced(by: Defaults.BackendContents(values: ["greeting": .string("Hey")]))
                #expect(
                    await seen.wait { $0.contains { $0.0 == suites[3] && $0.1 == .reloaded(backend: "reconnecting") } }
                )

                trigger.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
        func total(_ label: String, _ suite: String) -> Int64 {
            metrics.counterTotal(label: label, dimensions: [("suite", suite)])
        }
        #expect(total("defaults_commits_total", written.path) == 1)
        #expect(total("defaults_commit_retries_total", written.path) == 0)
        #expect(total("defaults_changes_from_elsewhere_total", edited.path) == 1)
        #expect(total("defaults_commits_total", edited.path) == 0)
        // Tried at least once more after the failure (the timer may have tried too, while the
        // obstacle stood), and stored once.
        #expect(total("defaults_commit_retries_total", retried.path) >= 1)
        #expect(total("defaults_commits_total", retried.path) == 1)
        #expect(metrics.counterTotal(label: "defaults_commit_errors_total", dimensions: [("suite", retried.path)]) >= 1)
        let backendSuite = suites[3].description
        #expect(total("defaults_backend_reconnects_total", backendSuite) == 1)
        #expect(total("defaults_reloads_total", backendSuite) == 1)
        #expect(total("defaults_changes_from_elsewhere_total", backendSuite) == 1)
        #expect(metrics.counterTotal(label: "defaults_backend_reconnects_total") == 1)
        // A reconnect and a reload are worth a debug line, no more.
        let reconnect = lines.entries.filter { $0.message.description.contains("reconnected") }
        #expect(reconnect.count == 1)
        #expect(reconnect.allSatisfy { $0.level == .debug && $0.metadata["defaults.backend"] == "reconnecting" })
    }
}

/// Every activity observed, and a wait for what a test expects, with no polling.
final class ActivityLog: Sendable {
    private typealias Entry = (Defaults.Suite, Defaults.Activity)
    private let condition = NSCondition()
    private let entries = Mutex<[Entry]>([])

    func observe() -> Defaults.ActivityObservation {
        Defaults.observeActivity { [self] suite, activity in
            condition.lock()
            entries.withLock { $0.append((suite, activity)) }
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Waits, off the pool, until what was observed meets `met`, or 60 s passed.
    func wait(until met: @escaping @Sendable ([(Defaults.Suite, Defaults.Activity)]) -> Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                let deadline = Date() + 60
                condition.lock()
                while !met(entries.withLock { $0 }), condition.wait(until: deadline) {}
                let reached = met(entries.withLock { $0 })
                condition.unlock()
                continuation.resume(returning: reached)
            }
        }
    }
}

/// A backend that keeps what the suite hands it to report with, so the test can say the backend
/// reconnected and loaded again, as etcd's watch does.
final class ReconnectingBackend: Defaults.Backend {
    let updates = Mutex<Defaults.BackendUpdates?>(nil)

    var name: String { "reconnecting" }

    func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        Defaults.BackendContents(values: [:])
    }

    func startReporting(to updates: Defaults.BackendUpdates) {
        self.updates.withLock { $0 = updates }
    }

    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult {
        .stored
    }
}
