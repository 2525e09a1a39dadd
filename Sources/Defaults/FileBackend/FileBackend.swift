import Dispatch
import Foundation
import Synchronization

/// The JSON settings file as a backend (``Defaults/Backend``): the file a suite opened by path or
/// name keeps its values in, with the system files beneath it.
///
/// It meets the file in three places, all under the file's lock (``FileLock``), so they never
/// interleave in this process:
/// - a **commit** (the suite's flush: the coalescing timer, `synchronize()`, exit) takes the
///   exclusive lock, reads the file, writes into it the keys changed, and reports every other key
///   that changed since it last saw the file (another process wrote it meanwhile);
/// - a **reload** (the watcher saw the file change) reads it with the process lock only, and
///   reports every key whose value differs from the file it saw last;
/// - a **cross-process transaction** holds the exclusive lock from start to commit
///   (``exclusively(_:)``).
///
/// It reads the file through the path it was given, so it follows the links on the way as they
/// are at each read, and writes where they lead (the links stay links). Whether the file may be
/// written it reports through the updates it is handed, as any backend may
/// (``Defaults/BackendUpdates/refusesWrites(because:)``). The system files beneath it are the store's
/// (``SystemFiles``); a `removeAll()` keeps the keys the store names (``Defaults/BackendChanges/keeping``).
final class FileBackend: Defaults.Backend, @unchecked Sendable {  // what changes is behind locks
    let storage: FileStorage

    /// What the backend knows of the file.
    struct Files {
        /// The file as last read or written; `nil` when there was none.
        ///
        /// The suite's memory holds it, but for the keys changed there and not committed yet.
        var known: FileStorage.Snapshot?
        /// Set when the file exists but could not be read: it must not be overwritten.
        var writesBlocked = false
        /// The values of a file that broke while open and was moved aside, until a write puts them back.
        ///
        /// The suite's memory holds them, and the next write puts them in. Reports leave them
        /// alone meanwhile, as they leave a suite's pending changes alone.
        var restore: [String: JSONValue]?
        var updates: Defaults.BackendUpdates?
        /// Whether the file broke while another process held its lock, and that was reported: said
        /// once, until the file is read well or moved aside.
        var toldLockedWhileBroken = false
        /// Whether a store was attached (``attach()``): once it is gone, the backend does nothing more.
        var isAttached = false
    }

    let files = Lock(Files())
    /// Reads the files when the watcher says they changed, and retries.
    let watchQueue = DispatchQueue(label: "Defaults.FileBackend.watch")
    /// What to do about the file changing.
    let reloads: Lock<FileChangeMachine>
    /// What is watched: the links on the way to the file, then the file.
    let watchedEntries: Lock<[String]>

    init(storage: FileStorage) {
        self.storage = storage
        reloads = Lock(FileChangeMachine(retriesAreHeld: { storage.retriesAreHeld }))
        watchedEntries = Lock(storage.current.resolved.watchedEntries)
    }

    var name: String { "file \(storage.url.path)" }

    /// Notes that a store is over the backend, and starts following moves of the file.
    private func attach() {
        files.withLock { $0.isAttached = true }
        storage.whenMoved { [weak self] in self?.settle($0) }
    }

    // MARK: - Loading

