import Defaults
import Foundation
import Logging
import Metrics
import Synchronization

/// What a problem a suite reports means to the people running the service.
enum ProblemKind: String, CaseIterable, Sendable {
    /// A value was refused or is no longer what a person set: a write refused, a file moved
    /// aside, a value from elsewhere that does not decode. Logged at `error`.
    case lostOrRefused
    /// The library recovered, or will try again: a write retried at the next flush, a backend
    /// reconnecting, polling in place of inotify, a broken file written back. Logged at `info`.
    case recovered

    /// The level swift-log's advice for libraries gives it: `info` at most for what the library
    /// recovers from, `error` only for what loses or refuses a value.
    var level: Logger.Level {
        switch self {
        case .lostOrRefused: .error
        case .recovered: .info
        }
    }
}

extension Defaults.StorageError {
    /// Whether this problem lost or refused a value, or was recovered from.
    var kind: ProblemKind {
        switch self {
        // The user's values are not in effect (a file or value not read), or a value was refused.
        case .corruptFile, .serializationFailed, .invalidOverride, .readOnlyFile, .lockedKey,
            .exclusiveCommitUnsupported, .valueDoesNotFitSchema, .writeRefused, .changeDoesNotDecode,
            .unreadableFile, .corruptFileLeftInPlace, .unreadableValue, .secretKey, .unreadableSecret,
            .migrationFailed, .schemaNotPublished:
            .lostOrRefused
        // Retried, reconnected, polled, or written back from memory: nothing a person set is lost.
        case .writeFailed, .corruptFileRewritten, .pollingForChanges, .invalidLocks, .backendFailed:
            .recovered
        }
    }

    /// The name of the problem's case, as written in source.
    var caseName: String {
        Mirror(reflecting: self).children.first?.label ?? "\(self)"
    }

    /// The counter this problem adds one to.
    var metric: ProblemMetric {
        switch self {
        case .writeFailed: .commitErrors
        case .backendFailed, .unreadableFile, .pollingForChanges, .invalidLocks, .unreadableSecret: .backendErrors
        case .corruptFile, .corruptFileRewritten, .corruptFileLeftInPlace, .unreadableValue,
            .valueDoesNotFitSchema, .changeDoesNotDecode, .migrationFailed:
            .decodeErrors
        case .serializationFailed, .invalidOverride, .readOnlyFile, .lockedKey, .exclusiveCommitUnsupported,
            .writeRefused, .secretKey, .schemaNotPublished:
            .refusedWrites
        }
    }

    /// The key, file and backend the problem names, as log metadata.
    var metadata: Logger.Metadata {
        var metadata: Logger.Metadata = [:]
        switch self {
        case .corruptFile(let url, let movedTo, _), .corruptFileRewritten(let url, let movedTo, _):
            metadata["defaults.file"] = "\(url.path)"
            metadata["defaults.moved_to"] = "\(movedTo.path)"
        case .unreadableFile(let url, _), .writeFailed(let url, _), .pollingForChanges(let url, _),
            .corruptFileLeftInPlace(let url, _), .readOnlyFile(let url, _), .invalidLocks(let url, _):
            metadata["defaults.file"] = "\(url.path)"
        case .serializationFailed(let key, _), .invalidOverride(let key, _, _, _),
            .valueDoesNotFitSchema(let key, _, _), .changeDoesNotDecode(let key, _, _):
            metadata["defaults.key"] = "\(key)"
        case .lockedKey(let key, let lockedBy):
            metadata["defaults.key"] = "\(key)"
            metadata["defaults.locked_by"] = "\(lockedBy.path)"
        case .secretKey(let key, let file):
            metadata["defaults.key"] = "\(key)"
            if let file { metadata["defaults.secret_file"] = "\(file.path)" }
        case .unreadableSecret(let key, let url, _):
            metadata["defaults.key"] = "\(key)"
            metadata["defaults.secret_file"] = "\(url.path)"
        case .backendFailed(let backend, _), .exclusiveCommitUnsupported(let backend), .writeRefused(let backend, _),
            .schemaNotPublished(let backend, _):
            metadata["defaults.backend"] = "\(backend)"
        case .unreadableValue(let backend, let key, _):
            metadata["defaults.backend"] = "\(backend)"
            metadata["defaults.key"] = "\(key)"
        case .migrationFailed(let migration, _):
            metadata["defaults.migration"] = "\(migration)"
        }
        return metadata
    }
}

