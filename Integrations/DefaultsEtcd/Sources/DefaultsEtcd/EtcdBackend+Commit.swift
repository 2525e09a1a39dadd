import Defaults
import Foundation

/// Commits: each one etcd transaction (or several, past etcd's limit of operations), and
/// conditional ones compared by mod revisions.
extension EtcdBackend {
    /// Stores `changes` in one etcd transaction.
    ///
    /// A transaction whose answer was lost (a member stalled, a connection cut after the request
    /// went out) may have been applied, or may be applied yet by a member that held it. Its writes
    /// are remembered until that is found out, and nothing of their keys is sent again before:
    /// each key is read, with its history from the revision the transaction was sent at. A write
    /// found applied is not sent again, even by a later commit that carries it (the suite keeps a
    /// commit that threw, and sends it again), and a value written over it since stays, which the
    /// suite is told of. When finding out fails, the commit throws "may or may not be stored", and
    /// the next commit of those keys finds out first.
    ///
    /// - Returns: ``Defaults/BackendCommitResult/stored``: what others changed comes through the
    ///   watch.
    /// - Throws: ``Defaults/StorageError/writeRefused(backend:reason:)`` when etcd refused it;
    ///   ``Defaults/StorageError/backendFailed(backend:reason:)`` when no member could be reached
    ///   (nothing was sent), or its outcome could not be found out.
    public func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult
    {
        commitGate.lock()
        defer { commitGate.unlock() }
        do {
            try commitLocked(changes)
            return .stored
        } catch .writeRefused(let backend, let reason) {
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
        for chunk in chunks(of: changes.values) {
            try commitOnce(chunk)
        }
    }

    /// Stores `values` in one transaction, applied at most once.
    ///
    /// The transaction holds only if each key it writes is still at the mod revision the backend
    /// knows (or still absent): a request a stalled member held, and applies when it goes on, long
    /// after it was given up and sent again elsewhere, finds its keys changed and does nothing.
    /// A key another party changed meanwhile is read, and the transaction sent again over it:
    /// writes stay merged per key, the last one in winning.
    ///
    /// When the request went out and no answer came (a member stalled, a connection cut, "request
    /// timed out"), etcd may or may not have applied it, and may apply it yet. The write is
    /// remembered as unsettled (``UnsettledWrite``) until its outcome is known, and nothing is
    /// sent again for its keys before then, in this commit or a later one (the suite keeps a
    /// commit that failed, and sends it again): each key is read, and a key that holds another
    /// value, written since the write was sent, has its history read from that revision, the
    /// write's own included. A write found applied is not sent again, and the value written over
    /// it since stays; a write not applied is sent to the next member, compared with what the key
    /// holds now. The watch may deliver the write's own revision before that (it is taken for the
    /// backend's own, not another's).
    ///
    /// One case reads as not applied when it was: a key this commit created and another
    /// party removed before the keys were read is written again.
    private func commitOnce(_ values: [String: Defaults.JSONValue?]) throws(Defaults.StorageError) {
        var pending = values
        var guards = state.withLock { state in guardRevisions(of: values.keys, in: state) }
        var unanswered: [String] = []
        var conflicts = 0
        while true {
            // An earlier write of these keys whose answer was lost first: sent again before
            // its outcome is known, it could be applied twice, or over a later write.
            try settleUnanswered(&pending, guards: &guards)
            if pending.isEmpty { return }
            guard unanswered.count <= client.endpoints.count else {
                throw .backendFailed(
                    backend: name,
                    reason:
                        "no member answered a commit, and it was not found applied (\(unanswered.joined(separator: "; ")))"
                )
            }
            let seen = state.withLock { $0.revision }
            let names = pending.keys.sorted()
            let request = Etcd.TxnRequest(
                compare: names.map { guardCompare($0, at: guards[$0] ?? 0) },
                success: operations(for: pending),
                // No reads in the failure branch: a failed compare is rare, and they doubled
                // the size of every request.
                failure: []
            )
            switch try client.send("v3/kv/txn", request, as: Etcd.TxnResponse.self, backend: name) {
            case .answered(let response) where response.succeeded == true:
                recordOwnCommit(pending, at: response.header.revisionNumber)
                return
            case .answered:
                // Another party wrote one of the keys since the backend last knew it (or an
                // earlier write of this backend's, held by a member, was applied meanwhile: the
                // settling at the top finds it): each is written over, at the revision it has now.
                // Every such failure is another's commit, so this ends; the bound only stops a
                // runaway.
                conflicts += 1
                guard conflicts < 100 else {
                    throw .backendFailed(backend: name, reason: "a commit lost 100 races in a row for its keys")
                }
                let found = try fetch(names)
                for name in names { guards[name] = found[name]?.modRevision ?? 0 }
            case .unknown(let reason):
                unanswered.append(reason)
                noteUnanswered(pending, sentAfter: seen, guards: guards, reason: reason)
            }
        }
    }

    /// Whether the key `name` held `value` at a revision after `after` and before `before`: read
    /// from its history, back from `before`.
    ///
    /// A history that cannot tell (compacted away, or the key deleted between the two revisions)
    /// takes the write as applied: sending it again could apply it twice, over a later write.
    func held(
        _ name: String,
        _ value: Defaults.JSONValue?,
        between after: Int64,
        and before: Int64
    ) throws(Defaults.StorageError) -> Bool {
        var at = before - 1
        while at > after {
            let read = Etcd.RangeRequest(key: Etcd.encode(etcdKey(of: name)), revision: String(at))
            let response: Etcd.RangeResponse
            do {
                response = try client.call("v3/kv/range", read, as: Etcd.RangeResponse.self, backend: self.name)
            } catch {
                if error.shortReason.contains("compacted") { return true }
                throw error
            }
            // No key at `at`: it was deleted at a revision not known, maybe after the commit.
            guard let pair = response.kvs?.first else { return true }
            guard let modified = pair.mod_revision.flatMap(Int64.init), modified > after else { return false }
            if (try? parse(pair.value, of: name).get()) == value { return true }
            at = modified - 1
        }
        return false
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
    /// transaction's. When the request went out and no answer came (a member stalled, a connection
    /// cut, "request timed out"), etcd may or may not have applied it: the key's history since the
    /// newest revision the backend had seen says which. Applied, it is done; not applied, it is
    /// sent again, to the next member, where its compares decide. So an exclusive transaction's
    /// closure runs again only after a real conflict. (The values alone could not say: another
    /// instance that read the same revision and computed the same values may have won instead.)
    ///
    /// - Throws: When etcd refused it, every member is out of reach, or whether it was applied
    ///   could not be found out (the history was compacted meanwhile): then the pending writes stay
    ///   pending, and the next commit sends them again.
    func transact(
        compare: [Etcd.Compare],
        success: [Etcd.RequestOp],
        failure: [Etcd.RequestOp]
    ) throws(Defaults.StorageError) -> TransactionOutcome {
        let id = UUID().uuidString
        let marker = Self.markerText(id)
        let request = Etcd.TxnRequest(
            compare: compare,
            success: success + [
                Etcd.RequestOp(request_put: Etcd.PutRequest(key: Etcd.encode(prefix), value: Etcd.encode(marker)))
            ],
            failure: failure
        )
        // No revision this transaction could have been applied at is older than one seen now.
        let seen = state.withLock { $0.revision }
        var unanswered: [String] = []
        for _ in 0...client.endpoints.count {
            switch try client.send("v3/kv/txn", request, as: Etcd.TxnResponse.self, backend: name) {
            case .answered(let response):
                // Sent again after an attempt whose outcome was unknown, and its compares
                // failed: the first may have been applied meanwhile (a proposal still in raft when
                // it was looked for), and changed what this one compares. Looked for once more.
                if response.succeeded != true, !unanswered.isEmpty,
                    let applied = try? revision(of: marker, after: seen)
                {
                    return .applied(revision: applied)
                }
                return .answered(response)
            case .unknown(let reason):
                unanswered.append(reason)
                let applied: Int64?
                do throws(Defaults.StorageError) {
                    applied = try revision(of: marker, after: seen)
                } catch {
                    throw .backendFailed(
                        backend: name,
                        reason:
                            "a commit may or may not be stored (\(reason)), and finding out failed: \(error.shortReason)"
                    )
                }
                if let applied { return .applied(revision: applied) }
            }
        }
        throw .backendFailed(
            backend: name,
            reason: "no member answered a commit, and it was not applied (\(unanswered.joined(separator: "; ")))"
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
    private func chunks(of values: [String: Defaults.JSONValue?]) -> [[String: Defaults.JSONValue?]] {
        let sorted = values.sorted { $0.key < $1.key }
        let size = keysPerTransaction
        return stride(from: 0, to: sorted.count, by: size)
            .map { start in
                Dictionary(
                    uniqueKeysWithValues: sorted[start..<min(start + size, sorted.count)].map { ($0.key, $0.value) }
                )
            }
    }

    /// Removes every key under the prefix but those `changes` writes, and writes them, in one
    /// transaction that holds only if no key under the prefix changed since the keys were listed.
    func commitRemovingEverything(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) {
        while true {
            let listing = Etcd.RangeRequest(
                key: Etcd.encode(prefix),
                range_end: Etcd.encode(Etcd.rangeEnd(of: prefix)),
                keys_only: true
            )
            let listed = try client.call("v3/kv/range", listing, as: Etcd.RangeResponse.self, backend: name)
            var values = changes.values
            for pair in listed.kvs ?? [] {
                guard let name = settingName(pair.key), values[name] == nil else { continue }
                values[name] = .some(nil)
            }
            guard !values.isEmpty else { return }
            // Every key under the prefix last changed at or before the listing's revision.
            let unchanged = Etcd.Compare(
                key: Etcd.encode(prefix),
                range_end: Etcd.encode(Etcd.rangeEnd(of: prefix)),
                target: "MOD",
                result: "LESS",
                mod_revision: String(listed.header.revisionNumber + 1)
            )
            // The first piece is guarded; once it is in, the rest follow unguarded (the prefix
            // has changed by then: by this commit).
            var pieces = chunks(of: values)
            let first = pieces.removeFirst()
            let request = Etcd.TxnRequest(compare: [unchanged], success: operations(for: first), failure: [])
            switch try client.send("v3/kv/txn", request, as: Etcd.TxnResponse.self, backend: name) {
            case .answered(let response):
                guard response.succeeded == true else { continue }
                recordOwnCommit(first, at: response.header.revisionNumber)
            case .unknown:
                // Applied if every key of the piece holds what it wrote (nothing else would
                // remove them all and write those values); otherwise listed and tried again.
                let found = try fetch(Array(first.keys))
                guard first.allSatisfy({ name, value in found[name].flatMap(\.value) == value }) else { continue }
            }
            for piece in pieces { try commitOnce(piece) }
            return
        }
    }
}
