import Dispatch

extension Defaults {
    /// Something a suite did that a service counts: a commit, a retry, a change from elsewhere, a
    /// backend that reconnected or loaded again.
    ///
    /// Delivered by ``observeActivity(_:)``. Problems are not activity: they reach
    /// ``observeProblems(_:)`` (a failed commit there is
    /// ``StorageError/writeFailed(url:reason:)`` or ``StorageError/backendFailed(backend:reason:)``).
    public enum Activity: Sendable, Hashable, CustomStringConvertible {
        /// Writes made through the suite were stored in its file or backend: `keys` keys, in one
        /// commit (writes a moment apart are gathered into one); 0 for a `removeAll()` alone.
        case committed(keys: Int)
        /// A commit that failed is tried again (after a pause that grows with each failure). The
        /// failure was reported as a problem; the outcome of this try is a ``committed(keys:)`` or
        /// a failure, reported only when it is not the one reported already.
        case retryingCommit
        /// Changes made elsewhere reached the suite at once, to `keys` keys: another process, a
        /// hand edit, another instance through the backend, a system file, a secret's file.
        case changedElsewhere(keys: Int)
        /// The backend's connection for changes made elsewhere was lost and is back (etcd's
        /// watch connected again); reported by the backend (``BackendUpdates/reconnected()``).
        case reconnected(backend: String)
        /// The backend lost track of changes and handed over its contents whole
        /// (``BackendUpdates/replaced(by:)``), as etcd does after a compaction, a restore, or a
        /// first read that failed.
        case reloaded(backend: String)

        /// The activity, for a person: "committed 2 keys".
        public var description: String {
            switch self {
            case .committed(let keys): "committed \(keys) key\(keys == 1 ? "" : "s")"
            case .retryingCommit: "trying a failed commit again"
            case .changedElsewhere(let keys): "\(keys) key\(keys == 1 ? "" : "s") changed elsewhere"
            case .reconnected(let backend): "\(backend) reconnected"
            case .reloaded(let backend): "\(backend) loaded whole again"
            }
        }
    }

    /// A process-wide watch on what suites do, made by ``observeActivity(_:)``.
    ///
    /// The handler is called until ``cancel()`` is called or the observation is released (a
    /// delivery already under way on another thread may still call it once).
    public final class ActivityObservation: Sendable {
        fileprivate let handler: @Sendable (Suite, Activity) -> Void
        private let isCancelled = Lock(false)

        fileprivate init(_ handler: @escaping @Sendable (Suite, Activity) -> Void) {
            self.handler = handler
        }

        /// Stops the handler: activity after this returns does not reach it (a call already
        /// under way finishes).
        public func cancel() {
            let first = isCancelled.withLock { cancelled in
                defer { cancelled = true }
                return !cancelled
            }
            if first { ActivityObservers.observers.remove(self) }
        }

        fileprivate var isActive: Bool { !isCancelled.withLock { $0 } }
    }

    /// Calls `handler` with what every suite does (``Activity``), and the suite that does it: for
    /// a service's metrics.
    ///
    /// The handler is called on a queue of the library's, outside every lock, soon after the
    /// activity, one call at a time and in the order the activity happened, across suites. It is
    /// not in order with the suites' change events (a change from elsewhere may be told before or
    /// after its observers hear of it) nor with their problems (``observeProblems(_:)``).
    /// Nothing is made for it while no observation exists, so a process that does not observe
    /// pays nothing.
    ///
    /// ```swift
    /// let activity = Defaults.observeActivity { suite, activity in
    ///     print("\(suite): \(activity)")
    /// }
    /// ```
    ///
    /// - Parameter handler: Called with the suite and what it did.
    /// - Returns: The observation; keep it for as long as the handler should be called.
    public static func observeActivity(
        _ handler: @escaping @Sendable (Suite, Activity) -> Void
    ) -> ActivityObservation {
        let observation = ActivityObservation(handler)
        ActivityObservers.observers.add(observation)
        return observation
    }
}

/// The process's activity observations.
enum ActivityObservers {
    static let observers = ProcessWideObservers<Defaults.ActivityObservation>()
    /// Where a store's activity is handed over, one at a time, in the order it happened.
    static let queue = DispatchQueue(label: "Defaults.activity")

    /// Hands `activity` to every observation still active; the caller is outside every lock.
    static func deliver(_ activity: Defaults.Activity, from suite: Defaults.Suite) {
        for observation in observers.current where observation.isActive {
            observation.handler(suite, activity)
        }
    }
}
