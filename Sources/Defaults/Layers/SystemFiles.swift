import Dispatch
import Foundation

/// The system files beneath a store's file (``SystemLayers``), as the store reads and follows them:
/// read when the store is opened, watched, and read again when one may have changed, so readers
/// see what they bring and observers of a key whose reads change are told.
///
/// A layer source the store owns, beside ``SecretFiles``: the file backend knows nothing of them.
/// Each file is one source of the process's ``FileWatcher``, watched with every link on its path,
/// and has its own ``FileChangeMachine``: a file that breaks or goes is read again after short
/// delays (it may be half-written), and only then read as empty. A system file is never written,
/// moved or locked: one that holds no settings is reported and left as it is.
final class SystemFiles: FileWatcherClient {
    /// The files, first listed first; never written.
    let files: [FileStorage]
    /// The store told of each change; set once it exists (``follow(for:)``).
    private let store = Lock<WeakReference<Store>?>(nil)
    /// Where reading again and following links run, one at a time, off the watcher's queue.
    private let queue = DispatchQueue(label: "Defaults.SystemFiles")

    /// What is known of the files.
    ///
    /// Touched on `queue`, and by ``load(problems:)`` before any watch.
    private struct Watched {
        /// What to do about each file changing.
        var machines: [FileChangeMachine]
        /// The entries watched for each file: the links on the way, then the file.
        var entries: [[String]]
        /// Each file as last read; `nil` when there was none.
        var known: [FileStorage.Snapshot?]
    }

    private let watched: Lock<Watched>

    /// The system files at `urls`, not read yet.
    init(_ urls: [URL]) {
        let files = urls.map { FileStorage(url: $0, isWritten: false) }
        self.files = files
        watched = Lock(
            Watched(
                machines: files.map { file in FileChangeMachine(retriesAreHeld: { file.retriesAreHeld }) },
                entries: files.map(\.current.resolved.watchedEntries),
                known: files.map { _ in nil }
            )
        )
    }

    deinit {
        FileWatcher.shared.unwatch(backend: ObjectIdentifier(self))
    }

    /// The files' URLs, first listed first.
    var urls: [URL] { files.map(\.url) }

    // MARK: - Opening

    /// Reads every file, for a store being opened: what they bring, and in `problems` what is
    /// wrong with them (never moved or written, whatever they hold).
    func load(problems: inout [Defaults.StorageError]) -> SystemLayers {
        var layers: [SystemLayers.Layer] = []
        for (index, file) in files.enumerated() {
            var problem: Defaults.StorageError?
            let layer: SystemLayers.Layer
            switch file.readSettled() {
            case .parsed(let snapshot), .unchanged(let snapshot):
                layer = SystemLayers.Layer(url: file.url, snapshot: snapshot, problem: &problem)
            case .missing:
                layer = SystemLayers.Layer(url: file.url)
            case .broken(let reason):
                problem = .corruptFileLeftInPlace(url: file.url, reason: reason)
                layer = SystemLayers.Layer(url: file.url)
            case .unreadable(let error):
                problem = error
                layer = SystemLayers.Layer(url: file.url)
                // Found so again by an event, it is not reported again until it has read well.
                watched.withLock { _ = $0.machines[index].handle(.readFound(.unreadable)) }
            }
            if let problem { problems.append(problem) }
            watched.withLock { $0.known[index] = layer.snapshot }
            layers.append(layer)
        }
        return SystemLayers(layers)
    }

    /// Starts following the files for `store`: from now on, a change reaches it.
    ///
    /// - Returns: The `pollingForChanges` reports of the files that can only be polled, for the
    ///   suite that opened them.
    func follow(for store: Store) -> [Defaults.StorageError] {
        self.store.withLock { $0 = WeakReference(store) }
        guard !files.isEmpty else { return [] }
        return FileWatcher.shared.watch(self, sources: watched.withLock { $0.entries })
    }

    // MARK: - Following the files

    /// Called by the watcher: the file `source` may have changed; it is read on this client's queue.
    func fileMayHaveChanged(source: Int) {
        queue.async { [weak self] in self?.run(.fileEvent, source: source) }
    }

    /// Reports `error` to the store's suites, off the caller's thread.
    func reportInBackground(_ error: Defaults.StorageError) {
        store.withLock { $0?.object }?.reportInBackground(error)
    }

    /// Feeds `event` to the machine of the file `source`, and does what it decides.
    private func run(_ event: FileChangeMachine.Event, source: Int) {
        // Held for the whole run: a store that is gone has nobody to tell.
        guard let store = store.withLock({ $0?.object }) else { return }
        var action = watched.withLock { $0.machines[source].handle(event) }
        if action == .read {
            followLinks(source)
            action = read(source, into: store)
        }
        switch action {
        case .retry(let delay, let token):
            queue.asyncAfter(deadline: .now() + delay.dispatchInterval) { [weak self] in
                self?.run(.retryFired(token: token), source: source)
            }
        case .moveAside:
            // Not this store's to move: read as empty, and left as its bytes are.
            let file = files[source]
            guard case .broken(let reason) = file.read() else { return fileMayHaveChanged(source: source) }
            take(SystemLayers.Layer(url: file.url), at: source, into: store)
            reportInBackground(.corruptFileLeftInPlace(url: file.url, reason: reason))
        case .read, .apply, .applyDeletion, .reportUnreadable, .none:
            break
        }
    }

    /// Resolves the path of the file `source` again, and watches where it leads now, until two
    /// resolutions agree (links changed while the watch moved are not missed).
    private func followLinks(_ source: Int) {
        let file = files[source]
        for _ in 0..<8 {
            file.resolveAgain()
            let entries = file.current.resolved.watchedEntries
            let changed = watched.withLock { watched in
                guard watched.entries[source] != entries else { return false }
                watched.entries[source] = entries
                return true
            }
            guard changed else { return }
            FileWatcher.shared.rewatch(self, source: source, entries: entries)
        }
    }

    /// Reads the file `source` and acts on what was found; returns what is left to do.
    private func read(_ source: Int, into store: Store) -> FileChangeMachine.Action {
        let file = files[source]
        let known = watched.withLock { $0.known[source] }
        let result = file.read(knowing: known)
        let finding = result.finding(wasThere: known != nil)
        let action = watched.withLock { $0.machines[source].handle(.readFound(finding)) }
        switch (action, result) {
        case (.apply, .parsed(let snapshot)):
            var problem: Defaults.StorageError?
            take(SystemLayers.Layer(url: file.url, snapshot: snapshot, problem: &problem), at: source, into: store)
            if let problem { reportInBackground(problem) }
            return .none
        case (.applyDeletion, _):
            take(SystemLayers.Layer(url: file.url), at: source, into: store)
            return .none
        case (.reportUnreadable, .unreadable(let error)):
            reportInBackground(error)
            return .none
        default:
            return action
        }
    }

    /// Makes `layer` the file `index` as last seen, and tells the store.
    private func take(_ layer: SystemLayers.Layer, at index: Int, into store: Store) {
        watched.withLock { $0.known[index] = layer.snapshot }
        store.replaceSystemLayer(index, with: layer)
    }
}
