/// When a store commits what was written in memory to its backend: the decisions, without the
/// timer, the lock or the backend.
///
/// Writes wait in memory and are committed together once the coalescing delay has passed, so a
/// burst of writes is one commit. A commit that fails is retried on the timer with a growing
/// delay, so a full disk is no busy loop; a refused one is not retried. A failure is reported once
/// while it lasts: a retry that fails the same way, or a backend's report of the same problem,
/// says nothing new. A test may hold the timer's commits back. The store feeds the events under
/// its lock and carries the actions out after it, as ``FileChangeMachine`` does for the file's
/// changes.
struct FlushMachine {
    /// What the store does after an event.
    enum Action: Equatable {
        /// Nothing.
        case none
        /// Start the timer, to fire ``timerFired(isDirty:)`` after the delay.
        case arm(after: Duration)
        /// Commit what is pending now.
        case commit
    }

    /// How long the store waits after a change before committing it, so bursts coalesce.
    static let coalescingDelay = Duration.milliseconds(50)
    /// The first and the longest wait before a failed commit is tried again.
    static let retryDelays = (first: Duration.milliseconds(500), longest: Duration.seconds(30))

    /// Whether the timer is running: a change needs no other until it fires.
    private(set) var isArmed = false
    /// Whether a commit has taken the pending changes and not finished.
    private(set) var isCommitting = false
    /// Whether a test holds the timer's commits back (``Store/holdTimedCommits(_:)``).
    private(set) var isHeld = false
    /// The wait before the last retry; zero after a commit that succeeded.
    private(set) var retryDelay = Duration.zero
    /// Whether the last commit failed: the next one is a retry.
    private(set) var lastCommitFailed = false
    /// The text of the commit failure last reported, while it lasts: `nil` once a commit
    /// succeeds or is refused.
    private(set) var reportedFailure: String?
    /// The text of the problem the backend last reported (a file found unreadable, which its
    /// own watch reports once): a commit that fails for it says nothing new.
    private(set) var backendProblem: String?

    /// A change was made that waits for a commit.
    ///
    /// - Returns: Whether the caller must arm the timer (for ``coalescingDelay``); the write
    ///   path's test, so a `Bool` rather than an ``Action``.
    mutating func changed() -> Bool {
        defer { isArmed = true }
        return !isArmed
    }

    /// Changes are waiting (`isDirty`) and nothing may have armed the timer for them: after a hold
    /// ends, or after something put changes back.
    mutating func pending(isDirty: Bool) -> Action {
        guard isDirty, !isArmed else { return .none }
        isArmed = true
        return .arm(after: Self.coalescingDelay)
    }

    /// The timer fired.
    ///
    /// Held, the timer only disarms: the next change arms it again, and the end of the hold arms
    /// it for what is still pending. A commit running on another thread has taken the pending
    /// changes already, so one is still asked for then: it waits for that commit.
    mutating func timerFired(isDirty: Bool) -> Action {
        isArmed = false
        guard !isHeld, isDirty || isCommitting else { return .none }
        return .commit
    }

    /// Whether a commit asked for now is needed.
    ///
    /// For ``Defaults/Suite/synchronize()`` and the commit at exit. The timer stays armed, so writes right after it do not arm a second one: at most
    /// one background commit per coalescing delay, however often this is asked.
    func commitNeeded(isDirty: Bool) -> Bool {
        isDirty || isCommitting
    }

    /// A commit took the pending changes and is about to ask the backend.
    mutating func commitStarted() {
        isCommitting = true
    }

    /// The commit succeeded.
    mutating func committed() {
        isCommitting = false
        retryDelay = .zero
        lastCommitFailed = false
        // Whatever stood in the way is gone: the next failure is news.
        reportedFailure = nil
        backendProblem = nil
    }

    /// A commit outside the machine (an exclusive transaction's) succeeded.
    ///
    /// Whatever stood in the way is gone, and the next failure is news. What waits for a commit
    /// still waits.
    mutating func committedOutside() {
        reportedFailure = nil
        backendProblem = nil
    }

    /// The backend refused the commit: its changes are given up, not retried.
    mutating func refused() {
        isCommitting = false
        lastCommitFailed = false
        // The backend was reached and answered: a failure after it is another episode.
        reportedFailure = nil
    }

    /// A commit failed with `problem` (its text): whether to report it.
    ///
    /// Not when it was reported already, by an earlier try or by the backend, and no commit has
    /// succeeded since: the same obstacle met by each retry is one problem. A different one is
    /// reported, and becomes the one standing.
    mutating func reportsFailure(_ problem: String) -> Bool {
        guard problem != reportedFailure, problem != backendProblem else { return false }
        reportedFailure = problem
        return true
    }

    /// The backend reported `problem` (its text): whether to pass it on.
    ///
    /// Not when a commit reported the same failure and none has succeeded since, nor when the
    /// backend (or the open) reported it already and has read well neither since: a file its watch
    /// finds as the open found it is one problem.
    mutating func reportsBackendProblem(_ problem: String) -> Bool {
        defer { backendProblem = problem }
        return problem != reportedFailure && problem != backendProblem
    }

    /// The backend reported values it read well: a problem it reported is behind it.
    mutating func backendReadWell() {
        backendProblem = nil
    }

    /// The commit failed, and its changes are pending again: they are retried after a delay that
    /// doubles each time, from ``retryDelays``' first to its longest.
    mutating func failed() -> Action {
        isCommitting = false
        lastCommitFailed = true
        guard !isArmed else { return .none }
        isArmed = true
        retryDelay = min(max(retryDelay * 2, Self.retryDelays.first), Self.retryDelays.longest)
        return .arm(after: retryDelay)
    }

    /// A test holds the timer's commits back, or lets them go again.
    mutating func hold(_ held: Bool, isDirty: Bool) -> Action {
        isHeld = held
        return held ? .none : pending(isDirty: isDirty)
    }
}
