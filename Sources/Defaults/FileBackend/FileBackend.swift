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
/// are at each read, and writes where they lead (the links stay links). Beneath it may lie system
/// files (``SystemLayers``), read and watched the same way and never written; what they bring goes
/// to the suite's state directly, which reads them beneath the file.
///
/// Besides the protocol, it tells its store (``attach(_:)``) what the protocol has no words for:
/// the system files, and whether the file may be written.
final class FileBackend: Defaults.Backend, @unchecked Sendable {  // what changes is behind locks
    let storage: FileStorage
    /// The system files beneath the file, first listed first.
    let layerFiles: [FileStorage]

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
        /// The store told of the system files and of whether the file may be written.
        weak var store: Store?
        /// Whether a store was attached: once it is gone, the backend does nothing more.
        var isAttached = false
    }

    let files = Lock(Files())
    /// Reads the files when the watcher says they changed, and retries.
    let watchQueue = DispatchQueue(label: "Defaults.FileBackend.watch")
    /// What to do about each file changing: the file first, then each system file.
    let reloads: Lock<[FileChangeMachine]>
    let watchedEntries: Lock<[[String]]>

    init(storage: FileStorage, layerFiles: [FileStorage]) {
        self.storage = storage
        self.layerFiles = layerFiles
        let sources = [storage] + layerFiles
        reloads = Lock(sources.map { file in FileChangeMachine(retriesAreHeld: { file.retriesAreHeld }) })
        watchedEntries = Lock(sources.map(\.current.resolved.watchedEntries))
    }

    var name: String { "file \(storage.url.path)" }

    /// The store the backend tells about the system files and the file's permissions.
    var store: Store? { files.withLock { $0.store } }

    /// Ties the backend to the store over it, and starts following moves of the file.
    func attach(_ store: Store) {
        files.withLock {
            $0.store = store
            $0.isAttached = true
        }
        storage.whenMoved { [weak self] in self?.settle($0) }
    }

    // MARK: - Loading

    /// What ``load(problems:)`` found: the file's values, and those of the system files.
    struct Loaded {
        var contents: Defaults.BackendContents
        var layers: SystemLayers
    }

    /// Reads the file (the system files' values are given to the store, not here).
    ///
    /// - Throws: The reason when the file exists but cannot be read; it is then never written over.
    func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        var problems: [Defaults.StorageError] = []
        let loaded = load(problems: &problems)
        if files.withLock({ $0.writesBlocked }), let first = problems.first { throw first }
        return loaded.contents
    }

    /// Reads the file and the system files, for a suite being opened.
    ///
    /// A corrupt file is moved aside (unless this process may not write it), and reported in
    /// `problems`, as is an unreadable one, which is then never written over.
    func load(problems: inout [Defaults.StorageError]) -> Loaded {
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
        }
        files.withLock {
            $0.known = snapshot
            $0.writesBlocked = writesBlocked
        }
        let layers = layerFiles.map { Self.loadLayer($0, problems: &problems) }
        return Loaded(
            contents: Defaults.BackendContents(values: snapshot?.members ?? [:]),
            layers: SystemLayers(layers)
        )
    }

    /// Reads a system file for a suite being opened: never moved or written, whatever it holds.
    private static func loadLayer(_ file: FileStorage, problems: inout [Defaults.StorageError]) -> SystemLayers.Layer {
        var problem: Defaults.StorageError?
        defer { if let problem { problems.append(problem) } }
        switch file.readSettled() {
        case .parsed(let snapshot), .unchanged(let snapshot):
            return SystemLayers.Layer(url: file.url, snapshot: snapshot, problem: &problem)
        case .missing:
            return SystemLayers.Layer(url: file.url)
        case .broken(let reason):
            problem = .corruptFileLeftInPlace(url: file.url, reason: reason)
            return SystemLayers.Layer(url: file.url)
        case .unreadable(let error):
            problem = error
            return SystemLayers.Layer(url: file.url)
        }
    }

    // MARK: - Reporting

    func startReporting(to updates: Defaults.BackendUpdates) {
        for problem in startReporting(to: updates, returningPollingReports: ()) { updates.report(problem) }
    }

    /// ``startReporting(to:)``, returning the `pollingForChanges` reports of the files that can
    /// only be polled, for the suite that opened them, instead of reporting them.
    func startReporting(
        to updates: Defaults.BackendUpdates,
        returningPollingReports: Void
    ) -> [Defaults.StorageError] {
        files.withLock { $0.updates = updates }
        let sources = ([storage] + layerFiles).map(\.current.resolved.watchedEntries)
        return FileWatcher.shared.watch(self, sources: sources)
    }

    func stopReporting() {
        FileWatcher.shared.unwatch(store: ObjectIdentifier(self))
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
        let before = old?.members ?? [:]
        let after = new?.members ?? [:]
        var changes: [String: JSONValue?] = [:]
        func compare(_ name: String) {
            guard written.index(forKey: name) == nil else { return }
            let value = after[name]
            if before[name] != value { changes[name] = .some(value) }
        }
        if let new, let old, let names = new.changes.flatMap({ $0.base == old.serial ? $0.names : nil }) {
            for name in names { compare(name) }
            return changes
        }
        for name in after.keys { compare(name) }
        for name in before.keys where after[name] == nil { compare(name) }
        return changes
    }

    // MARK: - Committing

    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) {
        // NB: a file that is read-only now (a link re-pointed into a read-only place) cannot even
        // be locked: the changes are refused, and the suite's memory goes back to the file.
        storage.resolveAgain()
        if let reason = storage.readOnlyReason {
            storage.lock.withProcessLock {
                switch storage.read(knowing: files.withLock { $0.known }) {
                case .parsed(let snapshot), .unchanged(let snapshot): revert(changes, to: snapshot)
                case .missing: revert(changes, to: nil)
                case .broken, .unreadable: revert(changes, to: files.withLock { $0.known })
                }
            }
            throw .readOnlyFile(url: storage.url, reason: reason)
        }
        try storage.withExclusiveLock { () throws(Defaults.StorageError) in try commitLocked(changes) }
    }

    /// Takes in `file` after refusing `changes`: their keys go back to what the file holds too.
    private func revert(_ changes: Defaults.BackendChanges, to file: FileStorage.Snapshot?) {
        let old = files.withLock { files -> FileStorage.Snapshot? in
            defer { files.known = file }
            return files.known
        }
        var reverted = Self.differences(from: old, to: file, excluding: [:])
        let members = file?.members ?? [:]
        for name in changes.values.keys where reverted.index(forKey: name) == nil {
            reverted[name] = .some(members[name])
        }
        report(reverted)
    }

    /// ``commit(_:)`` for a caller that holds the exclusive lock.
    func commitLocked(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) {
        // NB: a file that could not be read when opened is never written over. Look again: its
        // permissions may have been fixed, or it may be gone.
        if files.withLock({ $0.writesBlocked }) {
            switch storage.read(locked: true) {
            case .parsed(let snapshot), .unchanged(let snapshot): take(snapshot)
            case .missing: take(nil)
            case .broken, .unreadable:
                throw .unreadableFile(url: storage.url, reason: "the file could not be read, so it is not overwritten")
            }
        }
        let known = files.withLock { $0.known }
        // The file as it is now, and whether it is the one last seen.
        var base: FileStorage.Snapshot?
        // NB: the file is the one last seen: nothing came from elsewhere, and comparing every value
        // would find nothing.
        var isUnchanged = false
        var movedAside: Defaults.StorageError?
        switch storage.readSettled(knowing: known, locked: true) {
        case .missing:
            base = nil
            isUnchanged = known == nil
        case .parsed(let snapshot):
            base = snapshot
        case .unchanged(let snapshot):
            base = snapshot
            isUnchanged = true
        case .broken(let reason):
            switch storage.moveAside(reason: reason) {
            case .success(let report):
                movedAside = report
                // The file as last seen (the suite's memory, but for what this commit brings)
                // becomes the new file; until a write puts it back, it waits in `restore`.
                files.withLock { files in
                    if files.restore == nil { files.restore = known?.members ?? [:] }
                    files.known = nil
                }
                base = nil
                isUnchanged = true
            case .failure(let error):
                throw error
            }
        case .unreadable(let error):
            throw error
        }
        let restore = files.withLock { $0.restore }
        var document = base?.members ?? [:]
        if let restore { document.merge(restore) { _, restored in restored } }
        if changes.removesEverything {
            // `removeAll()`: every key the file holds goes, whoever wrote it and whether the suite
            // saw it or not; a key a system file locks keeps the user's value.
            let locked = store?.state.withLock { $0.hasLayers ? Set($0.layers!.locks.keys) : [] } ?? []
            document = document.filter { locked.contains($0.key) }
        }
        for (name, value) in changes.values { document[name] = value }
        let written = try storage.replace(with: document)
        // NB: what the file brought from elsewhere: the keys that differ from the file last seen,
        // but for those just written. Compared with the file as read (whose parse may name its
        // changed keys), then the keys the removal dropped.
        var excluded = changes.values
        if let restore { excluded.merge(restore.mapValues { $0 }) { own, _ in own } }
        var brought = isUnchanged ? [:] : Self.differences(from: known, to: base, excluding: excluded)
        if changes.removesEverything, let members = base?.members {
            for name in members.keys where document[name] == nil && changes.values.index(forKey: name) == nil {
                brought[name] = .some(nil)
            }
        }
        files.withLock {
            $0.known = written
            $0.writesBlocked = false
            $0.restore = nil
        }
        report(brought)
        // NB: reported once the outcome is known, so a handler that looks finds the new file.
        if let movedAside { reportInBackground(movedAside.brokeWhileOpen) }
    }

    var supportsConditionalCommit: Bool { true }

    func commit(
        _ changes: Defaults.BackendChanges,
        ifUnchanged expected: [String: JSONValue?]
    ) throws(Defaults.StorageError) -> Defaults.ConditionalCommitResult {
        storage.resolveAgain()
        if let reason = storage.readOnlyReason { throw .readOnlyFile(url: storage.url, reason: reason) }
        return try storage.withExclusiveLock { () throws(Defaults.StorageError) -> Defaults.ConditionalCommitResult in
            let members: [String: JSONValue]
            switch storage.readSettled(knowing: files.withLock { $0.known }, locked: true) {
            case .missing: members = [:]
            case .parsed(let snapshot), .unchanged(let snapshot): members = snapshot.members
            case .broken(let reason): throw .unreadableFile(url: storage.url, reason: reason)
            case .unreadable(let error): throw error
            }
            guard expected.allSatisfy({ members[$0.key] == $0.value }) else {
                var current: [String: JSONValue?] = [:]
                for name in expected.keys { current[name] = .some(members[name]) }
                return .conflict(current: current)
            }
            try commitLocked(changes)
            return .committed
        }
    }

    // MARK: - Cross-process transactions

    /// Runs `body` holding the file's exclusive lock, after bringing the suite up to the file as it
    /// is now; `body` writes with ``writeLocked(_:)``.
    ///
    /// - Parameter catchUp: Commits what the suite has pending, under the lock; returns whether it
    ///   committed (and so read the file). When it did not, the file is read here and its changes
    ///   reported, at once.
    func exclusively<Value>(
        catchUp: () -> Result<Bool, Defaults.StorageError>,
        _ body: () throws -> Value
    ) throws -> Value {
        storage.resolveAgain()
        if let reason = storage.readOnlyReason {
            throw Defaults.StorageError.readOnlyFile(url: storage.url, reason: reason)
        }
        try storage.lockExclusively()
        defer { storage.unlockExclusively() }
        switch catchUp() {
        case .success(true): break
        case .success(false): try catchUpLocked()
        case .failure(let error): throw error
        }
        return try body()
    }

    /// Reads the file and reports what changed since it was last seen.
    ///
    /// The caller holds the exclusive lock. A file broken now is moved aside and the last good one
    /// written back.
    private func catchUpLocked() throws(Defaults.StorageError) {
        switch storage.readSettled(knowing: files.withLock { $0.known }, locked: true) {
        case .missing: take(nil)
        case .unchanged: break
        case .parsed(let snapshot): take(snapshot)
        case .broken(let reason): replaceBrokenFileLocked(reason: reason)
        case .unreadable(let error): throw error
        }
    }

    /// Writes `writes` into the file as it was last seen (the caller holds the exclusive lock, and
    /// has just caught up with it).
    func writeLocked(_ writes: [String: JSONValue?], removesEverything: Bool) throws(Defaults.StorageError) {
        try commitLocked(Defaults.BackendChanges(values: writes, removesEverything: removesEverything))
    }

    /// Moves a file that broke while open aside, and writes the file as last seen back (the suite
    /// keeps its values, not the defaults); the caller holds the exclusive lock.
    func replaceBrokenFileLocked(reason: String) {
        switch storage.moveAside(reason: reason) {
        case .success(let report):
            // NB: kept in `restore` until a write puts it back: this one, or the next commit.
            let restore = files.withLock { files -> [String: JSONValue] in
                if files.restore == nil { files.restore = files.known?.members ?? [:] }
                files.known = nil
                return files.restore!
            }
            do {
                let written = try storage.replace(with: restore)
                files.withLock {
                    $0.known = written
                    $0.restore = nil
                }
            } catch {
                reportInBackground(error)
            }
            // NB: after the write, so a handler that looks finds the new file.
            reportInBackground(report.brokeWhileOpen)
            // NB: the suite's own changes, if any wait, go in at its next flush.
            store?.armTimerIfDirty()
        case .failure(let report):
            reportInBackground(report)
        }
    }
}
