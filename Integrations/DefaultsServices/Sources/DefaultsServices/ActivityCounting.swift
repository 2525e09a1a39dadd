import Defaults
import Logging
import Metrics

/// The counters of what suites do, named as swift-configuration names its own
/// (`<subject>_<what>_total`).
enum ActivityMetric: String, CaseIterable, Sendable {
    /// A commit that stored writes in the file or backend.
    case commits = "defaults_commits_total"
    /// A commit tried again after one that failed.
    case commitRetries = "defaults_commit_retries_total"
    /// A change event made elsewhere: another process, a hand edit, another instance, a system file.
    case changesFromElsewhere = "defaults_changes_from_elsewhere_total"
    /// A backend's connection for changes made elsewhere, lost and back.
    case reconnects = "defaults_backend_reconnects_total"
    /// A backend that lost track of changes and loaded its contents whole again.
    case reloads = "defaults_reloads_total"
}

extension Defaults.Activity {
    /// The counter this activity adds one to.
    var metric: ActivityMetric {
        switch self {
        case .committed: .commits
        case .retryingCommit: .commitRetries
        case .changedElsewhere: .changesFromElsewhere
        case .reconnected: .reconnects
        case .reloaded: .reloads
        }
    }
}

/// Counts the activity of a set of suites, and logs a backend's reconnects and reloads at `debug`.
final class ActivityCounter: Sendable {
    private let suites: [Defaults.Suite]
    private let logger: Logger
    private let counters: [String: [ActivityMetric: Counter]]

    init(suites: [Defaults.Suite], logger: Logger, metrics: any MetricsFactory) {
        self.suites = suites
        self.logger = logger
        self.counters = suiteCounters(for: suites, factory: metrics)
    }

    /// Counts `activity`, which `suite` did.
    func count(_ activity: Defaults.Activity, of suite: Defaults.Suite) {
        guard let suite = suites.first(where: { $0 == suite }) else { return }
        let name = label(of: suite)
        counters[name]?[activity.metric]?.increment()
        switch activity {
        case .reconnected(let backend), .reloaded(let backend):
            // A connection back, or a whole read: worth a line when debugging, no more.
            logger.debug(
                "Defaults: \(activity)",
                metadata: ["defaults.suite": "\(name)", "defaults.backend": "\(backend)"]
            )
        case .committed, .retryingCommit, .changedElsewhere:
            break
        }
    }
}
