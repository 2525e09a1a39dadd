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
final class BackendConnection: @unchecked Sendable {  // `gate` guards the `var`s
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
    private var held: [(report: Report, isBeforeCall: Bool, sequence: Int)] = []
    /// How many reports arrived, ever: the number of the next one.
    ///
    /// It is the backend's count of the reports it made (``Defaults/BackendUpdates/reportCount``),
    /// which a commit's result gives as the reports made before what it found.
    private var received = 0
    /// ``received`` when the commit under way asked the backend.
    private var receivedAtCall = 0

    init(_ backend: any Defaults.Backend) {
        self.backend = backend
        heldReportsPrecedeCommits = backend is any LockingBackend
    }

    /// Applies `report` with `apply` now, or once the commit under way has returned.
    func receive(_ report: Report, apply: (Report, Set<String>) -> Void) {
        gate.lock()
        defer { gate.unlock() }
        received += 1
        if committing {
            held.append((report, !called, received - 1))
        } else {
            apply(report, [])
        }
    }

    /// Notes that the commit under way asks the backend now: reports from here on are newer.
    func callingBackend() {
        gate.withLock {
            called = true
            receivedAtCall = received
        }
    }

    /// What a commit's settling hands back: the keys it wrote, and what it found changed by
    /// others, with the number of reports made before it found them (`nil`: those made before
    /// the backend was asked).
    struct Settled {
        var written: Set<String> = []
        var found: (changes: [String: JSONValue?], afterReports: Int?)?
    }

    /// Runs `commit` with reports held back; then, with reports still held, `settle` with its
    /// result (a failed commit puts its keys back first), which returns the keys the commit wrote
    /// and what it found; then applies the reports that arrived meanwhile and what the commit found,
    /// in the order they were made (the reports without those keys, for the ones that arrived
    /// before the backend was asked).
    func committing<Result>(
        _ commit: () -> Result,
        settle: (Result) -> Settled,
        apply: (Report, Set<String>) -> Void
    ) -> Result {
        gate.lock()
        committing = true
        called = false
        gate.unlock()
        let result = commit()
        gate.lock()
        defer { gate.unlock() }
        let settled = settle(result)
        committing = false
        var found = settled.found
        let foundAfter = settled.found?.afterReports ?? receivedAtCall
        for (report, isBeforeCall, sequence) in held {
            // What the commit found was read after the reports made before it, and before the rest.
            if let (changes, _) = found, sequence >= foundAfter {
                apply(.changed(changes, revision: nil), settled.written)
                found = nil
            }
            apply(report, isBeforeCall || heldReportsPrecedeCommits ? settled.written : [])
        }
        if let (changes, _) = found { apply(.changed(changes, revision: nil), settled.written) }
        held.removeAll()
        return result
    }
}
