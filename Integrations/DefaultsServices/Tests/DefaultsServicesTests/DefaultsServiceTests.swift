// DefaultsService in a real ServiceGroup shutdown (swift-service-lifecycle's test trigger), on
// real files in temporary directories; log lines through swift-log's in-memory handler, counts
// through swift-metrics' test factory.
import Defaults
import DefaultsServices
import Foundation
import InMemoryLogging
import Logging
import MetricsTestKit
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing

@Suite struct DefaultsServiceTests {
    /// A fresh directory, removed afterwards.
    func withDirectory<Result>(_ body: (URL) async throws -> Result) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("DefaultsServiceTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        return try await body(directory)
    }

    @Test func problemsAreLoggedAtTheirLevelWithTheSuiteKeyAndFile() async throws {
        try await withDirectory { directory in
            var logs = InMemoryLogHandler()
            logs.logLevel = .debug
            let lines = LineStream()
            let logger = Logger(label: "test") { _ in MultiplexLogHandler([logs, lines.handler]) }
            let url = directory.appendingPathComponent("settings.json")
            let suite = Defaults.Suite(fileURL: url) { _ in }
            // A file in place of the directory the second suite's file needs: every flush fails.
            let blocker = directory.appendingPathComponent("blocker")
            try Data("not a directory".utf8).write(to: blocker)
            let blocked = Defaults.Suite(fileURL: blocker.appendingPathComponent("settings.json")) { _ in }
            let service = DefaultsService(suites: [suite, blocked], logger: logger, metrics: TestMetrics())
            try await testGracefulShutdown { trigger in
                try await withThrowingTaskGroup { group in
                    group.addTask { try await service.run() }
                    await lines.wait { $0.message.description.contains("looking after 2 suite") }

                    // Refused: `error`, with the suite and the key.
                    suite.setStoredValues(["": .bool(true)])
                    let refused = try #require(logs.entries.last)
                    #expect(refused.level == .error)
                    #expect(refused.metadata["defaults.suite"] == "\(url.path)")
                    #expect(refused.metadata["defaults.key"] == "")

                    // Retried at the next flush: `info`, once while the same failure lasts (each
                    // synchronize() still throws it).
                    blocked.setStoredValues(["a": .number("1")])
                    #expect(throws: Defaults.StorageError.self) { try blocked.synchronize() }
                    blocked.setStoredValues(["a": .number("2")])
                    #expect(throws: Defaults.StorageError.self) { try blocked.synchronize() }
                    let retries = logs.entries.filter { $0.message.description.contains("cannot write") }
                    #expect(retries.map(\.level) == [.info], "\(retries)")
                    #expect(retries.first?.metadata["defaults.file"] == "\(blocker.path)/settings.json")
                    #expect(!logs.entries.contains { $0.level == .warning })

                    trigger.triggerGracefulShutdown()
                    try await group.waitForAll()
                }
            }
            // The blocked suite could not store its writes at shutdown either: said at `error`.
            let unstored = logs.entries.filter { $0.message.description.contains("not stored at shutdown") }
            #expect(unstored.count == 1)
            #expect(unstored.first?.level == .error)
            #expect(unstored.first?.metadata["defaults.suite"] == "\(blocker.path)/settings.json")
        }
    }

    @Test func shutdownStoresWhatIsPending() async throws {
        try await withDirectory { directory in
            let url = directory.appendingPathComponent("settings.json")
            let suite = Defaults.Suite(fileURL: url) { _ in }
            let logs = InMemoryLogHandler()
            let metrics = TestMetrics()
            let service = DefaultsService(
                suites: [suite],
                logger: Logger(label: "test") { _ in logs },
                metrics: metrics
            )
            try await testGracefulShutdown { trigger in
                try await withThrowingTaskGroup { group in
                    group.addTask { try await service.run() }
                    suite.setStoredValues(["greeting": .string("hello")])
                    trigger.triggerGracefulShutdown()
                    try await group.waitForAll()
                }
            }
            let stored = try Defaults.JSONValue(parsing: Array(try Data(contentsOf: url)))
            #expect(stored == .object(["greeting": .string("hello")]))
            #expect(!logs.entries.contains { $0.level >= .info })
            #expect(metrics.counterTotal(label: "defaults_unstored_at_shutdown_total") == 0)
        }
    }

