import Defaults
import Synchronization

/// Collects what handlers receive, from any thread.
final class Recorder<Element: Sendable>: Sendable {
    private let storage = Lock<[Element]>([])

    func append(_ element: Element) { storage.withLock { $0.append(element) } }
    var elements: [Element] { storage.withLock { $0 } }
    var count: Int { storage.withLock { $0.count } }
}
