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
/// inotify on the directories of the files the open file backends read, one watch per
/// directory, read on a serial dispatch queue of its own. A backend's file is watched as
/// *entries*: the file itself, and every symlink its path goes through (see ``ResolvedPath``), so a
/// link re-pointed by rename (a ConfigMap update, a dotfile manager) is seen as well as a file
/// replaced. The watcher only tells a backend that one of its files may have changed; the backend
/// resolves its path again, reads the file and decides (``FileChangeMachine``). What each event means:
///
/// | inotify event, naming an entry | meaning |
/// |---|---|
/// | `IN_MOVED_TO` | replaced by rename (how this library, GLib, most editors and kubelet save) |
/// | `IN_CLOSE_WRITE` | rewritten in place, or created, and closed: acted on once, not per write |
/// | `IN_DELETE`, `IN_MOVED_FROM` | deleted or renamed away (maybe an editor's first step) |
/// | `IN_CREATE`, naming an entry that is no regular file | a link made again (`ln -sfn` removes and re-creates), or a directory, FIFO or socket made in a file's place |
/// | `IN_ATTRIB` | permissions changed: a file that could not be read may be readable now |
///
/// | inotify event on a watched directory | meaning |
/// |---|---|
/// | `IN_ATTRIB`, naming nothing | the directory's permissions changed: its files may be writable now, or not |
/// | `IN_DELETE_SELF`, `IN_MOVE_SELF`, `IN_IGNORED` | the directory is gone: watch its nearest existing ancestor |
/// | `IN_CREATE`/`IN_MOVED_TO` of a directory | a missing directory may be back: move the watch down |
/// | `IN_Q_OVERFLOW` | events were lost: every backend reads its files |
///
/// Where inotify is unavailable (no instance left, or the watch limit is reached) the entries are
/// polled instead: their size, times and inode (of the link itself, for a link), every
/// ``pollInterval``, and their suites are told once, through their error handlers, that live
/// updates are slower. Setting `DEFAULTS_WATCHER=poll` in the environment forces polling, for
/// diagnosis and tests.
final class FileWatcher: Sendable {
    /// The watcher of this process.
    static let shared = FileWatcher(forcePolling: ProcessInfo.processInfo.environment["DEFAULTS_WATCHER"] == "poll")

    /// How often a polled entry is looked at.
    static let pollInterval = DispatchTimeInterval.seconds(1)

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

    // MARK: - Backends

    /// Starts telling `backend` when one of its files may have changed.
    ///
    /// Returns once the files are watched; each file is told once right away, so a change made
    /// between the backend's load and this call is not missed.
    ///
    /// - Parameter sources: For each of the backend's files, in the backend's order, the entries to
    ///   watch: ``ResolvedPath/watchedEntries``.
    /// - Returns: The `pollingForChanges` reports of the backend's files that can only be polled, for
    ///   the caller to give the suite that opened them.
    func watch(_ backend: any FileWatcherClient, sources: [[String]]) -> [Defaults.StorageError] {
        let identifier = ObjectIdentifier(backend)
        return queue.sync {
            var polling: [Client: Defaults.StorageError] = [:]
            let notify = state.withLock { register(backend, sources: sources, &$0, polling: &polling) }
            for (backend, source) in notify { backend.fileMayHaveChanged(source: source) }
            report(polling, except: identifier)
            return polling.filter { $0.key.backend == identifier }.sorted { $0.key.source < $1.key.source }.map(\.value)
        }
    }

    /// Registers `backend` with the entries of each of its files, under the lock; returns who must
    /// look at their files now: every file of `backend`, and those of others whose watches moved.
    private func register(
        _ backend: any FileWatcherClient,
        sources: [[String]],
        _ state: inout State,
        polling: inout [Client: Defaults.StorageError]
    ) -> [(any FileWatcherClient, Int)] {
        let identifier = ObjectIdentifier(backend)
        state.backends[identifier] = WeakClient(backend)
        for (source, entries) in sources.enumerated() {
            add(Client(backend: identifier, source: source), entries: entries, &state)
        }
        let own = sources.indices.map { (backend, $0) }
        if descriptor < 0 {
            startPolling(&state)
            // One report for the backend, naming the file it writes.
            if let file = sources.first?.last {
                polling[Client(backend: identifier, source: 0)] = .pollingForChanges(
                    url: URL(fileURLWithPath: file),
                    reason: pollingReason ?? "inotify is unavailable"
                )
            }
            return own
        }
        let moved = reconcile(&state, polling: &polling)
        // The new backend always looks once, even when its directories were watched already: an
        // event between its load and this registration found no backend to tell.
        return state.backends(of: moved.filter { $0.backend != identifier }) + own
    }

