import Dispatch
import Synchronization

/// Elements handed over from any thread, taken in order by one reader that waits for each with a
/// deadline.
///
/// The deadline only keeps a broken build from hanging; no test reads it as a measure of speed.
final class Mailbox<Element: Sendable>: Sendable {
    private struct State {
        var queued: [Element] = []
        var waiter: (id: Int, continuation: CheckedContinuation<Element?, Never>)?
        var nextID = 0
    }

    private let state = Mutex(State())

    /// Hands `element` to the waiting reader, or queues it.
    func put(_ element: Element) {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            guard let waiter = state.waiter else {
                state.queued.append(element)
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: element)
    }

    /// The next element; `nil` when none arrives within `seconds`.
    func take(within seconds: Double = 60) async -> Element? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
            let (element, id) = state.withLock { state -> (Element?, Int?) in
                if !state.queued.isEmpty { return (state.queued.removeFirst(), nil) }
                precondition(state.waiter == nil, "one reader at a time")
                state.nextID += 1
                state.waiter = (state.nextID, continuation)
                return (nil, state.nextID)
            }
            guard let id else {
                continuation.resume(returning: element)
                return
            }
            DispatchQueue.global()
                .asyncAfter(deadline: .now() + seconds) { [self] in
                    let expired = state.withLock { state -> CheckedContinuation<Element?, Never>? in
                        guard let waiter = state.waiter, waiter.id == id else { return nil }
                        state.waiter = nil
                        return waiter.continuation
                    }
                    expired?.resume(returning: nil)
                }
        }
    }

    /// Takes elements until one satisfies `predicate`, and returns it; `nil` at a deadline.
    func take(within seconds: Double = 60, where predicate: (Element) -> Bool) async -> Element? {
        while let element = await take(within: seconds) {
            if predicate(element) { return element }
        }
        return nil
    }

    /// The next `count` elements, or fewer when one does not arrive in time.
    func take(_ count: Int, within seconds: Double = 60) async -> [Element] {
        var taken: [Element] = []
        while taken.count < count, let element = await take(within: seconds) { taken.append(element) }
        return taken
    }

    /// Whether nothing is queued now.
    var isEmpty: Bool { state.withLock { $0.queued.isEmpty } }
}
