import Defaults
import Dispatch
import Foundation

/// The watch: etcd's changes under the prefix, reported one revision at a time.
extension EtcdBackend {
    /// Watches the prefix from the revision after the load, and reports every revision not this
    /// backend's own.
    public func startReporting(to updates: Defaults.BackendUpdates) {
        let (start, unreported) = state.withLock { state -> (Int64, [Defaults.StorageError]) in
            state.updates = updates
            defer { state.unreported = [] }
            return (state.revision + 1, state.unreported)
        }
        for problem in unreported { updates.report(problem) }
        let task = Task.detached { [weak self] in
            guard let self else { return }
            await self.watchLoop(from: start)
        }
        state.withLock { $0.watch = task }
    }

    /// Stops the watch.
    public func stopReporting() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.updates = nil
            defer { state.watch = nil }
            return state.watch
        }
        task?.cancel()
    }

    private func watchLoop(from start: Int64) async {
        // NB: -1 means no revision to resume from (the load failed, or the revision was compacted
        // away): the prefix is read whole first, and the difference reported as one change.
        let progress = WatchProgress(next: state.withLock { $0.loaded } ? start : -1)
        var index = client.preferredIndex
        var failures = 0
        while !Task.isCancelled {
            await waitWhileHeld()
            if progress.next == -1 {
                guard let revision = await reload() else {
                    failures += 1
                    await pause(after: failures)
                    continue
                }
                progress.next = revision + 1
            }
            let request = Etcd.WatchCreateRequest(
                create_request: .init(
                    key: Etcd.encode(prefix),
                    range_end: Etcd.encode(Etcd.rangeEnd(of: prefix)),
                    start_revision: String(progress.next)
                )
            )
            let from = index
            let attempt = Task {
                try await client.watch(request, from: from) { message in
                    progress.connected = true
                    guard let result = message.result else { return true }
                    if let compacted = result.compact_revision.flatMap(Int64.init), compacted > 0 {
                        progress.next = -1
                        return false
                    }
                    // NB: a watch etcd ended for another reason: connect again from where it was.
                    if result.canceled == true { return false }
                    if let last = result.events?.last?.kv.mod_revision.flatMap(Int64.init) {
                        progress.next = max(progress.next, last + 1)
                    }
                    // NB: one message may carry several revisions: each is a report of its own.
                    for (revision, events) in Self.byRevision(result.events ?? []) {
                        watchQueue.async { [weak self] in self?.take(events, at: revision) }
                    }
                    return true
                }
            }
            state.withLock { $0.attempt = attempt }
            let outcome = await withTaskCancellationHandler {
                await attempt.result
            } onCancel: {
                attempt.cancel()
            }
            state.withLock { $0.attempt = nil }
            if Task.isCancelled { return }
            if progress.connected { failures = 0 }
            progress.connected = false
            if case .failure(let error) = outcome, !state.withLock({ $0.watchHeld }) {
                failures += 1
                if failures == 1 {
                    report(.backendFailed(backend: name, reason: "the watch of etcd stopped (\(error)); reconnecting"))
                }
            }
            if progress.next != -1 { index = (index + 1) % client.endpoints.count }
            await pause(after: failures)
        }
    }

    /// After a failure, a growing pause, so an unreachable cluster is not asked in a busy loop.
    private func pause(after failures: Int) async {
        guard failures > 0 else { return }
        try? await Task.sleep(for: .milliseconds(min(50 << min(failures, 6), 3_000)))
    }

    /// Reads the prefix whole and hands it over (``Defaults/BackendUpdates/replaced(by:)``);
    /// returns the revision of the read, or `nil` if etcd could not be read.
    private func reload() async -> Int64? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int64?, Never>) in
            watchQueue.async { [self] in
                commitGate.lock()
                defer { commitGate.unlock() }
                do throws(Defaults.StorageError) {
                    let (values, revision) = try readAll()
                    let updates = state.withLock { state -> Defaults.BackendUpdates? in
                        state.ownRevisions = state.ownRevisions.filter { $0 > revision }
                        return state.updates
                    }
                    updates?.replaced(by: Defaults.BackendContents(values: values, revision: UInt64(revision)))
                    continuation.resume(returning: revision)
                } catch {
                    continuation.resume(returning: nil)
                }
            }
        }
    }

    // MARK: - Holding the watch, for tests

    /// Drops the watch's connection and keeps it from connecting again until
    /// ``releaseWatchForTesting()``: for tests of what a watch that was away catches up with.
    func holdWatchForTesting() {
        let attempt = state.withLock { state -> Task<Void, any Error>? in
            state.watchHeld = true
            return state.attempt
        }
        attempt?.cancel()
    }

    /// Lets the watch connect again.
    func releaseWatchForTesting() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.watchHeld = false
            defer { state.heldWaiters = [] }
            return state.heldWaiters
        }
        for waiter in waiting { waiter.resume() }
    }

    private func waitWhileHeld() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let held = state.withLock { state -> Bool in
                if state.watchHeld { state.heldWaiters.append(continuation) }
                return state.watchHeld
            }
            if !held { continuation.resume() }
        }
    }

    /// `events` in runs of one revision each, in order.
    private static func byRevision(_ events: [Etcd.Event]) -> [(Int64, [Etcd.Event])] {
        var runs: [(Int64, [Etcd.Event])] = []
        for event in events {
            let revision = event.kv.mod_revision.flatMap(Int64.init) ?? 0
            if let last = runs.last, last.0 == revision {
                runs[runs.count - 1].1.append(event)
            } else {
                runs.append((revision, [event]))
            }
        }
        return runs
    }

    /// Takes in the events of one revision: reported, unless the revision is this backend's own.
    private func take(_ events: [Etcd.Event], at revision: Int64) {
        // NB: waits for a commit under way, so its revision is recorded before this one is judged.
        commitGate.lock()
        defer { commitGate.unlock() }
        var problems: [Defaults.StorageError] = []
        let (values, updates) = state.withLock { state -> ([String: Defaults.JSONValue?], Defaults.BackendUpdates?) in
            guard revision > 0 else { return ([:], nil) }
            if state.ownRevisions.remove(revision) != nil {
                state.ownRevisions = state.ownRevisions.filter { $0 > revision }
                return ([:], nil)
            }
            let eventRevision = revision
            var values: [String: Defaults.JSONValue?] = [:]
            for event in events {
                guard let name = settingName(event.kv.key) else { continue }
                let modRevision = event.kv.mod_revision.flatMap(Int64.init) ?? eventRevision
                // NB: older than what this backend committed of the key since (its commit returned
                // before this event was looked at): the suite holds newer, and must keep it.
                if let known = state.known[name], known.modRevision > modRevision { continue }
                if event.type == "DELETE" {
                    values[name] = .some(nil)
                    // NB: a tombstone, so an older event of the key is still known to be older.
                    state.known[name] = (nil, modRevision)
                    continue
                }
                switch parse(event.kv.value, of: name) {
                case .success(let value):
                    values[name] = .some(value)
                    state.known[name] = (value, modRevision)
                case .failure(let problem):
                    values[name] = .some(nil)
                    state.known[name] = (nil, modRevision)
                    problems.append(problem)
                }
            }
            state.revision = max(state.revision, eventRevision)
            return (values, state.updates)
        }
        for problem in problems { updates?.report(problem) }
        if !values.isEmpty {
            updates?.changed(values, revision: UInt64(revision))
            saveCache()
        }
    }

    func report(_ problem: Defaults.StorageError) {
        state.withLock { $0.updates }?.report(problem)
    }
}

/// Where a watch is, shared between the loop and the closure that reads its messages (which run one
/// after the other, never at once).
private final class WatchProgress: @unchecked Sendable {  // touched by one task at a time
    var next: Int64
    var connected = false

    init(next: Int64) {
        self.next = next
    }
}