    /// Watches `entries` for the file `source` of `backend` instead of what it watched before: its
    /// path was resolved again, and leads through other links, or elsewhere.
    ///
    /// Returns once the new entries are watched. The caller reads the file afterwards: a change
    /// made before this returns is seen by that read.
    func rewatch(_ backend: any FileWatcherClient, source: Int, entries: [String]) {
        let client = Client(backend: ObjectIdentifier(backend), source: source)
        queue.sync {
            var polling: [Client: Defaults.StorageError] = [:]
            let notify = state.withLock { state -> [(any FileWatcherClient, Int)] in
                guard state.entries[client] != entries else { return [] }
                remove(client, &state)
                add(client, entries: entries, &state)
                guard descriptor >= 0 else { return [] }
                return state.backends(of: reconcile(&state, polling: &polling).subtracting([client]))
            }
            for (backend, source) in notify { backend.fileMayHaveChanged(source: source) }
            report(polling)
        }
    }

    /// Stops watching every file of the backend `identifier`.
    func unwatch(backend identifier: ObjectIdentifier) {
        // Async: a backend can be released on this very queue, by the last strong reference a
        // notification held.
        queue.async { [self] in
            var polling: [Client: Defaults.StorageError] = [:]
            let moved = state.withLock { removeBackend(identifier, &$0, polling: &polling) }
            // After the lock: looking and reporting take it again.
            for (backend, source) in moved { backend.fileMayHaveChanged(source: source) }
            report(polling)
        }
    }

    /// Forgets the backend `identifier` and every file of it; returns the other backends whose
    /// watches moved meanwhile, and the file each must look at.
    private func removeBackend(
        _ identifier: ObjectIdentifier,
        _ state: inout State,
        polling: inout [Client: Defaults.StorageError]
    ) -> [(any FileWatcherClient, Int)] {
        guard state.backends.removeValue(forKey: identifier) != nil else { return [] }
        for client in state.entries.keys where client.backend == identifier { remove(client, &state) }
        // This pass may move other files' watches too (a directory of theirs came back since the
        // last event was read): their backends must look, as after any move, or a file saved into
        // that directory before its watch existed is never read.
        defer { state.stopPollingIfIdle() }
        return descriptor >= 0 ? state.backends(of: reconcile(&state, polling: &polling)) : []
    }

    /// Adds `client`'s entries to the watched ones.
    private func add(_ client: Client, entries: [String], _ state: inout State) {
        state.entries[client] = entries
        for entry in entries {
            let isNew = state.listeners[entry] == nil
            state.listeners[entry, default: []].insert(client)
            guard isNew else { continue }
            if descriptor < 0 {
                state.polled[entry] = .some(FileStamp.of(entry))
            } else {
                state.table.addFile(entry)
            }
        }
        state.links.formUnion(entries.dropLast())
    }

    /// Removes `client`'s entries; an entry another client still watches stays.
    private func remove(_ client: Client, _ state: inout State) {
        guard let entries = state.entries.removeValue(forKey: client) else { return }
        for entry in entries {
            state.listeners[entry]?.remove(client)
            guard state.listeners[entry]?.isEmpty == true else { continue }
            state.listeners[entry] = nil
            state.table.removeFile(entry)
            state.polled[entry] = nil
        }
        state.links = Set(state.entries.values.flatMap { $0.dropLast() })
    }

    // MARK: - inotify

