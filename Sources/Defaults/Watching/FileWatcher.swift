import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process's one watcher of settings files.
///
/// inotify on the directories of the open file-backed stores, one watch per directory, read on a
/// serial dispatch queue of its own. It only tells a store that its file may have changed; the
/// store reads the file and decides (``FileChangeMachine``). What each event means:
///
/// | inotify event, naming the file | meaning |
/// |---|---|
/// | `IN_MOVED_TO` | replaced by rename (how this library, GLib and most editors save) |
/// | `IN_CLOSE_WRITE` | rewritten in place, or created, and closed: acted on once, not per write |
/// | `IN_DELETE`, `IN_MOVED_FROM` | deleted or renamed away (maybe an editor's first step) |
/// | `IN_ATTRIB` | permissions changed: a file that could not be read may be readable now |
///
/// | inotify event on a watched directory | meaning |
/// |---|---|
/// | `IN_DELETE_SELF`, `IN_MOVE_SELF`, `IN_IGNORED` | the directory is gone: watch its nearest existing ancestor |
/// | `IN_CREATE`/`IN_MOVED_TO` of a directory | a missing directory may be back: move the watch down |
/// | `IN_Q_OVERFLOW` | events were lost: every store reads its file |
///
/// Where inotify is unavailable (no instance left, or the watch limit is reached) a file is polled
/// instead: its size, times and inode, every ``pollInterval``, and its suites are told once, through
/// their error handlers, that live updates are slower. Setting `DEFAULTS_WATCHER=poll` in the
/// environment forces polling, for diagnosis and tests.
final class FileWatcher: Sendable {
    /// The watcher of this process.
    static let shared = FileWatcher(forcePolling: ProcessInfo.processInfo.environment["DEFAULTS_WATCHER"] == "poll")

    /// How often a polled file is looked at.
    static let pollInterval = DispatchTimeInterval.seconds(1)

    /// What a watched file's directory entry said when last polled.
    private struct FileStamp: Equatable {
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

        /// The stamp of the file at `path`; `nil` when there is none.
        static func of(_ path: String) -> FileStamp? {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            return FileStamp(
                device: UInt64(info.st_dev),
                inode: UInt64(info.st_ino),
                size: Int64(info.st_size),
                modified: info.st_mtim,
                changed: info.st_ctim
            )
        }
    }

    private final class WeakStore: @unchecked Sendable {  // only the weak reference, read under the state lock
        let identifier: ObjectIdentifier
        weak var store: Store?
        init(_ store: Store) {
            self.identifier = ObjectIdentifier(store)
            self.store = store
        }
    }

    private struct State: @unchecked Sendable {  // dispatch sources are thread-safe; everything else is plain data
        var table = WatchTable()
        var stores: [String: WeakStore] = [:]
        /// Files watched by polling, with what the last poll saw.
        var polled: [String: FileStamp?] = [:]
        var pollTimer: (any DispatchSourceTimer)?
        var readSource: (any DispatchSourceRead)?
    }

    /// The inotify instance; -1 when every file is polled.
    private let descriptor: Int32
    /// Why inotify is not used, when it is not.
    private let pollingReason: String?
    private let queue = DispatchQueue(label: "Defaults.FileWatcher")
    private let state = Lock(State())

