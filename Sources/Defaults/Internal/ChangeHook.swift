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
    package struct StoredChange: Sendable, Equatable {
        package var old: JSONValue?
        package var new: JSONValue?
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

    /// The single narrow hook through which every committed change leaves the core.
    ///
    /// The observation module installs its handler here. It is called on the writing thread, after
    /// the change is committed and outside every lock.
    package static let changeSink = Mutex<(@Sendable (SuiteChange) -> Void)?>(nil)

    /// Whether writes made in the current task or thread are kept from observers.
    package enum Propagation {
        /// Set by `Defaults.withoutPropagation`; task-local so other tasks and threads still propagate.
        @TaskLocal package static var isSuppressed = false
    }
}
