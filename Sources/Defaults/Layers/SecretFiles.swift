import Dispatch
import Foundation

/// Follows a store's secret files on disk, as a file backend follows its file: when one may have
/// changed (a Kubernetes Secret volume's `..data` link swapped, a file replaced or created), the
/// store reads its secrets again, and observers of a secret that changed are told.
///
/// Each secret key's file is one source of the process's ``FileWatcher``, watched with every link
/// on its path (``ResolvedPath/watchedEntries``), so a link re-pointed is seen as well as a file
/// replaced; the path is resolved again before each read.
final class SecretFiles: FileWatcherClient {
    private let store: WeakReference<Store>
    /// Where reading again and following links run, one at a time, off the watcher's queue.
    private let queue = DispatchQueue(label: "Defaults.SecretFiles")
    /// What is watched: the directory, the secret names (one source each, in this order), and
    /// each one's entries.
    ///
    /// `isWatching` once the watcher knows this client. Touched on `queue` only.
    private let watched = Lock<Watched>(Watched())

    private struct Watched {
        var directory: URL?
        var names: [String] = []
        var entries: [[String]] = []
        var isWatching = false
    }

    init(store: Store) {
        self.store = WeakReference(store)
    }

    deinit {
        FileWatcher.shared.unwatch(backend: ObjectIdentifier(self))
    }

    /// Watches the files of `names` in `directory` from now on (nothing, without a directory).
    func follow(_ names: [String], in directory: URL?) {
        queue.async { [self] in
            guard let directory else { return }
            // A name keeps its source from the first time it is followed: sources are indices.
            var known = watched.withLock { $0 }
            for name in names.sorted() where !known.names.contains(name) {
                known.names.append(name)
                known.entries.append([])
            }
            var changed: [(source: Int, entries: [String])] = []
            for (source, name) in known.names.enumerated() {
                let now = Self.entries(of: name, in: directory)
                if now != known.entries[source] || known.directory != directory { changed.append((source, now)) }
                known.entries[source] = now
            }
            let wasWatching = known.isWatching
            known.directory = directory
            known.isWatching = true
            watched.withLock { $0 = known }
            if wasWatching {
                for (source, entries) in changed {
                    FileWatcher.shared.rewatch(self, source: source, entries: entries)
                }
            } else {
                let polling = FileWatcher.shared.watch(self, sources: known.entries)
                for problem in polling { reportInBackground(problem) }
            }
            // Read once the files are watched: a file changed after the store last read it and
            // before its watch existed made no event.
            store.object?.readSecretsAgain(from: directory)
        }
    }

    /// Called by the watcher: a secret file may have changed.
    ///
    /// Its links are followed, and the store reads its secrets again.
    func fileMayHaveChanged(source: Int) {
        queue.async { [self] in
            let (directory, names, entries) = watched.withLock { ($0.directory, $0.names, $0.entries) }
            guard let directory, names.indices.contains(source) else { return }
            // As a file backend follows its links: until two resolutions agree.
            var current = entries[source]
            for _ in 0..<8 {
                let now = Self.entries(of: names[source], in: directory)
                guard now != current else { break }
                current = now
                watched.withLock { $0.entries[source] = now }
                FileWatcher.shared.rewatch(self, source: source, entries: now)
            }
            store.object?.readSecretsAgain(from: directory)
        }
    }

    /// Reports `error` to the store's suites, off the caller's thread.
    func reportInBackground(_ error: Defaults.StorageError) {
        store.object?.reportInBackground(error)
    }

    /// The entries to watch for the secret `name` in `directory`: the links on the way, then the file.
    private static func entries(of name: String, in directory: URL) -> [String] {
        ResolvedPath.resolve(directory.appendingPathComponent(name, isDirectory: false).path).watchedEntries
    }
}
