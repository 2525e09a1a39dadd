import Defaults
import Foundation

/// Commits: each one etcd transaction (or several, past etcd's limit of operations), and
/// conditional ones compared by mod revisions.
extension EtcdBackend {
    /// Stores `changes` in one etcd transaction.
    ///
    /// A transaction whose answer was lost (a member stalled, a connection cut after the request
    /// went out) may have been applied, or may be applied yet by a member that held it. Its writes
    /// are remembered until that is found out, and nothing of their keys is sent again before: the
    /// backend puts its own key, which fences off every request sent before, then reads the keys,
    /// and the prefix's history from the revision the transaction was sent at. A write found
    /// applied is not sent again, even by a later commit that carries it (the suite keeps a commit
    /// that threw, and sends it again), and a value written over it since stays, which the suite is
    /// told of. When finding out fails, the commit throws "may or may not be stored", and the next
    /// commit of those keys finds out first.
    ///
    /// - Returns: ``Defaults/BackendCommitResult/stored``: what others changed comes through the
    ///   watch.
    /// - Throws: ``Defaults/StorageError/writeRefused(backend:reason:)`` when etcd refused it;
    ///   ``Defaults/StorageError/backendFailed(backend:reason:)`` when it was not stored (no member
    ///   could be reached, or the sends whose answers were lost were found not applied, and can
    ///   never be now), or when it may or may not be stored (its outcome could not be found out).
    public func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult
    {
        commitGate.lock()
        defer { commitGate.unlock() }
        do {
            try commitLocked(changes)
            return .stored
        } catch .writeRefused(let backend, let reason) {
            // Given up: the suite does not send it again.
            state.withLock { $0.removal = nil }
            revert(changes)
            throw .writeRefused(backend: backend, reason: reason)
        }
    }

    /// Tells the suite what etcd holds for the keys of `changes`, which it refused: as the backend
    /// last knew them (the user may not even be able to read them now).
    func revert(_ changes: Defaults.BackendChanges) {
        let (values, updates) = state.withLock { state in
            var values: [String: Defaults.JSONValue?] = [:]
            let names = changes.removesEverything ? Array(state.known.keys) : []
            for name in Array(changes.values.keys) + names { values[name] = .some(state.known[name]?.value ?? nil) }
            return (values, state.updates)
        }
        // No revision: a report with one no newer than the suite's would be dropped.
        updates?.changed(values)
    }

    /// ``commit(_:)`` for a caller that holds the commit gate.
    private func commitLocked(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) {
        if changes.removesEverything {
            try commitRemovingEverything(changes)
            return
        }
        guard !changes.values.isEmpty else { return }
        // Etcd takes at most `maxOperationsPerTransaction` operations in one transaction
        // (its --max-txn-ops, 128 by default): a larger commit goes in several, in key order.
        try commitPieces(chunks(of: changes.values))
    }

    /// Stores `pieces` of one commit, one transaction each, in order.
    ///
    /// When one fails, the pieces stored before it (`stored` too) are remembered as applied
    /// (``noteStored(_:)``): the suite sends the whole commit again, and they must not be stored a
    /// second time, nor over what others wrote since. Not after a refusal: the suite gives the
    /// commit up.
    func commitPieces(
        _ pieces: [[String: Defaults.JSONValue?]],
        after stored: [(values: [String: Defaults.JSONValue?], revision: Int64)] = []
    ) throws(Defaults.StorageError) {
        var stored = stored
        for piece in pieces {
            do {
                stored.append((piece, try commitOnce(piece)))
            } catch {
                if case .writeRefused = error {} else { noteStored(stored) }
                throw error
            }
        }
    }

