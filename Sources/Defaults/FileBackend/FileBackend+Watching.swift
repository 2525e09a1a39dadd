import Dispatch
import Foundation

extension FileBackend {
    // MARK: - Following the path

    /// Takes in where the file is now (``FileStorage/resolveAgain()`` found it moved): whether it
    /// may be written; the watch follows on the watch queue.
    func settle(_ location: FileStorage.Location) {
        files.withLock { $0.updates }?.refusesWrites(because: location.readOnlyReason)
        fileMayHaveChanged(source: 0)
    }

    /// Resolves the path of the file again, and watches where it leads now; run on the watch
    /// queue before the file is read.
    ///
    /// Looks until two resolutions agree, so links changed while the watch moved are not missed.
    private func followLinks() {
        for _ in 0..<8 {
            storage.resolveAgain()
            let entries = storage.current.resolved.watchedEntries
            let changed = watchedEntries.withLock { watched in
                guard watched != entries else { return false }
                watched = entries
                return true
            }
            guard changed else { return }
            FileWatcher.shared.rewatch(self, source: 0, entries: entries)
        }
    }

    // MARK: - Reading the files again

    /// How long a broken file waits to be moved aside while another process holds the lock,
    /// before it is looked at again.
    static let lockedRetryInterval: Duration = .milliseconds(500)

    /// Called by the watcher when the file may have changed (`source` is 0, its only one): it is
    /// read on the watch queue.
    func fileMayHaveChanged(source: Int = 0) {
        // Weakly, here and in the retries: a store whose last suite is gone is released at
        // once, so a suite opened on the file next reads it afresh.
        watchQueue.async { [weak self] in self?.run(.fileEvent) }
    }

    /// Feeds `event` to the state machine of the file and runs what it decides.
    private func run(_ event: FileChangeMachine.Event) {
        // The store is held for the whole run: a store that is gone lets the suite's folder go,
        // and nothing must write there after (nor before it reports).
        let (updates, isAttached) = files.withLock { ($0.updates, $0.isAttached) }
        guard isAttached else { return handle(event) }
        _ = updates?.whileReceiving { handle(event) }
    }

    /// ``run(_:)`` while the store, if one is attached, is held.
    private func handle(_ event: FileChangeMachine.Event) {
        var action = reloads.withLock { $0.handle(event) }
        if action == .read {
            followLinks()
            action = storage.lock.withProcessLock { readAndApply() }
        }
        switch action {
        case .retry(let delay, let token):
            watchQueue.asyncAfter(deadline: .now() + delay.dispatchInterval) { [weak self] in
                self?.run(.retryFired(token: token))
            }
        case .moveAside where storage.readOnlyReason != nil:
            // Not this process's to move: read it as empty, and leave its bytes as they are.
            guard case .broken(let reason) = storage.read() else { return fileMayHaveChanged() }
            storage.lock.withProcessLock { take(nil) }
            reportInBackground(.corruptFileLeftInPlace(url: storage.url, reason: reason))
        case .moveAside where storage.isLink:
            // A symlink to a file that holds no settings: left as it is, neither moved nor
            // written over (nor locked beside) until it does; memory keeps the values it had.
            guard case .broken(let reason) = storage.read() else { return fileMayHaveChanged() }
            files.withLock { $0.writesBlocked = true }
            reportInBackground(storage.leftBehindLink(reason: reason))
        case .moveAside:
            do {
                // Not waited for here: a process stopped while it holds the lock would stop this
                // queue, and every later change of the file (a good one put back) with it.
                let moved: Void? = try storage.withExclusiveLockIfFree { () throws(Defaults.StorageError) in
                    guard case .broken(let reason) = storage.read(locked: true) else {
                        // Fixed or replaced while the lock was awaited: look again.
                        fileMayHaveChanged(source: 0)
                        return
                    }
                    replaceBrokenFileLocked(reason: reason)
                }
                if moved == nil {
                    // Another process holds the lock: said once, while the file stays broken;
                    // then looked at again shortly (it may be good by then, or the lock free).
                    if case .broken(let reason) = storage.read(),
                        files.withLock({ files in
                            defer { files.toldLockedWhileBroken = true }
                            return !files.toldLockedWhileBroken
                        })
                    {
                        // Memory keeps its values meanwhile, as for a file that cannot be read.
                        reportInBackground(
                            .unreadableFile(
                                url: storage.url,
                                reason: reason + "; another process holds its lock: it is moved aside once that is free"
                            )
                        )
                    }
                    watchQueue.asyncAfter(deadline: .now() + Self.lockedRetryInterval.dispatchInterval) { [weak self] in
                        self?.fileMayHaveChanged(source: 0)
                    }
                }
            } catch {
                reportInBackground(error)
            }
        case .read, .apply, .applyDeletion, .reportUnreadable, .none:
            break
        }
    }

    /// Reads the file and acts on what was found; the caller holds the process lock.
    ///
    /// Returns what is left to do after the lock is released.
    private func readAndApply() -> FileChangeMachine.Action {
        let (known, writesBlocked) = files.withLock { ($0.known, $0.writesBlocked) }
        let result = storage.read(knowing: known)
        // The read opens the path as given, so a link re-pointed since `followLinks` gives the
        // new target's bytes. Resolved again before they are applied, so whether the file may be
        // written (`settle`) is known first: applied before it, a read-only file's values reached
        // observers while writes were still taken, and a write accepted then was refused at its
        // flush. A move found here also queues a look at the file where it now leads.
        storage.resolveAgain()
        // A file there but unreadable was there too.
        let finding = result.finding(wasThere: known != nil || writesBlocked)
        let action = reloads.withLock { $0.handle(.readFound(finding)) }
        switch (action, result) {
        case (.apply, .parsed(let snapshot)):
            take(snapshot)
            return .none
        case (.applyDeletion, _):
            take(nil)
            return .none
        case (.reportUnreadable, .unreadable(let error)):
            reportInBackground(error)
            return .none
        default:
            return action
        }
    }
}
