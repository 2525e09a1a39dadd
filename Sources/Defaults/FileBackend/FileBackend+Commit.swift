import Dispatch
import Foundation
import Synchronization

extension FileBackend {
    // MARK: - Committing

    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult {
        // A file that is read-only now (a link re-pointed into a read-only place) cannot even
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
        // A symlink to a file that holds no settings (`/etc/passwd`) is never written over, nor
        // locked beside: looked at unlocked, as the file it leads to is no one's settings.
        if storage.isLink, files.withLock({ $0.writesBlocked }) {
            switch storage.read() {
            case .broken(let reason): throw storage.leftBehindLink(reason: reason)
            case .unreadable(let error): throw error
            case .missing, .parsed, .unchanged: break
            }
        }
        let (found, reportsBefore) = try storage.withExclusiveLock {
            () throws(Defaults.StorageError) -> ([String: JSONValue?], Int?) in
            let found = try commitLocked(changes)
            // Counted under the lock, once the commit has read: every report made so far was made
            // from an earlier read (the watcher reports holding the lock, and the commit's own
            // report of a file it could not read before comes first), every later one from a
            // later read.
            return (found, files.withLock { $0.updates?.reportCount })
        }
        return Defaults.BackendCommitResult(foundChanges: found, reportsBefore: reportsBefore)
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
    ///
    /// - Returns: What the file brought from elsewhere since it was last seen, but for the keys
    ///   just written, for the caller to take in.
    func commitLocked(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> [String: JSONValue?] {
        // A file that could not be read when opened is never written over. Look again: its
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
        // The file is the one last seen: nothing came from elsewhere, and comparing every value
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
        var document = base?.parsedMembers ?? [:]
        // The record of migrations, unparsed, is written back as it was unless this changes it.
        var record = base?.deferredRecord
        if let restore { document.merge(restore) { _, restored in restored } }
        if changes.removesEverything {
            // `removeAll()`: every key the file holds goes, whoever wrote it and whether the suite
            // saw it or not; a key a system file locks keeps the user's value (the store says which).
            document = document.filter { changes.keeping.contains($0.key) }
        }
        for (name, value) in changes.values { document[name] = value }
        let recordName = Defaults.Suite.migrationRecordName
        if document.index(forKey: recordName) != nil || changes.values.index(forKey: recordName) != nil
            || changes.removesEverything && !changes.keeping.contains(recordName)
        {
            record = nil
        }
        let written = try storage.replace(with: document, keepingRecord: record)
        // What the file brought from elsewhere: the keys that differ from the file last seen,
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
        // The commit read the file well and wrote it: an unreadable one the watch reported is
        // gone, though its events may have come too late to show it. Back again, it is news.
        reloads.withLock { $0.fileWasWritten() }
        // Reported once the outcome is known, so a handler that looks finds the new file.
        if let movedAside { reportInBackground(movedAside.brokeWhileOpen) }
        return brought
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
            // A conditional commit has no room for what it found: reported, and held until it returns.
            report(try commitLocked(changes))
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
    ///
    /// - Returns: What the file brought from elsewhere, as ``commitLocked(_:)`` returns it.
    func writeLocked(
        _ writes: [String: JSONValue?],
        removesEverything: Bool
    ) throws(Defaults.StorageError) -> [String: JSONValue?] {
        try commitLocked(Defaults.BackendChanges(values: writes, removesEverything: removesEverything))
    }

    /// Moves a file that broke while open aside, and writes the file as last seen back (the suite
    /// keeps its values, not the defaults); the caller holds the exclusive lock.
    func replaceBrokenFileLocked(reason: String) {
        switch storage.moveAside(reason: reason) {
        case .success(let report):
            // Kept in `restore` until a write puts it back: this one, or the next commit.
            let restore = files.withLock { files -> [String: JSONValue] in
                if files.restore == nil { files.restore = files.known?.members ?? [:] }
                files.known = nil
                files.toldLockedWhileBroken = false
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
            // After the write, so a handler that looks finds the new file.
            reportInBackground(report.brokeWhileOpen)
            // The suite's own changes, if any wait, go in at its next flush.
            files.withLock { $0.updates }?.commitWaitingChanges()
        case .failure(let report):
            reportInBackground(report)
        }
    }
}
