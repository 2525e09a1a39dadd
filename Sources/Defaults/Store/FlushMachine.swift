/// When a store commits what was written in memory to its backend: the decisions, without the
/// timer, the lock or the backend.
///
/// Writes wait in memory and are committed together once the coalescing delay has passed, so a
/// burst of writes is one commit. A commit that fails is retried on the timer with a growing
/// delay, so a full disk is no busy loop; a refused one is not retried. A test may hold the
/// timer's commits back. The store feeds the events under its lock and carries the actions out
/// after it, as ``FileChangeMachine`` does for the file's changes.
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
    }

    /// The backend refused the commit: its changes are given up, not retried.
    mutating func refused() {
        isCommitting = false
        lastCommitFailed = false
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