    /// Stores `values` in one transaction, applied at most once; returns its revision (or the
    /// backend's, when every write was found applied already).
    ///
    /// The transaction holds only if each key it writes is still at the mod revision the backend
    /// knows (or still absent), and the backend's own key has not changed since the newest
    /// revision the backend knew of it (``fenceCompare(after:)``). A key another party changed
    /// meanwhile is read, and the transaction sent again over it: writes stay merged per key, the
    /// last one in winning.
    ///
    /// When the request went out and no answer came (a member stalled, a connection cut, "request
    /// timed out"), etcd may or may not have applied it, and may apply it yet. The write is
    /// remembered as unsettled (``UnsettledWrite``) until its outcome is known, and nothing is
    /// sent again for its keys before then, in this commit or a later one (the suite keeps a
    /// commit that failed, and sends it again): ``settleUnanswered(_:guards:)`` puts the backend's
    /// own key, so the request can no longer be applied, and reads the keys' history from the
    /// revision it was sent at, its own included, up to that put. A write found applied is not sent
    /// again, and the value written over it since stays; a write not applied is sent to the next
    /// member, compared with what the key holds now. The watch may deliver the write's own
    /// revision before that (it is noted as the backend's own, not another's).
    private func commitOnce(_ values: [String: Defaults.JSONValue?]) throws(Defaults.StorageError) -> Int64 {
        var pending = values
        var guards = state.withLock { state in guardRevisions(of: values.keys, in: state) }
        // A revision read in this commit: it is sent after it.
        var floor: Int64 = 0
        if !state.withLock({ $0.loaded }) {
            // Opened from the cache, etcd out of reach: no revision is known. The keys are read
            // first, so they are compared as they are, and the history of a send whose answer is
            // lost is read from now, not from etcd's first revision.
            let (found, revision) = try read(values.keys.sorted(), forWrite: true)
            for name in values.keys { guards[name] = found[name]?.modRevision ?? 0 }
            floor = revision
        }
        var unanswered: [String] = []
        var conflicts = 0
        while true {
            // An earlier write of these keys whose answer was lost first: sent again before
            // its outcome is known, it could be applied twice, or over a later write.
            try settleUnanswered(&pending, guards: &guards)
            if pending.isEmpty { return state.withLock { $0.revision } }
            guard unanswered.count <= client.endpoints.count else {
                throw .backendFailed(
                    backend: name,
                    reason:
                        "no member answered a commit, and it was found not stored (\(unanswered.joined(separator: "; ")))"
                )
            }
            let seen = max(floor, state.withLock { $0.revision })
            let names = pending.keys.sorted()
            let request = Etcd.TxnRequest(
                compare: names.map { guardCompare($0, at: guards[$0] ?? 0) } + [fenceCompare(after: fenceRevision)],
                success: operations(for: pending),
                // No reads in the failure branch: a failed compare is rare, and they doubled
                // the size of every request.
                failure: []
            )
            switch try client.send("v3/kv/txn", request, as: Etcd.TxnResponse.self, backend: name) {
            case .answered(let response) where response.succeeded == true:
                let revision = response.header.revisionNumber
                recordOwnCommit(pending, at: revision, created: Self.madeRevision(pending, response))
                return revision
            case .answered:
                // Another party wrote one of the keys since the backend last knew it, or put the
                // backend's own key (an exclusive transaction): each is compared again, at the
                // revision it has now. Every such failure is another's commit, so this ends; the
                // bound only stops a runaway.
                conflicts += 1
                guard conflicts < 100 else {
                    throw .backendFailed(backend: name, reason: "a commit lost 100 races in a row for its keys")
                }
                let (found, revision) = try read(names)
                for name in names { guards[name] = found[name]?.modRevision ?? 0 }
                floor = max(floor, revision)
            case .unknown(let reason):
                unanswered.append(reason)
                noteUnanswered(pending, sentAfter: seen, guards: guards, reason: reason)
            }
        }
    }

    /// Whether the transaction that stored `values`, answered with `response`, made a revision of
    /// its own: a put always does; removals only of keys that were there.
    static func madeRevision(_ values: [String: Defaults.JSONValue?], _ response: Etcd.TxnResponse) -> Bool {
        if values.values.contains(where: { $0 != nil }) { return true }
        return (response.responses ?? []).contains { ($0.response_delete_range?.deleted.flatMap(Int64.init) ?? 0) > 0 }
    }

    /// The mod revision each key of `names` is known at, 0 for a key known absent (or not known).
    func guardRevisions(of names: some Sequence<String>, in state: State) -> [String: Int64] {
        var guards: [String: Int64] = [:]
        for name in names {
            if let known = state.known[name], known.value != nil { guards[name] = known.modRevision }
        }
        return guards
    }

    /// The compare that holds while the key `name` is at `modRevision` (0: absent).
    func guardCompare(_ name: String, at modRevision: Int64) -> Etcd.Compare {
        let key = Etcd.encode(etcdKey(of: name))
        guard modRevision > 0 else { return Etcd.Compare(key: key, target: "VERSION", result: "EQUAL", version: "0") }
        return Etcd.Compare(key: key, target: "MOD", result: "EQUAL", mod_revision: String(modRevision))
    }

    /// What became of a transaction.
    enum TransactionOutcome {
        /// etcd answered.
        case answered(Etcd.TxnResponse)
        /// The answer was lost, and the transaction was found applied, at this revision.
        case applied(revision: Int64)

        /// The revision of the transaction.
        var revision: Int64 {
            switch self {
            case .answered(let response): response.header.revisionNumber
            case .applied(let revision): revision
            }
        }

        /// Whether the compares held, and the success branch was applied.
        var succeeded: Bool {
            switch self {
            case .answered(let response): response.succeeded == true
            case .applied: true
            }
        }
    }

