import AsyncHTTPClient
import Defaults
import Dispatch
import Foundation

/// The watch: etcd's changes under the prefix, reported one revision at a time.
extension EtcdBackend {
    /// Watches the prefix from the revision after the load, and reports every revision not this
    /// backend's own.
    ///
    /// The watch runs on the event loop of async-http-client and this backend's watch queue, never
    /// on Swift's concurrency pool: a program whose tasks keep that pool busy still hears of changes.
    public func startReporting(to updates: Defaults.BackendUpdates) {
        let unreported = state.withLock { state -> [Defaults.StorageError] in
            state.updates = updates
            state.watch.next = state.loaded ? state.revision + 1 : -1
            state.watch.index = client.preferredIndex
            state.watch.isStopped = false
            // A connection of before the stop that ends only now is not this watch's.
            state.watch.connected = false
            state.watch.lost = false
            defer { state.unreported = [] }
            return state.unreported
        }
        for problem in unreported { updates.report(problem) }
        watchQueue.async { [weak self] in self?.connectWatch() }
    }

    /// Stops the watch.
    public func stopReporting() {
        let connection = state.withLock { state -> HTTPClient.Task<Void>? in
            state.updates = nil
            state.watch.isStopped = true
            defer { state.watch.connection = nil }
            return state.watch.connection
        }
        connection?.cancel()
    }

    /// Connects the watch (on the watch queue), reading the prefix whole first when there is no
    /// revision to resume from.
    private func connectWatch() {
        let (next, index, go) = state.withLock { state in
            (state.watch.next, state.watch.index, !state.watch.isStopped && !state.watch.isHeld)
        }
        guard go else { return }
        var from = next
        if from == -1 {
            guard let revision = reload() else {
                // A refused password nobody reported yet (the load did not meet it) is the
                // watch's to report.
                watchEnded(failed: client.unreportedRefusal())
                return
            }
            from = revision + 1
            state.withLock { $0.watch.next = from }
        }
        let request = Etcd.WatchCreateRequest(
            create_request: .init(
                key: Etcd.encode(prefix),
                range_end: Etcd.encode(Etcd.rangeEnd(of: prefix)),
                start_revision: String(from),
                progress_notify: true
            )
        )
        let start = from
        do {
            let connection = try client.startWatch(request, at: index, heartbeat: heartbeat) { [weak self] message in
                self?.received(message, resumingAt: start) ?? .end
            }
            let stopped = state.withLock { state -> Bool in
                state.watch.connection = connection
                state.watch.connections += 1
                return state.watch.isStopped
            }
            if stopped { connection.cancel() }
            connection.futureResult.whenComplete { [weak self] result in
                self?.watchQueue
                    .async { [weak self] in
                        guard let self else { return }
                        if case .failure(let error) = result {
                            self.watchEnded(failed: self.client.explained(error, at: index))
                        } else {
                            self.watchEnded(failed: nil)
                        }
                    }
            }
        } catch {
            watchEnded(failed: error)
        }
    }