    private static let mask: UInt32 =
        UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM) | UInt32(IN_CREATE) | UInt32(IN_ATTRIB)
        | UInt32(IN_DELETE) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_ONLYDIR)

    private init(forcePolling: Bool) {
        if forcePolling {
            descriptor = -1
            pollingReason = "DEFAULTS_WATCHER=poll is set"
            return
        }
        let opened = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if opened < 0 {
            descriptor = -1
            pollingReason = "inotify is unavailable: \(SystemError.current("inotify_init1").description)"
            return
        }
        descriptor = opened
        pollingReason = nil
        let source = DispatchSource.makeReadSource(fileDescriptor: opened, queue: queue)
        source.setEventHandler { [unowned self] in self.readEvents() }
        state.withLock { $0.readSource = source }
        source.resume()
    }

    // MARK: - Stores

    /// Starts telling `store` when the file at `path` (a canonical path) may have changed.
    ///
    /// Returns once the file is watched; the store is told once right away, so a change made
    /// between its load and this call is not missed.
    ///
    /// - Returns: The `pollingForChanges` report when the file can only be polled, for the caller
    ///   to give the suite that opened it.
    func watch(_ store: Store, path: String) -> Defaults.StorageError? {
        queue.sync {
            let (notify, polling) = state.withLock { state -> ([Store], [String: Defaults.StorageError]) in
                state.stores[path] = WeakStore(store)
                state.table.addFile(path)
                if descriptor < 0 {
                    state.polled[path] = FileStamp.of(path)
                    startPolling(&state)
                    let report = Defaults.StorageError.pollingForChanges(
                        url: URL(fileURLWithPath: path),
                        reason: pollingReason ?? "inotify is unavailable"
                    )
                    return ([store], [path: report])
                }
                var polling: [String: Defaults.StorageError] = [:]
                let moved = reconcile(&state, polling: &polling)
                // NB: the new store always looks once, even when its directory was watched
                // already: an event between its load and this registration found no store to tell.
                return (moved.filter { $0 !== store } + [store], polling)
            }
            for store in notify { store.fileMayHaveChanged() }
            report(polling, except: path)
            return polling[path]
        }
    }

    /// Stops watching the file at `path` for the store `identifier`.
    ///
    /// A newer store of the same file, opened after this one was released, keeps its watch.
    func unwatch(path: String, store identifier: ObjectIdentifier) {
        // NB: async: a store can be released on this very queue, by the last strong reference a
        // notification held.
        queue.async { [self] in
            var polling: [String: Defaults.StorageError] = [:]
            let moved = state.withLock { state -> [Store] in
                guard state.stores[path]?.identifier == identifier else { return [] }
                state.stores[path] = nil
                state.polled[path] = nil
                state.table.removeFile(path)
                // NB: this pass may move other files' watches too (a directory of theirs came back
                // since the last event was read): their stores must look, as after any move, or a
                // file saved into that directory before its watch existed is never read.
                let moved = descriptor >= 0 ? reconcile(&state, polling: &polling) : []
                if state.polled.isEmpty {
                    state.pollTimer?.cancel()
                    state.pollTimer = nil
                }
                return moved
            }
            // NB: after the lock: looking and reporting take it again.
            for store in moved { store.fileMayHaveChanged() }
            report(polling)
        }
    }

    // MARK: - inotify

    private func readEvents() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var touched: Set<String> = []
        var reconcileNeeded = false
        var overflowed = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            buffer.withUnsafeBytes { raw in
                var offset = 0
                let header = MemoryLayout<inotify_event>.size
                while offset + header <= count {
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let nameBytes = raw[(offset + header)..<(offset + header + Int(event.len))]
                    let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                    offset += header + Int(event.len)
                    if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                        overflowed = true
                        continue
                    }
                    classify(wd: event.wd, mask: event.mask, name: name, touched: &touched, reconcile: &reconcileNeeded)
                }
            }
        }
        var polling: [String: Defaults.StorageError] = [:]
        let notify = state.withLock { state -> [Store] in
            var paths = touched
            if overflowed {
                paths.formUnion(state.table.allFilePaths)
                reconcileNeeded = true
            }
            var stores = paths.compactMap { state.stores[$0]?.store }
            if reconcileNeeded { stores += reconcile(&state, polling: &polling) }
            return stores
        }
        for store in notify { store.fileMayHaveChanged() }
        report(polling)
    }

    /// Sorts one event into "this file may have changed" or "the watched directories changed".
    private func classify(wd: Int32, mask: UInt32, name: String, touched: inout Set<String>, reconcile: inout Bool) {
        let gone = UInt32(IN_IGNORED) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)
        if mask & gone != 0 {
            state.withLock { state in
                // NB: a moved directory's watch follows it elsewhere; drop it ourselves.
                if mask & UInt32(IN_MOVE_SELF) != 0, state.table.directories[wd] != nil {
                    inotify_rm_watch(descriptor, wd)
                }
                state.table.forget(descriptor: wd)
            }
            reconcile = true
            return
        }
        if mask & UInt32(IN_ISDIR) != 0 {
            // A directory came or went below a watched one: a missing directory may be back.
            reconcile = true
            return
        }
        let fileEvents =
            UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_DELETE) | UInt32(IN_MOVED_FROM)
            | UInt32(IN_ATTRIB)
        guard mask & fileEvents != 0, !name.isEmpty else { return }
        let path: String? = state.withLock { state in
            guard let directory = state.table.directories[wd] else { return nil }
            let path = WatchTable.join(directory, name)
            return state.table.contains(file: path) ? path : nil
        }
        if let path { touched.insert(path) }
    }

    /// Brings the watches in line with what exists now; returns the stores whose directory is
    /// now watched differently, and whose file therefore may have changed unseen.
    ///
    /// Files that fall back to polling are added to `polling`, with the report for their suites.
    private func reconcile(_ state: inout State, polling: inout [String: Defaults.StorageError]) -> [Store] {
        var moved: Set<String> = []
        // NB: until nothing more is added: a directory created while its parent's watch was being
        // added produced no event, but exists by the next pass.
        for _ in 0..<64 {
            let targets = state.table.targets(isDirectory: Self.isDirectory)
            let needed = Set(targets.values)
            for (directory, wd) in state.table.descriptors where !needed.contains(directory) {
                inotify_rm_watch(descriptor, wd)
                state.table.forget(descriptor: wd)
            }
            var added = false
            for target in needed where state.table.descriptors[target] == nil {
                let wd = inotify_add_watch(descriptor, target, Self.mask)
                if wd >= 0 {
                    state.table.recordWatch(of: target, descriptor: wd)
                    added = true
                    continue
                }
                let failure = SystemError.current("inotify_add_watch \(target)")
                // NB: removed since `targets` looked: the next pass picks an ancestor that exists.
                if failure.code == ENOENT || failure.code == ENOTDIR {
                    added = true
                    continue
                }
                let directories = targets.filter { $0.value == target }.map(\.key)
                pollInstead(of: directories, because: failure, &state, polling: &polling)
            }
            moved.formUnion(state.table.adopt(targets))
            if !added { break }
        }
        return moved.flatMap { state.table.filePaths(in: $0) }.compactMap { state.stores[$0]?.store }
    }

    /// Falls back to polling for the files in `directories`, adding the report for each to `polling`.
    private func pollInstead(
        of directories: [String],
        because failure: SystemError,
        _ state: inout State,
        polling: inout [String: Defaults.StorageError]
    ) {
        let reason =
            failure.code == ENOSPC
            ? "the inotify watch limit is reached (fs.inotify.max_user_watches)" : failure.description
        for directory in directories {
            for path in state.table.filePaths(in: directory) {
                if state.polled[path] == nil {
                    state.polled[path] = .some(FileStamp.of(path))
                    polling[path] = .pollingForChanges(url: URL(fileURLWithPath: path), reason: reason)
                }
                state.table.removeFile(path)
            }
        }
        startPolling(&state)
    }

    /// Tells the suites of each polled file that it is polled, except those of `excluded` (whose
    /// suite is being opened, and is told by its opener).
    private func report(_ polling: [String: Defaults.StorageError], except excluded: String? = nil) {
        guard !polling.isEmpty else { return }
        let stores = state.withLock { state in
            polling.compactMap { path, report in
                path == excluded ? nil : state.stores[path]?.store.map { ($0, report) }
            }
        }
        for (store, report) in stores { store.reportInBackground(report) }
    }

    private static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    // MARK: - Polling

    private func startPolling(_ state: inout State) {
        guard state.pollTimer == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + Self.pollInterval, repeating: Self.pollInterval)
        timer.setEventHandler { [unowned self] in self.poll() }
        state.pollTimer = timer
        timer.resume()
    }

    private func poll() {
        let notify = state.withLock { state -> [Store] in
            var changed: [Store] = []
            for (path, last) in state.polled {
                let now = FileStamp.of(path)
                guard now != last else { continue }
                state.polled[path] = .some(now)
                if let store = state.stores[path]?.store { changed.append(store) }
            }
            return changed
        }
        for store in notify { store.fileMayHaveChanged() }
    }
}
