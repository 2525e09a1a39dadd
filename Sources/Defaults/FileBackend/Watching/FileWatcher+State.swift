import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the watcher tells when a file it watches may have changed: a file backend (its own file and
/// its system files), or a store's secret files.
protocol FileWatcherClient: AnyObject, Sendable {
    /// The file `source` (an index into the client's files, as it gave them) may have changed.
    /// Called on the watcher's queue: the client reads it elsewhere.
    func fileMayHaveChanged(source: Int)
    /// Reports `error` (a file polled, not watched) to the suites concerned, off the caller's thread.
    func reportInBackground(_ error: Defaults.StorageError)
}

/// A client of the watcher, held weakly: a backend or store that goes away is not kept for its watches.
struct WeakClient: Sendable {
    weak let object: (any FileWatcherClient)?

    init(_ object: any FileWatcherClient) { self.object = object }
}

/// What the watcher keeps: its clients (a backend's files), what each watches, and what polling saw.
extension FileWatcher {
    /// What a watched entry's directory entry said when last polled.
    struct FileStamp: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: timespec
        var changed: timespec

        static func == (lhs: FileStamp, rhs: FileStamp) -> Bool {
            lhs.device == rhs.device && lhs.inode == rhs.inode && lhs.size == rhs.size
                && lhs.modified.tv_sec == rhs.modified.tv_sec && lhs.modified.tv_nsec == rhs.modified.tv_nsec
                && lhs.changed.tv_sec == rhs.changed.tv_sec && lhs.changed.tv_nsec == rhs.changed.tv_nsec
        }

        /// The stamp of the entry at `path` (of a link itself, not of what it points to); `nil`
        /// when there is none.
        static func of(_ path: String) -> FileStamp? {
            var info = stat()
            guard lstat(path, &info) == 0 else { return nil }
            return FileStamp(
                device: UInt64(info.st_dev),
                inode: UInt64(info.st_ino),
                size: Int64(info.st_size),
                modified: info.st_mtim,
                changed: info.st_ctim
            )
        }
    }

    /// One of a backend's files: the backend, and which of its files (0 is the one it writes).
    struct Client: Hashable {
        let backend: ObjectIdentifier
        let source: Int
    }

    struct State: @unchecked Sendable {  // dispatch sources are thread-safe; everything else is plain data
        var table = WatchTable()
        var backends: [ObjectIdentifier: WeakClient] = [:]
        /// Each client's entries: the links on the way to its file, then the file.
        var entries: [Client: [String]] = [:]
        /// The clients of each watched entry.
        var listeners: [String: Set<Client>] = [:]
        /// The entries that are symlinks on the way to a file (a client lists them before its file).
        var links: Set<String> = []
        /// Entries watched by polling, with what the last poll saw.
        var polled: [String: FileStamp?] = [:]
        var pollTimer: (any DispatchSourceTimer)?
        var readSource: (any DispatchSourceRead)?

        /// The live backends of `clients`, each with the file it is told about.
        func backends(of clients: some Sequence<Client>) -> [(any FileWatcherClient, Int)] {
            clients.compactMap { client in backends[client.backend]?.object.map { ($0, client.source) } }
        }

        /// Looks at every polled entry again: the paths of those that changed since the last look.
        mutating func pollAgain() -> [String] {
            var changed: [String] = []
            for (path, last) in polled {
                let now = FileStamp.of(path)
                guard now != last else { continue }
                polled[path] = .some(now)
                changed.append(path)
            }
            return changed
        }

        /// Stops the poll timer when no entry is polled any more.
        mutating func stopPollingIfIdle() {
            guard polled.isEmpty else { return }
            pollTimer?.cancel()
            pollTimer = nil
        }

        /// The clients of the entries at `paths`.
        func clients(of paths: some Sequence<String>) -> Set<Client> {
            var result: Set<Client> = []
            for path in paths { result.formUnion(listeners[path] ?? []) }
            return result
        }
    }
}

extension FileWatcher {
    /// Whether the entry at `path` is there and is no regular file (a link, a directory, a FIFO,
    /// a socket, a device): its creation is the only event it makes, where a regular file's is
    /// followed by its `IN_CLOSE_WRITE`.
    static func isOtherThanARegularFile(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) != S_IFREG
    }

    /// Whether `path` leads to a directory.
    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}
