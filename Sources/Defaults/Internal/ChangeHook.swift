import Synchronization

extension Defaults {
    /// Where a committed change came from.
    package enum ChangeOrigin: Sendable, Equatable {
        /// A write made in this process.
        case local
        /// A change read from the file after another process or a person changed it.
        case external
    }

    /// A key's stored value before and after a change; `nil` means nothing stored.
    ///
    /// Where the suite already held a decoded value (the old one from its cache, the new one when a
    /// lossless built-in type was written), it travels along so observers need not decode JSON.
    package struct StoredChange: Sendable, Equatable {
        package var old: JSONValue?
        package var new: JSONValue?
        package var oldDecoded: Suite.CacheEntry?
        package var newDecoded: Suite.CacheEntry?

        package init(
            old: JSONValue?,
            new: JSONValue?,
            oldDecoded: Suite.CacheEntry? = nil,
            newDecoded: Suite.CacheEntry? = nil
        ) {
            self.old = old
            self.new = new
            self.oldDecoded = oldDecoded
            self.newDecoded = newDecoded
        }

        /// Changes are equal when their stored values are; the decoded copies are a cache.
        package static func == (lhs: StoredChange, rhs: StoredChange) -> Bool {
            lhs.old == rhs.old && lhs.new == rhs.new
        }
    }

    /// One committed change to a suite: a write, a reset, a `removeAll` or a whole transaction.
    ///
    /// It lists only keys whose stored value really changed.
    package struct SuiteChange: Sendable {
        package let suite: Suite
        package let changes: [String: StoredChange]
        package let origin: ChangeOrigin
        /// True when the write was made inside `Defaults.withoutPropagation`.
        package let isPropagationSuppressed: Bool
    }

    /// A receiver of every committed change: the narrow hook through which changes leave the core.
    ///
    /// The observation module adds one. It is called on the writing thread, after the change is
    /// committed and outside every lock.
    package final class ChangeSink: Sendable {
        package let deliver: @Sendable (SuiteChange) -> Void

        package init(_ deliver: @escaping @Sendable (SuiteChange) -> Void) {
            self.deliver = deliver
        }
    }

    // NB: the sinks are kept in a class box, never as a bare closure in the Mutex: reading a closure
    // back out of `withLock` re-wraps it in a thunk and stores that back, deeper on every read.
    private static let changeSinks = Lock<[ChangeSink]>([])

    /// Starts delivering committed changes to `sink`.
    package static func addChangeSink(_ sink: ChangeSink) {
        changeSinks.withLock { $0.append(sink) }
    }

    /// Stops delivering committed changes to `sink`.
    package static func removeChangeSink(_ sink: ChangeSink) {
        changeSinks.withLock { $0.removeAll { $0 === sink } }
    }

    /// The sinks to deliver a change to.
    static var currentChangeSinks: [ChangeSink] { changeSinks.withLock { $0 } }

    /// Whether writes made in the current task or thread are kept from observers.
    package enum Propagation {
        /// Set by `Defaults.withoutPropagation`; task-local so other tasks and threads still propagate.
        @TaskLocal package static var isSuppressed = false
    }
}