    @Test func aBackendThatStallsAtShutdownIsGivenUpAfterTheTimeout() async throws {
        let backend = StallingBackend()
        let suite = Defaults.Suite(backend: backend) { _ in }
        let logs = InMemoryLogHandler()
        let metrics = TestMetrics()
        let service = DefaultsService(
            suites: [suite],
            logger: Logger(label: "test") { _ in logs },
            metrics: metrics,
            shutdownTimeout: .milliseconds(200)
        )
        backend.stall()
        // Let go whatever happens, or the suite's last flush would wait for it forever.
        defer { backend.resume() }
        suite.setStoredValues(["pending": .number("1")])
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup { group in
                group.addTask { try await service.run() }
                trigger.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
        let unstored = logs.entries.filter { $0.message.description.contains("no answer within") }
        #expect(unstored.count == 1)
        #expect(unstored.first?.level == .error)
        #expect(metrics.counterTotal(label: "defaults_unstored_at_shutdown_total") == 1)
    }

    @Test func problemsAreCountedPerSuite() async throws {
        try await withDirectory { directory in
            let metrics = TestMetrics()
            let first = Defaults.Suite(fileURL: directory.appendingPathComponent("a.json")) { _ in }
            let second = Defaults.Suite(fileURL: directory.appendingPathComponent("b.json")) { _ in }
            let lines = LineStream()
            let service = DefaultsService(
                suites: [first, second],
                logger: Logger(label: "test") { _ in lines.handler },
                metrics: metrics
            )
            try await testGracefulShutdown { trigger in
                try await withThrowingTaskGroup { group in
                    group.addTask { try await service.run() }
                    await lines.wait { $0.message.description.contains("looking after") }
                    first.setStoredValues(["": .null])
                    first.setStoredValues(["": .null])
                    second.setStoredValues(["": .null])
                    // A suite the service was not given is not counted.
                    Defaults.Suite.inMemory().setStoredValues(["": .null])
                    trigger.triggerGracefulShutdown()
                    try await group.waitForAll()
                }
            }
            let path = directory.appendingPathComponent("a.json").path
            #expect(
                metrics.counterTotal(label: "defaults_refused_writes_total", dimensions: [("suite", path)]) == 2
            )
            #expect(
                metrics.counterTotal(
                    label: "defaults_refused_writes_total",
                    dimensions: [("suite", directory.appendingPathComponent("b.json").path)]
                ) == 1
            )
            #expect(metrics.counterTotal(label: "defaults_refused_writes_total") == 3)
            #expect(metrics.counterTotal(label: "defaults_commit_errors_total") == 0)
        }
    }
}

/// A log handler that lets a test await a line, with no polling.
final class LineStream: Sendable {
    private typealias Waiter = (
        id: UUID, predicate: @Sendable (InMemoryLogHandler.Entry) -> Bool,
        continuation: CheckedContinuation<Bool, Never>
    )
    private struct State {
        var lines: [InMemoryLogHandler.Entry] = []
        var waiters: [Waiter] = []
    }
    private let state = Mutex(State())

    /// Every line logged so far.
    var entries: [InMemoryLogHandler.Entry] { state.withLock { $0.lines } }

    /// A handler that logs everything, from `debug` up, into this stream.
    var handler: Handler {
        var handler = Handler(stream: self)
        handler.logLevel = .debug
        return handler
    }

    fileprivate func append(_ entry: InMemoryLogHandler.Entry) {
        let ready = state.withLock { state in
            state.lines.append(entry)
            let ready = state.waiters.filter { $0.predicate(entry) }.map(\.continuation)
            state.waiters.removeAll { $0.predicate(entry) }
            return ready
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// Returns once a line `predicate` accepts was logged (at once if one was), or after 60 s,
    /// recording an issue: a line that never comes fails the test instead of hanging the run.
    func wait(for predicate: @escaping @Sendable (InMemoryLogHandler.Entry) -> Bool) async {
        let id = UUID()
        let arrived = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let done = state.withLock { state in
                if state.lines.contains(where: predicate) { return true }
                state.waiters.append((id, predicate, continuation))
                return false
            }
            if done { continuation.resume(returning: true) }
            DispatchQueue.global()
                .asyncAfter(deadline: .now() + .seconds(60)) { [self] in
                    let expired = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                        guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                        return state.waiters.remove(at: index).continuation
                    }
                    expired?.resume(returning: false)
                }
        }
        #expect(arrived, "the line awaited was not logged within 60 s")
    }

    /// The handler that feeds a ``LineStream``.
    struct Handler: LogHandler {
        let stream: LineStream
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            stream.append(
                InMemoryLogHandler.Entry(level: event.level, message: event.message, metadata: event.metadata ?? [:])
            )
        }
    }
}

/// A backend whose commits can be held, as a stalled server holds them: a real backend a
/// suite commits to, not a stand-in for the service.
final class StallingBackend: Defaults.Backend {
    private let held = Mutex(false)
    private let gate = DispatchSemaphore(value: 0)

    var name: String { "stalling" }

    /// Holds every commit from now until ``resume()``.
    func stall() { held.withLock { $0 = true } }

    /// Lets the held commits through.
    func resume() {
        held.withLock { $0 = false }
        gate.signal()
    }

    func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        Defaults.BackendContents(values: [:])
    }

    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult {
        if held.withLock({ $0 }) {
            gate.wait()
            gate.signal()
        }
        return .stored
    }
}
