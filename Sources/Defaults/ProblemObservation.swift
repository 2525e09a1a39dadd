extension Defaults {
    /// A process-wide watch on the problems suites report, made by ``observeProblems(_:)``.
    ///
    /// The handler is called until ``cancel()`` is called or the observation is released (a
    /// delivery already under way on another thread may still call it once).
    public final class ProblemObservation: Sendable {
        fileprivate let handler: @Sendable (Suite, StorageError) -> Void
        private let isCancelled = Lock(false)

        fileprivate init(_ handler: @escaping @Sendable (Suite, StorageError) -> Void) {
            self.handler = handler
        }

        /// Stops the handler: problems reported after this returns do not reach it (a call
        /// already under way finishes).
        public func cancel() {
            let first = isCancelled.withLock { cancelled in
                defer { cancelled = true }
                return !cancelled
            }
            if first { ProblemObservers.remove(self) }
        }

        fileprivate var isActive: Bool { !isCancelled.withLock { $0 } }
        // No deinit work: the list holds it weakly and sweeps the empty references. (A deinit that
        // took the list's lock could run inside it, when a temporary reference taken there was the
        // last.)
    }

    /// Calls `handler` with every problem any suite reports, and the suite that reports it, beside
    /// the suite's own error handler (or ``errorHandler``), which is called as before.
    ///
    /// For code that looks after a whole process, such as a service's logging or metrics: it sees
    /// the problems of suites it did not make, with their suite. The handler is called where the
    /// suite's error handler is (outside every lock; see ``errorHandler``), after it.
    ///
    /// ```swift
    /// let problems = Defaults.observeProblems { suite, problem in
    ///     print("\(suite): \(problem)")
    /// }
    /// ```
    ///
    /// - Parameter handler: Called with the suite and the problem it reported.
    /// - Returns: The observation; keep it for as long as the handler should be called.
    public static func observeProblems(
        _ handler: @escaping @Sendable (Suite, StorageError) -> Void
    ) -> ProblemObservation {
        let observation = ProblemObservation(handler)
        ProblemObservers.add(observation)
        return observation
    }
}

/// The process's problem observations.
enum ProblemObservers {
    private static let observers = ProcessWideObservers<Defaults.ProblemObservation>()

    static func add(_ observation: Defaults.ProblemObservation) { observers.add(observation) }

    static func remove(_ observation: Defaults.ProblemObservation) { observers.remove(observation) }

    /// Hands `problem` to every observation still active, outside the lock.
    static func deliver(_ problem: Defaults.StorageError, from suite: Defaults.Suite) {
        for observation in observers.current where observation.isActive {
            observation.handler(suite, problem)
        }
    }
}

/// Observations the whole process shares, held weakly: releasing one ends it.
///
/// No observation is ever released inside the lock: looking at a weak reference takes a strong one
/// for a moment, which is the last when another thread lets go meanwhile, and its release frees the
/// handler and what it captured (a suite, whose release commits and can reach this list again).
/// Every strong reference taken inside is handed out, and let go after the lock.
final class ProcessWideObservers<Observation: AnyObject & Sendable>: Sendable {
    private let observers = Lock<[WeakReference<Observation>]>([])

    func add(_ observation: Observation) {
        let alive = observers.withLock { observers in
            defer { observers.append(WeakReference(observation)) }
            return Self.prune(&observers)
        }
        withExtendedLifetime(alive) {}
    }

    func remove(_ observation: Observation) {
        let identifier = ObjectIdentifier(observation)
        let alive = observers.withLock { observers in
            var alive = Self.prune(&observers)
            alive.removeAll { ObjectIdentifier($0) == identifier }
            observers = alive.map(WeakReference.init)
            return alive
        }
        withExtendedLifetime(alive) {}
    }

    /// The observations still there, to be called outside the lock; those released are forgotten.
    var current: [Observation] {
        observers.withLock { $0.isEmpty ? [] : Self.prune(&$0) }
    }

    /// Whether there is none: a caller about to make an event can skip making it.
    ///
    /// An observation released without being cancelled counts until the next delivery
    /// (``current``) forgets it: this looks at no reference, so it may be called under any lock.
    var isEmpty: Bool { observers.withLock { $0.isEmpty } }

    /// Drops the references whose observation is gone; strong references to the others, for the
    /// caller to let go after the lock.
    private static func prune(_ observers: inout [WeakReference<Observation>]) -> [Observation] {
        var alive: [Observation] = []
        alive.reserveCapacity(observers.count)
        observers.removeAll { reference in
            guard let observation = reference.object else { return true }
            alive.append(observation)
            return false
        }
        return alive
    }
}