    /// Takes one message of the watch, on the event loop: whether the connection goes on.
    ///
    /// - Parameter from: The revision the connection asked to start at.
    private func received(_ message: Etcd.WatchMessage, resumingAt from: Int64) -> EtcdClient.WatchVerdict {
        guard let result = message.result else { return .more }
        // The answer to a heartbeat: a sign of life, and no point the watch has passed
        // (etcd < 3.4.25 gives the store's revision, events before it maybe still to come).
        // A watch etcd refuses is created and canceled under that id too ("permission
        // denied", a token it no longer takes): that is no heartbeat, and staying would leave the
        // watch open and silent for good (measured on 3.4.23).
        if result.watch_id == "-1", result.created != true, result.canceled != true { return .more }
        var reconnected = false
        let (taken, verdict) = state.withLock { state -> (Bool, EtcdClient.WatchVerdict) in
            // The hold's cancel ends the connection later, on the event loop: a message that
            // comes meanwhile is left for the next connection, which starts from `next`.
            guard !state.watch.isHeld else { return (false, .end) }
            if let compacted = result.compact_revision.flatMap(Int64.init), compacted > 0 {
                state.watch.next = -1
                return (true, .end)
            }
            if result.canceled == true {
                // Etcd refused the watch (a permission, a token, a future revision): a failure,
                // paused before the next try like any other, never a loop of reconnections.
                let reason = result.cancel_reason ?? "no reason given"
                if reason.contains("permission denied") {
                    // The role's doing: a token etcd no longer takes is "Unauthenticated … invalid
                    // auth token" (measured on 3.4.23), and the next connection logs in anew.
                    let who = client.credentials.map { "user \"\($0.user)\"" } ?? "a client without a user"
                    return (false, .refused("etcd refused the watch: \(who) may not read \(prefix) (\(reason))"))
                }
                return (false, .refused("etcd canceled the watch: \(reason)"))
            }
            if result.created == true {
                // Another cluster now answers at the address (restored from a snapshot, or made
                // anew), or this one's history went back: the revision to resume from means nothing
                // there, and etcd would wait silently for its count to reach it. Read it all again.
                let cluster = result.header.cluster_id
                let revision = result.header.revisionNumber
                if (cluster != nil && state.clusterID != nil && cluster != state.clusterID)
                    || (revision > 0 && revision < from - 1)
                {
                    // Only the watch's own state here: the reload, under the commit gate, finds
                    // whether history really went back (a member merely behind the others looks the
                    // same from here) and resets what the commits rely on.
                    state.watch.next = -1
                    return (true, .end)
                }
                if let cluster { state.clusterID = cluster }
                reconnected = state.watch.lost
                state.watch.lost = false
            }
            state.watch.connected = true
            if let last = result.events?.last?.kv.mod_revision.flatMap(Int64.init) {
                state.watch.next = max(state.watch.next, last + 1)
            } else if result.created != true, result.header.revisionNumber > 0 {
                // A progress notification etcd sent of itself (`progress_notify`): sent only to
                // a watch that has caught up, so every change up to its revision was delivered.
                state.watch.next = max(state.watch.next, result.header.revisionNumber + 1)
            }
            return (true, .more)
        }
        guard taken else { return verdict }
        if reconnected {
            // In order with the reports: it goes where they go.
            watchQueue.async { [weak self] in self?.state.withLock { $0.updates }?.reconnected() }
        }
        // One message may carry several revisions: each is a report of its own.
        for (revision, events) in Self.byRevision(result.events ?? []) {
            watchQueue.async { [weak self] in self?.take(events, at: revision) }
        }
        return verdict
    }

    /// What follows a connection's end (or a failed try), on the watch queue: the next try, after
    /// a pause that grows with failures in a row, at the next endpoint.
    ///
    /// A failure is reported once every endpoint has failed in a row (and at least two tries have):
    /// a member left for another that answers is a recovery, not a problem for the error handler.
    /// A run of failures reports each kind of problem once: etcd out of reach, then etcd refusing
    /// the watch (a permission revoked while it was away) is two problems, each said once.
    private func watchEnded(failed error: (any Error)?) {
        let (delay, tell) = state.withLock { state -> (Int, Bool) in
            state.watch.connection = nil
            if state.watch.connected {
                state.watch.failures = 0
                state.watch.reported = []
                // Ended by etcd's compaction (a reload follows, then a connection of its own
                // choosing) or by the suite: no connection was lost.
                if state.watch.next != -1, !state.watch.isStopped { state.watch.lost = true }
            }
            state.watch.connected = false
            var tell = false
            if error != nil || state.watch.next == -1, !state.watch.isHeld, !state.watch.isStopped {
                state.watch.failures += 1
                if let refusal = error as? EtcdClient.Failure, refusal.refusesCredentials {
                    // A refused password is reported once, by whoever met it first (the load,
                    // a commit, or here), and at once: no other member will take it.
                    tell = refusal.isNews && client.claimRefusalReport()
                } else if let error {
                    let problem: WatchProblem =
                        (error as? EtcdClient.Failure)?.refusesWatch == true ? .refused : .unavailable
                    tell =
                        !state.watch.reported.contains(problem)
                        && state.watch.failures >= max(2, client.endpoints.count)
                    if tell { state.watch.reported.insert(problem) }
                }
            }
            if state.watch.next != -1 || error != nil {
                state.watch.index = (state.watch.index + 1) % client.endpoints.count
            }
            // The first try after a failure goes at once (another member may well answer);
            // only a run of failures waits, growing to 3 s.
            let failures = state.watch.failures
            return (failures <= 1 ? 0 : min(50 << min(failures, 6), 3_000), tell)
        }
        if tell, let error {
            report(.backendFailed(backend: name, reason: "the watch of etcd stopped (\(error)); reconnecting"))
        }
        watchQueue.asyncAfter(deadline: .now() + .milliseconds(delay)) { [weak self] in self?.connectWatch() }
    }