    /// Reads the file.
    ///
    /// - Throws: The reason when the file exists but cannot be read; it is then never written over.
    func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        var problems: [Defaults.StorageError] = []
        var contents = load(problems: &problems)
        if files.withLock({ $0.writesBlocked }), let first = problems.first { throw first }
        if let record = contents.deferredRecord.take() {
            contents.values[Defaults.Suite.migrationRecordName] = record.value
        }
        return contents
    }

    /// Reads the file, for a suite being opened.
    ///
    /// A corrupt file is moved aside (unless this process may not write it), and reported in
    /// `problems`, as is an unreadable one, which is then never written over.
    func load(problems: inout [Defaults.StorageError]) -> Defaults.BackendContents {
        var snapshot: FileStorage.Snapshot?
        var writesBlocked = false
        switch storage.load() {
        case .loaded(let loaded):
            snapshot = loaded
        case .movedAside(let error), .brokenReadOnly(let error):
            problems.append(error)
        case .unreadable(let error):
            writesBlocked = true
            problems.append(error)
            // Found so again by an event, it is not reported again until it has read well.
            reloads.withLock { _ = $0.handle(.readFound(.unreadable)) }
        }
        files.withLock {
            $0.known = snapshot
            $0.writesBlocked = writesBlocked
        }
        var contents = Defaults.BackendContents(values: snapshot?.parsedMembers ?? [:])
        contents.deferredRecord = snapshot?.deferredRecord
        return contents
    }

    // MARK: - Reporting

    func startReporting(to updates: Defaults.BackendUpdates) {
        for problem in startReporting(to: updates, returningPollingReports: ()) { updates.report(problem) }
    }

    /// ``startReporting(to:)``, returning the `pollingForChanges` reports of the files that can
    /// only be polled, for the suite that opened them, instead of reporting them.
    ///
    /// - Parameter attaching: Whether a store is over the backend (see ``attach()``): it opened
    ///   the file, and the backend follows moves and stops for good once that store is gone.
    func startReporting(
        to updates: Defaults.BackendUpdates,
        returningPollingReports: Void,
        attaching: Bool = false
    ) -> [Defaults.StorageError] {
        files.withLock { $0.updates = updates }
        // Attached before the watch starts: its first look at each file may find a link
        // re-pointed, and the move must reach the receiver.
        if attaching { attach() }
        return FileWatcher.shared.watch(self, sources: [storage.current.resolved.watchedEntries])
    }

    func stopReporting() {
        FileWatcher.shared.unwatch(backend: ObjectIdentifier(self))
        files.withLock { $0.updates = nil }
    }

    /// Tells the suite that the keys of `changes` hold these values now, from outside.
    func report(_ changes: [String: JSONValue?]) {
        guard !changes.isEmpty else { return }
        files.withLock { $0.updates }?.changed(changes)
    }

    /// Reports `error` to the suites' error handlers, in the background.
    func reportInBackground(_ error: Defaults.StorageError) {
        files.withLock { $0.updates }?.report(error)
    }

    /// Makes `file` the file as last seen, and reports the keys whose values it changed (but for
    /// `excluding`, the keys a commit has just written); the caller holds the process lock.
    ///
    /// - Parameter file: The file as just read or written; `nil` when there is none.
    func take(_ file: FileStorage.Snapshot?) {
        let (old, restore) = files.withLock { files -> (FileStorage.Snapshot?, [String: JSONValue]?) in
            defer {
                files.known = file
                files.writesBlocked = false
                files.toldLockedWhileBroken = false
            }
            return (files.known, files.restore)
        }
        report(Self.differences(from: old, to: file, excluding: restore?.mapValues { $0 } ?? [:]))
    }

    /// The keys whose values differ between `old` and `new`, with their values in `new` (`nil`:
    /// absent), but for those in `excluding`.
    ///
    /// A file parsed as a change of `old` (``FileStorage/parseChange(of:to:)``) names the keys that
    /// changed: only those are compared.
    static func differences(
        from old: FileStorage.Snapshot?,
        to new: FileStorage.Snapshot?,
        excluding written: [String: JSONValue?]
    ) -> [String: JSONValue?] {
        let before = old?.parsedMembers ?? [:]
        let after = new?.parsedMembers ?? [:]
        var changes: [String: JSONValue?] = [:]
        // The record of migrations, when either left it unparsed: compared by its text while
        // both did, and made only when it changed.
        let record = Defaults.Suite.migrationRecordName
        let comparesRecord = old?.deferredRecord != nil || new?.deferredRecord != nil
        if comparesRecord, written.index(forKey: record) == nil, !(old?.hasSameRecord(as: new) ?? (new?.record == nil))
        {
            changes[record] = .some(new?.record)
        }
        // Each name looked up as few times as can be: a commit that finds thousands of keys another
        // process wrote compares them all while every other writer waits for the lock.
        func compare(_ name: String, _ value: JSONValue?) {
            guard written.isEmpty || written.index(forKey: name) == nil, !(comparesRecord && name == record) else {
                return
            }
            if (before.isEmpty ? nil : before[name]) != value { changes[name] = .some(value) }
        }
        if let new, let old, let names = new.changes.flatMap({ $0.base == old.serial ? $0.names : nil }) {
            for name in names { compare(name, after[name]) }
            return changes
        }
        if before.isEmpty { changes.reserveCapacity(after.count) }
        for (name, value) in after { compare(name, value) }
        for name in before.keys where after.index(forKey: name) == nil { compare(name, nil) }
        return changes
    }
}

extension FileBackend: LockingBackend, FileLocatedBackend, FileWatcherClient {
    var fileURL: URL { storage.url }
    var givenPath: String { storage.givenPath }
    var replacementCount: Int { storage.replacementCount }

    func holdingBrokenFileRetries<Result>(_ body: () throws -> Result) rethrows -> Result {
        storage.retriesHeld.add(1, ordering: .releasing)
        defer { storage.retriesHeld.subtract(1, ordering: .releasing) }
        return try body()
    }
}
