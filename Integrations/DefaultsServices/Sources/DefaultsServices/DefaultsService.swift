import Defaults
import Dispatch
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// Suites as a service of a swift-service-lifecycle `ServiceGroup`: their problems in swift-log
/// and swift-metrics while the group runs, and their pending writes stored when it shuts down.
///
/// List it **first** in the group: the group stops services in the reverse order it started
/// them, so the suites stay live while the HTTP server after them drains its requests, and the
/// writes those requests made are stored last.
///
/// ```swift
/// let settings = DefaultsService(suites: [.standard], logger: logger)
/// let group = ServiceGroup(
///     configuration: .init(services: [.init(service: settings), .init(service: server)], logger: logger)
/// )
/// try await group.run()
/// ```
///
/// While it runs, each problem a listed suite reports goes to `logger` (beside the suite's own
/// error handler, which keeps working): at `error` when a value was lost or refused, at `info`
/// when the library recovered or will retry, and the same recovered-from problem again within a
/// minute at `debug`. Metadata names the suite (`defaults.suite`) and the key, file or backend.
/// Each problem also adds one to a counter of `metrics`, with the suite as the `suite` dimension:
/// `defaults_commit_errors_total`, `defaults_backend_errors_total`,
/// `defaults_decode_errors_total` and `defaults_refused_writes_total`. What the suites do is
/// counted beside them (``Defaults/Activity``): `defaults_commits_total`,
/// `defaults_commit_retries_total`, `defaults_changes_from_elsewhere_total` (change events made by
/// another process, a hand edit, another instance or a system file),
/// `defaults_backend_reconnects_total` and `defaults_reloads_total`; a reconnect or a reload is
/// also logged at `debug`.
///
/// On graceful shutdown (or cancellation) it synchronizes every suite, all at once, and waits at
/// most `shutdownTimeout`; a suite that could not store its writes in that time, or failed to, is
/// logged at `error` and counted in `defaults_unstored_at_shutdown_total` (a write refused earlier,
/// which was logged then, is not said again). Then `run()` returns.
///
/// Problems a suite meets while it opens (a corrupt file moved aside) come before the service
/// runs: they reach the suite's own error handler, not this logger.
public struct DefaultsService: Service, CustomStringConvertible {
    private let suites: [Defaults.Suite]
    private let logger: Logger?
    private let metrics: any MetricsFactory
    private let shutdownTimeout: Duration

    /// A service for `suites`.
    ///
    /// - Parameters:
    ///   - suites: The suites to look after; suites on one file count once.
    ///   - logger: Where problems go; `nil` takes `Logger.current` (swift-log's task-local logger)
    ///     when the service starts running.
    ///   - metrics: Where the counters go; swift-metrics' bootstrapped factory unless given.
    ///   - shutdownTimeout: How long shutdown waits for the suites' writes to be stored.
    public init(
        suites: [Defaults.Suite],
        logger: Logger? = nil,
        metrics: any MetricsFactory = MetricsSystem.factory,
        shutdownTimeout: Duration = .seconds(10)
    ) {
        var unique: [Defaults.Suite] = []
        for suite in suites where !unique.contains(suite) { unique.append(suite) }
        self.suites = unique
        self.logger = logger
        self.metrics = metrics
        self.shutdownTimeout = shutdownTimeout
    }

    /// The service and its suites, as the group's log lines name it.
    public var description: String {
        "DefaultsService(suites: [\(suites.map(label(of:)).joined(separator: ", "))])"
    }

    /// Reports the suites' problems until graceful shutdown or cancellation, then stores their
    /// pending writes and returns.
    public func run() async throws {
        let logger = self.logger ?? Logger.current
        let reporter = ProblemReporter(suites: suites, logger: logger, metrics: metrics, repeatInterval: .seconds(60))
        let observation = Defaults.observeProblems { suite, problem in
            reporter.report(problem, from: suite)
        }
        defer { observation.cancel() }
        let counter = ActivityCounter(suites: suites, logger: logger, metrics: metrics)
        let activity = Defaults.observeActivity { suite, activity in
            counter.count(activity, of: suite)
        }
        defer { activity.cancel() }
        logger.debug("Defaults: looking after \(suites.count) suite(s) until shutdown")
        // Returns on graceful shutdown; throws CancellationError when the task is cancelled,
        // which also ends the service: what is pending is stored either way.
        try? await gracefulShutdown()
        // What the last synchronize meets is said once, below, not also as a problem to retry.
        observation.cancel()
        let unstored = Counter(label: "defaults_unstored_at_shutdown_total", factory: metrics)
        for (suite, outcome) in await Self.synchronize(suites, within: shutdownTimeout) {
            var metadata: Logger.Metadata = ["defaults.suite": "\(label(of: suite))"]
            switch outcome {
            case .stored:
                continue
            case .failed(let error) where error.metric == .refusedWrites:
                // A write refused earlier (a locked key, a read-only file), which synchronize()
                // throws once; it was logged when it happened, and nothing pending was lost now.
                continue
            case .failed(let error):
                metadata.merge(error.metadata) { kept, _ in kept }
                logger.error("Defaults: pending writes not stored at shutdown: \(error)", metadata: metadata)
            case .timedOut:
                logger.error(
                    "Defaults: pending writes not stored at shutdown: no answer within \(shutdownTimeout)",
                    metadata: metadata
                )
            }
            unstored.increment()
        }
    }

    /// How storing one suite's writes at shutdown ended.
    enum ShutdownOutcome: Sendable {
        case stored
        case failed(Defaults.StorageError)
        case timedOut
    }

    /// Synchronizes every suite at once, each on a thread of its own (a stalled backend holds
    /// only its own), and gives up waiting after `timeout`.
    static func synchronize(
        _ suites: [Defaults.Suite],
        within timeout: Duration
    ) async -> [(Defaults.Suite, ShutdownOutcome)] {
        await withTaskGroup(of: (Defaults.Suite, ShutdownOutcome).self) { group in
            for suite in suites {
                group.addTask { (suite, await synchronize(suite, within: timeout)) }
            }
            var outcomes: [(Defaults.Suite, ShutdownOutcome)] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
    }

    /// `suite.synchronize()` on a dispatch thread, or `.timedOut` after `timeout`, whichever
    /// comes first; a synchronize still running then is left to finish on its thread.
    private static func synchronize(_ suite: Defaults.Suite, within timeout: Duration) async -> ShutdownOutcome {
        await withCheckedContinuation { continuation in
            let pending = Mutex<CheckedContinuation<ShutdownOutcome, Never>?>(continuation)
            let finish: @Sendable (ShutdownOutcome) -> Void = { outcome in
                pending.withLock { $0.take() }?.resume(returning: outcome)
            }
            DispatchQueue.global()
                .async {
                    do throws(Defaults.StorageError) {
                        try suite.synchronize()
                        finish(.stored)
                    } catch {
                        finish(.failed(error))
                    }
                }
            // In milliseconds, at most a year: a longer timeout waits a year.
            let milliseconds = min(max(timeout / .milliseconds(1), 0), 365 * 24 * 3600 * 1000)
            DispatchQueue.global()
                .asyncAfter(deadline: .now() + .milliseconds(Int(milliseconds))) {
                    finish(.timedOut)
                }
        }
    }
}