    /// Reads the prefix whole and hands it over, on the watch queue.
    ///
    /// The difference goes to the suite as one change (``Defaults/BackendUpdates/replaced(by:)``).
    /// Returns the revision of the read, or `nil` if etcd could not be read.
    private func reload() -> Int64? {
        commitGate.lock()
        defer { commitGate.unlock() }
        do throws(Defaults.StorageError) {
            let before = state.withLock { ($0.revision, $0.clusterID) }
            let (values, revision) = try readAll(reportsRefusal: false)
            let updates = state.withLock { state -> Defaults.BackendUpdates? in
                if revision < before.0 || (before.1 != nil && state.clusterID != before.1) {
                    // History began again (a restore, another cluster): the revisions seen
                    // before mean nothing now.
                    state.revision = revision
                    state.ownRevisions = []
                    // No write sent to the cluster of before can be applied now, nor found.
                    state.unsettled = [:]
                    state.ownKeyRevision = 0
                    state.removal = nil
                } else {
                    state.ownRevisions = state.ownRevisions.filter { $0 > revision }
                }
                return state.updates
            }
            updates?.replaced(by: Defaults.BackendContents(values: values, revision: UInt64(revision)))
            return revision
        } catch {
            return nil
        }
    }

    // MARK: - Holding the watch, for tests

    /// Drops the watch's connection and keeps it from connecting again until
    /// ``releaseWatchForTesting()``: for tests of what a watch that was away catches up with.
    func holdWatchForTesting() {
        let connection = state.withLock { state -> HTTPClient.Task<Void>? in
            state.watch.isHeld = true
            return state.watch.connection
        }
        connection?.cancel()
    }

    /// How many connections the watch has made: one while it never had to connect again.
    var watchConnectionsForTesting: Int { state.withLock { $0.watch.connections } }

    /// How many times in a row the watch failed to connect, or was cut.
    var watchFailuresForTesting: Int { state.withLock { $0.watch.failures } }

    /// Calls `watched` with each revision the watch has taken in, once it has.
    func onWatchedForTesting(_ watched: @escaping @Sendable (Int64) -> Void) {
        state.withLock { $0.watchedForTesting = watched }
    }

    /// Lets the watch connect again.
    func releaseWatchForTesting() {
        state.withLock { $0.watch.isHeld = false }
        watchQueue.async { [weak self] in
            guard let self, self.state.withLock({ $0.watch.connection == nil }) else { return }
            self.connectWatch()
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
        // Waits for a commit under way, so its revision is recorded before this one is judged.
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
                // Older than what this backend committed of the key since (its commit returned
                // before this event was looked at): the suite holds newer, and must keep it.
                if let known = state.known[name], known.modRevision > modRevision { continue }
                if event.type == "DELETE" {
                    // This backend's own removal, whose answer was lost, is noted as applied, and
                    // reported as any other: the suite keeps a value it has not committed over it.
                    Self.takeUnsettled(name, nil, at: modRevision, in: &state)
                    values[name] = .some(nil)
                    // A tombstone, so an older event of the key is still known to be older.
                    state.known[name] = (nil, modRevision)
                    continue
                }
                switch parse(event.kv.value, of: name) {
                case .success(let value):
                    // This backend's own write, whose answer was lost: noted as applied (not
                    // another's, which a later commit would write the value again over), and
                    // reported: a suite whose commit of the key was refused since holds another.
                    Self.takeUnsettled(name, value, at: modRevision, in: &state)
                    values[name] = .some(value)
                    state.known[name] = (value, modRevision)
                case .failure(let problem):
                    // A running suite keeps the last value that parsed (an operator's typo must
                    // not send a fleet back to its defaults at once), and takes the next good one.
                    // The revision is noted, so a commit over the key compares with it.
                    state.known[name] = (state.known[name]?.value, modRevision)
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
        state.withLock { $0.watchedForTesting }?(revision)
    }

    func report(_ problem: Defaults.StorageError) {
        state.withLock { $0.updates }?.report(problem)
    }
}
