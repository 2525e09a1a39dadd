import Defaults
import Foundation

/// Conditional commits (an exclusive transaction's): the keys read compared by mod revision in one
/// etcd transaction, which also names the commit in the backend's own key, so a lost answer is
/// found out exactly.
extension EtcdBackend {
    /// `true`: conditional commits compare mod revisions in an etcd transaction.
    public var supportsConditionalCommit: Bool { true }

    /// Stores `changes` in one etcd transaction if every key of `expected` is at the mod revision
    /// this backend saw it holding the value given (or still absent).
    public func commit(
        _ changes: Defaults.BackendChanges,
        ifUnchanged expected: [String: Defaults.JSONValue?]
    ) throws(Defaults.StorageError) -> Defaults.ConditionalCommitResult {
        commitGate.lock()
        defer { commitGate.unlock() }
        guard changes.values.count <= keysPerTransaction, expected.count <= keysPerTransaction else {
            throw .backendFailed(
                backend: name,
                reason:
                    "an exclusive transaction of \(changes.values.count) writes and \(expected.count) reads is more than one etcd transaction takes (\(maxOperationsPerTransaction) operations, one of them the backend's own key)"
            )
        }
        var compares: [Etcd.Compare] = []
        var stale: [String] = []
        state.withLock { state in
            for (name, value) in expected {
                let key = Etcd.encode(etcdKey(of: name))
                if value == nil {
                    compares.append(Etcd.Compare(key: key, target: "VERSION", result: "EQUAL", version: "0"))
                } else if let known = state.known[name], known.value == value {
                    compares.append(
                        Etcd.Compare(key: key, target: "MOD", result: "EQUAL", mod_revision: String(known.modRevision))
                    )
                } else {
                    stale.append(name)
                }
            }
        }
        if !stale.isEmpty {
            // The suite read a value this backend does not know at a revision (its watch is
            // behind, or it does not watch): ask etcd what the keys hold, and compare with that.
            let fetched = try fetch(stale)
            for name in stale {
                let current = fetched[name]
                guard let current, current.value == expected[name] ?? nil else {
                    var values: [String: Defaults.JSONValue?] = [:]
                    for other in expected.keys { values[other] = .some(knownValue(of: other)) }
                    // A value that does not parse: the last one that did, as from the watch.
                    for (other, found) in fetched { values[other] = .some(found.value ?? knownValue(of: other)) }
                    for other in stale where fetched[other] == nil { values[other] = .some(nil) }
                    return .conflict(current: values)
                }
                compares.append(
                    Etcd.Compare(
                        key: Etcd.encode(etcdKey(of: name)),
                        target: "MOD",
                        result: "EQUAL",
                        mod_revision: String(current.modRevision)
                    )
                )
            }
        }
        if changes.removesEverything {
            // Rare enough (a removeAll in an exclusive transaction) to take the plain way after
            // comparing: no key it read changed, then everything goes.
            let check = Etcd.TxnRequest(compare: compares, success: [], failure: [])
            let response = try client.call("v3/kv/txn", check, as: Etcd.TxnResponse.self, backend: name)
            guard response.succeeded == true else { return .conflict(current: try currentValues(of: expected.keys)) }
            // Not sent again by the suite if it fails: a removal left half done is not finished
            // by the next one.
            defer { state.withLock { $0.removal = nil } }
            do {
                try commitRemovingEverything(changes)
            } catch .writeRefused(let backend, let reason) {
                // It goes in several transactions: those before the refusal were applied.
                revert(changes)
                throw .writeRefused(backend: backend, reason: reason)
            }
            return .committed
        }
        let names = Array(expected.keys)
        // A key written and not read is compared too, at the revision the backend knows it
        // at: so a request a stalled member held finds it changed by the time it is applied, if it
        // was given up and sent again meanwhile. Such a key changed by another party is no
        // conflict (the transaction did not read it): it is read, and the transaction sent again.
        var unread = changes.values.keys.filter { expected.index(forKey: $0) == nil }.sorted()
        // Etcd counts the compares against its limit too, the one of the backend's own key
        // included: past it, the written keys go unguarded (the own key still keeps a request a
        // stalled member held from being applied after the transaction was sent again, which
        // puts it).
        if expected.count + unread.count > keysPerTransaction { unread = [] }
        var guards = state.withLock { state in guardRevisions(of: unread, in: state) }
        let reads = (names + unread)
            .map { name in
                Etcd.RequestOp(request_range: Etcd.RangeRequest(key: Etcd.encode(etcdKey(of: name))))
            }
        for _ in 0..<100 {
            let outcome = try transact(
                compare: compares + unread.map { guardCompare($0, at: guards[$0] ?? 0) },
                success: operations(for: changes.values),
                failure: reads,
                writes: changes.values
            )
            if outcome.succeeded {
                recordOwnCommit(changes.values, at: outcome.revision)
                return .committed
            }
            guard case .answered(let response) = outcome else { return .committed }
            // The failure branch read each compared key: what it holds now.
            let responses = response.responses ?? []
            let compared = Dictionary(uniqueKeysWithValues: compares.map { ($0.key, $0) })
            let found = remember(names + unread, responses)
            let conflicted = names.contains { name in
                let compare = compared[Etcd.encode(etcdKey(of: name))]
                let now = found[name]?.modRevision ?? 0
                return compare?.target == "VERSION" ? now != 0 : String(now) != compare?.mod_revision
            }
            if conflicted {
                var current: [String: Defaults.JSONValue?] = [:]
                for name in names { current[name] = .some(found[name].map { $0.value ?? knownValue(of: name) } ?? nil) }
                return .conflict(current: current)
            }
            for name in unread { guards[name] = found[name]?.modRevision ?? 0 }
        }
        throw .backendFailed(
            backend: name,
            reason: "an exclusive transaction lost 100 races in a row for keys it only writes"
        )
    }
}