/// The counters, named as swift-configuration names its own (`<subject>_<what>_total`).
enum ProblemMetric: String, CaseIterable, Sendable {
    /// A write of the file that failed and is tried again at the next flush (reported, and so
    /// counted, once while the same failure lasts).
    case commitErrors = "defaults_commit_errors_total"
    /// A backend that failed (a read, a watch, a commit) or a file watched by polling.
    case backendErrors = "defaults_backend_errors_total"
    /// A value or file that did not decode, or did not fit its key or schema.
    case decodeErrors = "defaults_decode_errors_total"
    /// A write refused: read-only, locked, refused by the backend, or a value that cannot be stored.
    case refusedWrites = "defaults_refused_writes_total"
}

/// The name a suite goes by in log metadata and metric dimensions: its file's path, or its
/// description.
func label(of suite: Defaults.Suite) -> String {
    suite.fileURL?.path ?? suite.description
}

/// Each suite's counters, one per metric, by the suite's label; the suite is their `suite`
/// dimension.
func suiteCounters<Metric: RawRepresentable & CaseIterable & Hashable>(
    for suites: [Defaults.Suite],
    factory: any MetricsFactory
) -> [String: [Metric: Counter]] where Metric.RawValue == String {
    var counters: [String: [Metric: Counter]] = [:]
    for suite in suites {
        let name = label(of: suite)
        counters[name] = Dictionary(
            uniqueKeysWithValues: Metric.allCases.map { metric in
                (metric, Counter(label: metric.rawValue, dimensions: [("suite", name)], factory: factory))
            }
        )
    }
    return counters
}

/// Logs and counts the problems of a set of suites.
///
/// A problem the library recovers from, reported again and again (a backend down, a disk full at
/// every flush), is logged at its level the first time and then at `debug` until
/// `repeatInterval` has passed: a loop of retries never fills the log.
final class ProblemReporter: Sendable {
    private let suites: [Defaults.Suite]
    private let logger: Logger
    private let counters: [String: [ProblemMetric: Counter]]
    private let repeatInterval: Duration
    /// When each recovered-from problem was last logged at its own level.
    private let lastLogged = Mutex<[String: ContinuousClock.Instant]>([:])

    init(suites: [Defaults.Suite], logger: Logger, metrics: any MetricsFactory, repeatInterval: Duration) {
        self.suites = suites
        self.logger = logger
        self.repeatInterval = repeatInterval
        self.counters = suiteCounters(for: suites, factory: metrics)
    }

    /// Logs and counts `problem`, which `suite` reported.
    func report(_ problem: Defaults.StorageError, from suite: Defaults.Suite) {
        guard let suite = suites.first(where: { $0 == suite }) else { return }
        let name = label(of: suite)
        counters[name]?[problem.metric]?.increment()
        var metadata = problem.metadata
        var level = problem.kind.level
        if problem.kind == .recovered {
            let now = ContinuousClock.now
            // The kind of problem and what it names, not its reason or where a file went.
            let names = ["defaults.file", "defaults.key", "defaults.backend"].map { "\(metadata[$0] ?? "")" }
            let identity = ([name, problem.caseName] + names).joined(separator: "\n")
            let isRepeat = lastLogged.withLock { last in
                if let previous = last[identity], previous.duration(to: now) < repeatInterval { return true }
                // Problems that stopped repeating are forgotten, so the table stays small.
                if last.count >= 256 { last = last.filter { $0.value.duration(to: now) < repeatInterval } }
                if last.count >= 256 { last.removeAll() }
                last[identity] = now
                return false
            }
            if isRepeat { level = .debug }
        }
        metadata["defaults.suite"] = "\(name)"
        logger.log(level: level, "\(problem.description)", metadata: metadata)
    }
}
