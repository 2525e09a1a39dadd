import Configuration
import Synchronization

/// Feeds one `watchValue` stream: on each change event, reads the key again and yields the result
/// when it differs from the last one yielded.
final class ValueWatcher: Sendable {
    typealias Element = Result<LookupResult, any Error>

    private let last = Mutex<Element?>(nil)
    private let continuation: AsyncStream<Element>.Continuation
    private let read: @Sendable () -> Element

    init(continuation: AsyncStream<Element>.Continuation, read: @escaping @Sendable () -> Element) {
        self.continuation = continuation
        self.read = read
    }

    /// Reads the value now, and yields it if it changed.
    func refresh() {
        // Read, compared and yielded under this watcher's lock, so two writers' events cannot
        // yield their reads in the wrong order and leave an old value as the newest. `yield` runs no
        // user code, and the suite never calls out while holding its own lock.
        last.withLock { last in
            let current = read()
            if let previous = last, Self.isSame(previous, current) { return }
            last = current
            continuation.yield(current)
        }
    }

    /// Whether two results tell a watcher the same thing: equal values, or equal errors.
    static func isSame(_ lhs: Element, _ rhs: Element) -> Bool {
        switch (lhs, rhs) {
        case (.success(let left), .success(let right)):
            return left == right
        case (.failure(let left), .failure(let right)):
            return (left as? DefaultsProviderError) == (right as? DefaultsProviderError)
        default:
            return false
        }
    }
}

/// Feeds one `watchSnapshot` stream: a new snapshot for each change event.
final class SnapshotWatcher: Sendable {
    private let lock = Mutex<Void>(())
    private let continuation: AsyncStream<any ConfigSnapshot>.Continuation
    private let take: @Sendable () -> any ConfigSnapshot

    init(
        continuation: AsyncStream<any ConfigSnapshot>.Continuation,
        take: @escaping @Sendable () -> any ConfigSnapshot
    ) {
        self.continuation = continuation
        self.take = take
    }

    /// Takes a snapshot now and yields it.
    func refresh() {
        // Taken and yielded under the lock, for the same reason as `ValueWatcher.refresh`.
        lock.withLock { _ in _ = continuation.yield(take()) }
    }
}
