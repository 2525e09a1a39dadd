// A backend written outside the library, as a user of it would write one: against its public API
// only (no `@testable`, no `@_spi`, no `package` symbols). The benchmarks and `defaults-profile`
// put suites on it to show that a read over a backend of the user's costs what a read over the
// file does: reads never reach a backend.

import Defaults
import Synchronization

/// A ``Defaults/Backend`` that keeps every value in a dictionary behind a lock.
///
/// Nothing else writes it, so it reports no outside changes and offers no conditional commit (the
/// protocol's defaults).
public final class DictionaryBackend: Defaults.Backend {
    private struct Contents {
        var values: [String: Defaults.JSONValue]
        var commits = 0
    }

    private let contents: Mutex<Contents>

    /// Creates a backend that holds `values`.
    public init(_ values: [String: Defaults.JSONValue] = [:]) {
        contents = Mutex(Contents(values: values))
    }

    /// A short name for messages.
    public var name: String { "dictionary" }

    /// What the backend holds now.
    public var values: [String: Defaults.JSONValue] { contents.withLock { $0.values } }

    /// How many commits the suite has made.
    public var commitCount: Int { contents.withLock { $0.commits } }

    /// Every key stored.
    public func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        Defaults.BackendContents(values: contents.withLock { $0.values })
    }

    /// Stores `changes`, merged per key.
    public func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult
    {
        contents.withLock { contents in
            contents.values = changes.applied(to: contents.values)
            contents.commits += 1
        }
        return .stored
    }
}