    /// Runs one conditional etcd transaction, applied at most once.
    ///
    /// Its success branch also puts the backend's own key (the prefix itself) with an id of this
    /// transaction's, and it holds only while that key has not changed since the newest revision
    /// the backend knew of it. When the request went out and no answer came (a member stalled, a
    /// connection cut, "request timed out"), etcd may or may not have applied it: the key's history
    /// since the newest revision the backend had seen says which. Applied, it is done; not applied,
    /// it is sent again, to the next member, where its compares decide (the two cannot both be
    /// applied: each puts the key the other compares). So an exclusive transaction's closure runs
    /// again only after a real conflict. (The values alone could not say: another instance that
    /// read the same revision and computed the same values may have won instead.)
    ///
    /// - Parameter writes: What it writes, remembered as unsettled (``UnsettledWrite``) when its
    ///   outcome cannot be found out: a later commit of those keys finds out first.
    /// - Throws: When etcd refused it, or every member is out of reach and nothing was sent;
    ///   "may or may not be stored" once a send went unanswered and whether it was applied could
    ///   not be found out.
    func transact(
        compare: [Etcd.Compare],
        success: [Etcd.RequestOp],
        failure: [Etcd.RequestOp],
        writes: [String: Defaults.JSONValue?]
    ) throws(Defaults.StorageError) -> TransactionOutcome {
        let id = UUID().uuidString
        let marker = Self.markerText(id)
        let request = Etcd.TxnRequest(
            compare: compare + [fenceCompare(after: fenceRevision)],
            success: success + [
                Etcd.RequestOp(request_put: Etcd.PutRequest(key: Etcd.encode(prefix), value: Etcd.encode(marker)))
            ],
            failure: failure
        )
        // No revision this transaction could have been applied at is older than one seen now.
        let seen = state.withLock { $0.revision }
        var unanswered: [String] = []
        // Once a send went unanswered, a failure leaves it unknown: said so, and remembered.
        func unknown(_ error: Defaults.StorageError) -> Defaults.StorageError {
            noteUnanswered(writes, sentAfter: seen, guards: [:], reason: unanswered[0])
            if case .writeRefused = error { return error }
            return .backendFailed(
                backend: name,
                reason:
                    "a commit may or may not be stored (\(unanswered.joined(separator: "; "))), and finding out failed: \(error.shortReason)"
            )
        }
        for _ in 0...client.endpoints.count {
            let outcome: EtcdClient.Outcome<Etcd.TxnResponse>
            do {
                outcome = try client.send("v3/kv/txn", request, as: Etcd.TxnResponse.self, backend: name)
            } catch {
                if unanswered.isEmpty { throw error }
                throw unknown(error)
            }
            switch outcome {
            case .answered(let response):
                guard response.succeeded != true else { return .answered(response) }
                // Sent again after an attempt whose outcome was unknown, and its compares
                // failed: the first may have been applied meanwhile (a proposal still in raft when
                // it was looked for), and changed what this one compares. Looked for once more.
                if !unanswered.isEmpty {
                    let applied: Int64?
                    do throws(Defaults.StorageError) {
                        applied = try revision(of: marker, after: seen)
                    } catch {
                        throw unknown(error)
                    }
                    if let applied { return .applied(revision: applied) }
                }
                // The own key may have moved on (another's exclusive transaction): compared at
                // the answer's revision next time.
                state.withLock { $0.ownKeyRevision = max($0.ownKeyRevision, response.header.revisionNumber) }
                return .answered(response)
            case .unknown(let reason):
                unanswered.append(reason)
                let applied: Int64?
                do throws(Defaults.StorageError) {
                    applied = try revision(of: marker, after: seen)
                } catch {
                    throw unknown(error)
                }
                if let applied { return .applied(revision: applied) }
            }
        }
        noteUnanswered(writes, sentAfter: seen, guards: [:], reason: unanswered[0])
        throw .backendFailed(
            backend: name,
            reason:
                "a commit may or may not be stored: no member answered it, and it was not found applied (\(unanswered.joined(separator: "; "))); a member may apply it yet"
        )
    }

    /// The text the backend's own key holds after the transaction `id`.
    static func markerText(_ id: String) -> String { "{\"commit\":\"\(id)\"}" }

    /// The revision at which the backend's own key was given `marker`, looked for back to the
    /// revision `seen` (excluded); `nil` if it was not.
    func revision(of marker: String, after seen: Int64) throws(Defaults.StorageError) -> Int64? {
        var at: Int64?
        while true {
            let read = Etcd.RangeRequest(key: Etcd.encode(prefix), revision: at.map { String($0) })
            let response = try client.call("v3/kv/range", read, as: Etcd.RangeResponse.self, backend: name)
            guard let pair = response.kvs?.first, let modified = pair.mod_revision.flatMap(Int64.init),
                modified > seen
            else { return nil }
            if Etcd.decode(pair.value) == marker { return modified }
            // Another commit's since: the key as it was before it.
            at = modified - 1
        }
    }

    /// The most keys one transaction writes: etcd's limit, less the put of the backend's own key.
    var keysPerTransaction: Int { max(1, maxOperationsPerTransaction - 1) }

    /// `values` in pieces of at most ``keysPerTransaction`` keys, in key order.
    func chunks(of values: [String: Defaults.JSONValue?]) -> [[String: Defaults.JSONValue?]] {
        let sorted = values.sorted { $0.key < $1.key }
        let size = keysPerTransaction
        return stride(from: 0, to: sorted.count, by: size)
            .map { start in
                Dictionary(
                    uniqueKeysWithValues: sorted[start..<min(start + size, sorted.count)].map { ($0.key, $0.value) }
                )
            }
    }
}
