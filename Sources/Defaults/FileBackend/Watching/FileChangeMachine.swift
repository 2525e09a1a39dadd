/// Decides what a file backend does when its file may have changed under it.
///
/// Events in, actions out: the backend feeds it what the watcher saw and what reading the file
/// found, and runs the action it returns. Nothing here touches a file or a clock, so every path is
/// testable with synthetic events.
///
/// A file that is missing or does not parse is not acted on at once: editors save by renaming the
/// old file away and writing a new one, or by rewriting it in place, and either can be caught
/// half-way. It is read again after short delays; only if it stays missing are its keys dropped,
/// and only if it stays broken is it moved aside.
struct FileChangeMachine: Sendable {
    /// Something that happened to the file, or to the backend's look at it.
    enum Event: Sendable, Equatable {
        /// The watcher saw the file replaced, rewritten, created or deleted, or its directory come
        /// or go, or a poll saw it change.
        case fileEvent
        /// What reading the file found.
        case readFound(Finding)
        /// The timer armed by a `.retry(after:token:)` action fired.
        case retryFired(token: UInt64)
    }

    /// What reading the file found.
    enum Finding: Sendable, Equatable {
        /// The same bytes as the backend last read or wrote, or still no file.
        case unchanged
        /// A JSON object that differs from what the backend last saw.
        case parsed
        /// No file, where the backend last saw one.
        case missing
        /// A file that is not a JSON object.
        case broken
        /// A file that could not be read (permissions, I/O error).
        case unreadable
    }

    /// What the backend should do next.
    enum Action: Sendable, Equatable {
        /// Read the file now, and feed back what was found.
        case read
        /// Apply the parsed file to memory and report the keys that changed.
        case apply
        /// The file stayed gone: every key it held is gone, so defaults come back.
        case applyDeletion
        /// Read again after `delay`, feeding back `.retryFired(token:)`.
        case retry(after: Duration, token: UInt64)
        /// The file stayed broken: move it aside under the lock, keep memory, write a good file.
        case moveAside
        /// The file could not be read: report it (once until it reads again).
        case reportUnreadable
        /// Nothing to do.
        case none
    }

    /// How long to wait before each new look at a file that is missing or broken; after the last,
    /// the backend acts on what it finds.
    static let retryDelays: [Duration] = [.milliseconds(20), .milliseconds(40), .milliseconds(80), .milliseconds(160)]

    /// Whether a file found missing or broken is to be looked at again and again, never acted on:
    /// while a test rewrites the file in place or remakes a link in steps, between which a busy
    /// machine may pause longer than every retry (see `Defaults.Suite.holdingBrokenFileRetries`).
    private let retriesAreHeld: @Sendable () -> Bool

    /// Creates the machine of one file; `retriesAreHeld` is asked each time the file is found
    /// missing or broken.
    init(retriesAreHeld: @escaping @Sendable () -> Bool = { false }) {
        self.retriesAreHeld = retriesAreHeld
    }

    /// Looks taken since the file was last found readable or changed by an event.
    private var attempts = 0
    /// Names the one retry that may still act; older timers are stale.
    private var token: UInt64 = 0
    private var retryPending = false
    private var reportedUnreadable = false

    /// Takes in `event` and returns what to do.
    mutating func handle(_ event: Event) -> Action {
        switch event {
        case .fileEvent:
            // A fresh event supersedes a pending retry: look now, and start counting again.
            attempts = 0
            token &+= 1
            retryPending = false
            return .read
        case .retryFired(let fired):
            // A retry overtaken by a newer event is stale: that event already read the file.
            guard retryPending, fired == token else { return .none }
            retryPending = false
            return .read
        case .readFound(let finding):
            return found(finding)
        }
    }

    /// This process wrote the file, having read it well: an unreadable file reported before is
    /// gone, so finding one again is reported, though no event in between found it readable.
    mutating func fileWasWritten() {
        reportedUnreadable = false
    }

    private mutating func found(_ finding: Finding) -> Action {
        switch finding {
        case .unchanged:
            // Our own write, or an event about a file that ended up as it was.
            attempts = 0
            reportedUnreadable = false
            return .none
        case .parsed:
            attempts = 0
            reportedUnreadable = false
            return .apply
        case .missing, .broken:
            // Possibly an editor half-way through a save: look again shortly.
            if retriesAreHeld() {
                token &+= 1
                retryPending = true
                return .retry(after: Self.retryDelays[0], token: token)
            }
            if attempts < Self.retryDelays.count {
                let delay = Self.retryDelays[attempts]
                attempts += 1
                token &+= 1
                retryPending = true
                return .retry(after: delay, token: token)
            }
            // It stayed that way through every retry: act on it.
            attempts = 0
            return finding == .missing ? .applyDeletion : .moveAside
        case .unreadable:
            // Nothing to apply; say so once, not on every event, until it reads again.
            attempts = 0
            guard !reportedUnreadable else { return .none }
            reportedUnreadable = true
            return .reportUnreadable
        }
    }
}
