import Defaults
import Dispatch
import Synchronization

/// What observers were given, in order, with a way to wait for the next ones.
///
/// Waiting ends when enough elements have arrived or at a deadline, whichever comes first; the
/// deadline only keeps a broken build from hanging, and no test reads it as a measure of speed.
/// It is longer than a whole run of the suite: on two cores the cooperative pool has two threads,
/// other tests' work can hold both for most of a parallel run (`PoolWatchdog` measured 11–13 s
/// of an 18 s run), and an element that a task delivers (an `updates` loop) waits for them.
package final class EventLog<Element: Sendable>: Sendable {
    private struct Waiter {
        let count: Int
        let resume: @Sendable (Bool) -> Void
    }

    private struct State {
        var elements: [Element] = []
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
    }

    private let state = Lock(State())

    /// How long a wait lasts at most, in seconds.
    package static var deadline: Double { 60 }

    package init() {}

    /// Records `element` and wakes whoever waits for this many.
    package func append(_ element: Element) {
        let ready = state.withLock { state -> [Waiter] in
            state.elements.append(element)
            let count = state.elements.count
            let ready = state.waiters.filter { $0.value.count <= count }
            for key in ready.keys { state.waiters[key] = nil }
            return Array(ready.values)
        }
        for waiter in ready { waiter.resume(true) }
    }

    /// Everything recorded so far.
    package var all: [Element] { state.withLock { $0.elements } }

    /// The number of elements recorded so far.
    package var count: Int { state.withLock { $0.elements.count } }

    /// Waits until at least `count` elements have arrived; false if the deadline passed first.
    package func wait(forCount count: Int) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let once = Once(continuation)
            register(count) { once.resume($0) }
        }
    }

    private func register(_ count: Int, resume: @escaping @Sendable (Bool) -> Void) {
        let (ready, key) = state.withLock { state -> (Bool, Int) in
            if state.elements.count >= count { return (true, -1) }
            state.nextWaiter += 1
            state.waiters[state.nextWaiter] = Waiter(count: count, resume: resume)
            return (false, state.nextWaiter)
        }
        if ready {
            resume(true)
            return
        }
        // NB: weak: the log holds events, which hold their suites; held here until the deadline,
        // a test's suites outlived it by that long, and a late flush wrote into its removed folder.
        DispatchQueue.global()
            .asyncAfter(deadline: .now() + Self.deadline) { [weak self] in
                let expired = self?.state.withLock { $0.waiters.removeValue(forKey: key) }
                expired?.resume(false)
            }
    }
}

/// Resumes a continuation exactly once.
private final class Once: Sendable {
    private let continuation: Lock<CheckedContinuation<Bool, Never>?>

    init(_ continuation: CheckedContinuation<Bool, Never>) {
        self.continuation = Lock(continuation)
    }

    func resume(_ value: Bool) {
        let taken = continuation.withLock { stored -> CheckedContinuation<Bool, Never>? in
            defer { stored = nil }
            return stored
        }
        taken?.resume(returning: value)
    }
}
