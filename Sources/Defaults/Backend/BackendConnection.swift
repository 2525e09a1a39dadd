import Foundation
import Synchronization

/// A backend (``Defaults/Backend``) as a store holds it: the backend, and what keeps its
/// reports in order with the store's commits.
///
/// A report that arrives while a commit is under way waits until the commit has returned: the keys
/// being committed are no longer marked changed in memory, and a report of one of them applied
/// meanwhile would be overwritten by nothing, or would overwrite what the commit stores. A report
/// that arrived before the backend was asked to commit is older than the commit: it is taken in
/// without the keys the commit wrote. One that arrived after is newer, by the protocol's promise.
final class BackendConnection: @unchecked Sendable {  // `gate` guards `committing`, `called` and `held`
    /// What a backend reported.
    enum Report {
        case changed([String: JSONValue?], revision: UInt64?)
        case replaced(Defaults.BackendContents)
    }

    let backend: any Defaults.Backend
    /// Whether every report held during a commit is older than it for the keys it wrote: so for the
    /// file, whose reports come from reads under the lock its commits take (a report held then was
    /// made before the commit wrote, or in the microseconds between its unlock and its return).
    private let heldReportsPrecedeCommits: Bool
    /// Held across each commit: one at a time, as the protocol promises.
    let commitLock = NSLock()
    /// Held while a report is applied, and while a commit starts and ends.
    private let gate = NSLock()
    private var committing = false
    /// Whether the commit under way has asked the backend yet.
    private var called = false
    private var held: [(report: Report, isBeforeCall: Bool)] = []

    init(_ backend: any Defaults.Backend) {
        self.backend = backend
        heldReportsPrecedeCommits = backend is any LockingBackend
    }

    /// Applies `report` with `apply` now, or once the commit under way has returned.
    func receive(_ report: Report, apply: (Report, Set<String>) -> Void) {
        gate.lock()
        defer { gate.unlock() }
        if committing {
            held.append((report, !called))
        } else {
            apply(report, [])
        }
    }

    /// Notes that the commit under way asks the backend now: reports from here on are newer.
    func callingBackend() {
        gate.withLock { called = true }
    }

    /// Runs `commit` with reports held back; then, with reports still held, `settle` with its
    /// result (a failed commit puts its keys back first), which returns the keys the commit wrote;
    /// then applies the reports that arrived meanwhile, in order (without those keys, for the ones
    /// that arrived before the backend was asked).
    func committing<Result>(
        _ commit: () -> Result,
        settle: (Result) -> Set<String>,
        apply: (Report, Set<String>) -> Void
    ) -> Result {
        gate.lock()
        committing = true
        called = false
        gate.unlock()
        let result = commit()
        gate.lock()
        defer { gate.unlock() }
        let written = settle(result)
        committing = false
        for (report, isBeforeCall) in held {
            apply(report, isBeforeCall || heldReportsPrecedeCommits ? written : [])
        }
        held.removeAll()
        return result
    }
}
