// The backend the article "Writing a backend" shows, between the markers, exactly as it shows it:
// `ArticleBackendTests` checks that the article holds this text and that the backend works.

// article: begin
import Defaults
import Synchronization

/// Keeps settings in a dictionary that other parts of the program also change.
final class DictionaryBackend: Defaults.Backend {
    private struct State {
        var values: [String: Defaults.JSONValue] = [:]
        var revision: UInt64 = 0
        var updates: Defaults.BackendUpdates?
    }

    private let state = Mutex(State())

    var name: String { "dictionary" }

    func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        state.withLock { Defaults.BackendContents(values: $0.values, revision: $0.revision) }
    }

    func startReporting(to updates: Defaults.BackendUpdates) {
        state.withLock { $0.updates = updates }
    }

    func stopReporting() {
        state.withLock { $0.updates = nil }
    }

    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult {
        state.withLock { state in
            state.values = changes.applied(to: state.values)
            state.revision += 1
        }
        return .stored
    }

    var supportsConditionalCommit: Bool { true }

    func commit(
        _ changes: Defaults.BackendChanges,
        ifUnchanged expected: [String: Defaults.JSONValue?]
    ) throws(Defaults.StorageError) -> Defaults.ConditionalCommitResult {
        state.withLock { state in
            guard expected.allSatisfy({ state.values[$0.key] == $0.value }) else {
                var current: [String: Defaults.JSONValue?] = [:]
                for name in expected.keys { current[name] = .some(state.values[name]) }
                return .conflict(current: current)
            }
            state.values = changes.applied(to: state.values)
            state.revision += 1
            return .committed
        }
    }

    /// Another part of the program changes a setting: stored, and reported to the suite.
    func set(_ value: Defaults.JSONValue?, forKey name: String) {
        state.withLock { state in
            state.values[name] = value
            state.revision += 1
            // NB: under the lock, so reports leave in the order of the changes. A report returns
            // at once and never calls the backend.
            state.updates?.changed([name: value], revision: state.revision)
        }
    }
}
// article: end
