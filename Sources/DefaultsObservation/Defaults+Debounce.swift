import Defaults
import Synchronization

extension Defaults {
    /// Calls `handler` once after a burst of changes to `keys`, when they have been quiet for
    /// `quietPeriod`, with the keys that changed during the burst.
    ///
    /// Meant for services: a transaction, a hand-edited file or a burst of writes becomes one
    /// reload. The handler runs on a task of its own, not on the writing thread. Writes made inside
    /// ``withoutPropagation(_:)-(()->Result)`` are not counted.
    ///
    /// ```swift
    /// let observation = Defaults.observe(keys: .port, .host, debounce: .milliseconds(200)) { changed in
    ///     server.reload(changed)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - keys: The keys to watch; they may belong to different suites.
    ///   - quietPeriod: How long the keys must stay unchanged before `handler` runs.
    ///   - clock: The clock that measures `quietPeriod`; tests pass one they advance by hand.
    ///   - handler: Called with the keys that changed since the previous call.
    /// - Returns: The observation; invalidating or releasing it also drops a pending call.
    public static func observe(
        keys: _AnyKey...,
        debounce quietPeriod: Duration,
        clock: any Clock<Duration> = ContinuousClock(),
        handler: @escaping @Sendable (Set<_AnyKey>) -> Void
    ) -> Observation {
        observe(keys: keys, debounce: quietPeriod, clock: clock, handler: handler)
    }

    /// Calls `handler` once after a burst of changes to `keys`, when they have been quiet for
    /// `quietPeriod`, with the keys that changed during the burst.
    ///
    /// - Parameters:
    ///   - keys: The keys to watch; they may belong to different suites.
    ///   - quietPeriod: How long the keys must stay unchanged before `handler` runs.
    ///   - clock: The clock that measures `quietPeriod`; tests pass one they advance by hand.
    ///   - handler: Called with the keys that changed since the previous call.
    /// - Returns: The observation; invalidating or releasing it also drops a pending call.
    public static func observe(
        keys: [_AnyKey],
        debounce quietPeriod: Duration,
        clock: any Clock<Duration> = ContinuousClock(),
        handler: @escaping @Sendable (Set<_AnyKey>) -> Void
    ) -> Observation {
        func start<C: Clock<Duration>>(_ clock: C) -> Observation {
            let debouncer = Debouncer(keys: keys, quietPeriod: quietPeriod, clock: clock, handler: handler)
            let subscriber = Subscriber(keys: Array(debouncer.keysByAddress.values), onStop: debouncer.stop) {
                change in debouncer.record(change)
            }
            return Observation(subscriber: subscriber)
        }
        return start(clock)
    }
}

/// Collects changed keys and fires once the keys have been quiet for the quiet period.
///
/// The state machine decides under the lock and returns what to do; the timer task runs it.
final class Debouncer<C: Clock<Duration>>: Sendable {
    let keysByAddress: [KeyAddress: Defaults._AnyKey]
    private let quietPeriod: Duration
    private let clock: C
    private let handler: @Sendable (Set<Defaults._AnyKey>) -> Void
    private let state = Lock(State())

    private struct State {
        var pending: Set<Defaults._AnyKey> = []
        /// When to fire if nothing else changes.
        var deadline: C.Instant?
        var timer: Task<Void, Never>?
        var stopped = false
    }

    private enum AfterSleep {
        /// A change arrived during the sleep: sleep again until the new deadline.
        case sleep(until: C.Instant)
        /// Quiet for the whole period: report these keys.
        case fire(Set<Defaults._AnyKey>)
        /// Stopped: end the timer.
        case finish
    }

    init(
        keys: [Defaults._AnyKey],
        quietPeriod: Duration,
        clock: C,
        handler: @escaping @Sendable (Set<Defaults._AnyKey>) -> Void
    ) {
        self.keysByAddress = Dictionary(keys.map { (KeyAddress($0), $0) }, uniquingKeysWith: { first, _ in first })
        self.quietPeriod = quietPeriod
        self.clock = clock
        self.handler = handler
    }

    func record(_ change: Defaults.SuiteChange) {
        let suite = change.suite.stateIdentifier
        let changed = change.changes.keys.compactMap { keysByAddress[KeyAddress(suite: suite, name: $0)] }
        guard !changed.isEmpty else { return }
        let deadline = clock.now.advanced(by: quietPeriod)
        state.withLock { state in
            guard !state.stopped else { return }
            state.pending.formUnion(changed)
            state.deadline = deadline
            // A timer already sleeping picks the new deadline up when it wakes.
            guard state.timer == nil else { return }
            state.timer = Task.detached { [self] in await self.runTimer(firstDeadline: deadline) }
        }
    }

    func stop() {
        let timer = state.withLock { state -> Task<Void, Never>? in
            state.stopped = true
            state.pending = []
            defer { state.timer = nil }
            return state.timer
        }
        timer?.cancel()
    }

    private func runTimer(firstDeadline: C.Instant) async {
        var deadline = firstDeadline
        while true {
            do {
                try await clock.sleep(until: deadline, tolerance: nil)
            } catch {
                return  // Cancelled by `stop()`.
            }
            switch afterSleep(sleptUntil: deadline) {
            case .sleep(let next):
                deadline = next
            case .fire(let keys):
                handler(keys)
                return
            case .finish:
                return
            }
        }
    }

    private func afterSleep(sleptUntil deadline: C.Instant) -> AfterSleep {
        state.withLock { state in
            guard !state.stopped, let current = state.deadline else {
                state.timer = nil
                return .finish
            }
            if deadline < current { return .sleep(until: current) }
            let keys = state.pending
            state.pending = []
            state.deadline = nil
            state.timer = nil
            return .fire(keys)
        }
    }
}