    private func readEvents() {
        // Uninitialized: zeroing 64 KiB on every wake-up cost more than reading the events.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        var touched: Set<String> = []
        var reconcileNeeded = false
        var overflowed = false
        while true {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            let raw = UnsafeRawBufferPointer(buffer)
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
        var polling: [Client: Defaults.StorageError] = [:]
        let notify = state.withLock { state -> [(any FileWatcherClient, Int)] in
            // An overflow lost events: every watched file may have changed.
            let paths = overflowed ? touched.union(state.table.allFilePaths) : touched
            var clients = state.clients(of: paths)
            if reconcileNeeded || overflowed { clients.formUnion(reconcile(&state, polling: &polling)) }
            return state.backends(of: clients)
        }
        for (backend, source) in notify { backend.fileMayHaveChanged(source: source) }
        report(polling)
    }

    /// Sorts one event into "these entries may have changed" or "the watched directories changed".
    private func classify(wd: Int32, mask: UInt32, name: String, touched: inout Set<String>, reconcile: inout Bool) {
        let gone = UInt32(IN_IGNORED) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)
        if mask & gone != 0 {
            state.withLock { state in
                // A moved directory's watch follows it elsewhere; drop it ourselves.
                if mask & UInt32(IN_MOVE_SELF) != 0, state.table.directories[wd] != nil {
                    inotify_rm_watch(descriptor, wd)
                }
                state.table.forget(descriptor: wd)
            }
            reconcile = true
            return
        }
        if name.isEmpty {
            // The watched directory's own permissions changed: whether its files may be written did.
            guard mask & UInt32(IN_ATTRIB) != 0 else { return }
            let paths = state.withLock { state in
                state.table.directories[wd].map { state.table.filePaths(in: $0) } ?? []
            }
            touched.formUnion(paths)
            return
        }
        let fileEvents =
            UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_DELETE) | UInt32(IN_MOVED_FROM)
            | UInt32(IN_ATTRIB)
        let (path, isLink) = state.withLock { state -> (String?, Bool) in
            guard let directory = state.table.directories[wd] else { return (nil, false) }
            let path = WatchTable.join(directory, name)
            guard state.table.contains(file: path) else { return (nil, false) }
            return (path, state.links.contains(path))
        }
        if mask & UInt32(IN_ISDIR) != 0 {
            // A directory came or went below a watched one: a missing directory may be back.
            reconcile = true
            if path == nil { return }
        }
        // A link is re-made by `ln -sfn` as a removal and a creation; a file's creation is
        // followed by its IN_CLOSE_WRITE, which is acted on instead. A link made where a file
        // was missing (kubelet adds a key to a volume so) has no other event, nor has a
        // directory, a FIFO or a socket made there, which the reader must see to report.
        let meaningful = fileEvents | (isLink ? UInt32(IN_CREATE) : 0)
        guard let path else { return }
        if mask & meaningful != 0 || mask & UInt32(IN_CREATE) != 0 && Self.isOtherThanARegularFile(path) {
            touched.insert(path)
        }
    }

    /// Brings the watches in line with what exists now; returns the clients whose directory is
    /// now watched differently, and whose file therefore may have changed unseen.
    ///
    /// Entries that fall back to polling have their clients added to `polling`, with the report
    /// for their suites.
    private func reconcile(_ state: inout State, polling: inout [Client: Defaults.StorageError]) -> Set<Client> {
        var moved: Set<String> = []
        // Until nothing more is added: a directory created while its parent's watch was being
        // added produced no event, but exists by the next pass.
        for _ in 0..<64 {
            let targets = state.table.targets(isDirectory: Self.isDirectory)
            let needed = Set(targets.values)
            for (directory, wd) in state.table.descriptors where !needed.contains(directory) {
                inotify_rm_watch(descriptor, wd)
                state.table.forget(descriptor: wd)
            }
            var added = false
            var vanished = false
            for target in needed where state.table.descriptors[target] == nil {
                let wd = inotify_add_watch(descriptor, target, Self.mask)
                if wd >= 0 {
                    state.table.recordWatch(of: target, descriptor: wd)
                    added = true
                    continue
                }
                let failure = SystemError.current("inotify_add_watch \(target)")
                // Removed since `targets` looked: the next pass picks an ancestor that exists.
                if failure.code == ENOENT || failure.code == ENOTDIR {
                    vanished = true
                    continue
                }
                let directories = targets.filter { $0.value == target }.map(\.key)
                pollInstead(of: directories, because: failure, &state, polling: &polling)
            }
            moved.formUnion(state.table.adopt(targets))
            // Another pass when a watch went to an ancestor (a directory below it may have been
            // made meanwhile) or a target vanished; directories watched themselves miss nothing.
            if vanished { continue }
            if !added || targets.allSatisfy({ $0.key == $0.value }) { break }
        }
        return state.clients(of: moved.flatMap { state.table.filePaths(in: $0) })
    }

    /// Falls back to polling for the entries in `directories`, adding the report for each client
    /// to `polling`.
    private func pollInstead(
        of directories: [String],
        because failure: SystemError,
        _ state: inout State,
        polling: inout [Client: Defaults.StorageError]
    ) {
        let reason =
            failure.code == ENOSPC
            ? "the inotify watch limit is reached (fs.inotify.max_user_watches)" : failure.description
        for directory in directories {
            for path in state.table.filePaths(in: directory) {
                if state.polled[path] == nil {
                    state.polled[path] = .some(FileStamp.of(path))
                    for client in state.listeners[path] ?? [] where polling[client] == nil {
                        let file = state.entries[client]?.last ?? path
                        polling[client] = .pollingForChanges(url: URL(fileURLWithPath: file), reason: reason)
                    }
                }
                state.table.removeFile(path)
            }
        }
        startPolling(&state)
    }

    /// Tells the suites of each polled file that it is polled, except those of the backend
    /// `excluded` (being opened, and told by its opener).
    private func report(_ polling: [Client: Defaults.StorageError], except excluded: ObjectIdentifier? = nil) {
        guard !polling.isEmpty else { return }
        let backends = state.withLock { state in
            polling.compactMap { client, report in
                client.backend == excluded ? nil : state.backends[client.backend]?.object.map { ($0, report) }
            }
        }
        for (backend, report) in backends { backend.reportInBackground(report) }
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
        let notify = state.withLock { $0.backends(of: $0.clients(of: $0.pollAgain())) }
        for (backend, source) in notify { backend.fileMayHaveChanged(source: source) }
    }
}
