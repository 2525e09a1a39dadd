import Defaults
import Foundation

/// Commits: each one etcd transaction (or several, past etcd's limit of operations), and
/// conditional ones compared by mod revisions.
extension EtcdBackend {
    /// Stores `changes` in one etcd transaction.
    public func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) {
        commitGate.lock()
        defer { commitGate.unlock() }
        if changes.removesEverything {
            try commitRemovingEverything(changes)
            return
        }
        guard !changes.values.isEmpty else { return }
        // NB: etcd takes at most `maxOperationsPerTransaction` operations in one transaction
        // (its --max-txn-ops, 128 by default): a larger commit goes in several, in key order.
        for chunk in chunks(of: changes.values) {
            let request = Etcd.TxnRequest(compare: [], success: operations(for: chunk), failure: [])
            let response = try client.call("v3/kv/txn", request, as: Etcd.TxnResponse.self, backend: name)
            recordOwnCommit(chunk, at: response.header.revisionNumber)
        }
    }

    /// `values` in pieces of at most ``maxOperationsPerTransaction`` keys, in key order.
    private func chunks(of values: [String: Defaults.JSONValue?]) -> [[String: Defaults.JSONValue?]] {
        let sorted = values.sorted { $0.key < $1.key }
        return stride(from: 0, to: sorted.count, by: maxOperationsPerTransaction)
            .map { start in
                Dictionary(
                    uniqueKeysWithValues: sorted[start..<min(start + maxOperationsPerTransaction, sorted.count)]
                        .map { ($0.key, $0.value) }
                )
            }
    }

    /// Removes every key under the prefix but those `changes` writes, and writes them, in one
    /// transaction that holds only if no key under the prefix changed since the keys were listed.
    private func commitRemovingEverything(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) {
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
            // NB: every key under the prefix last changed at or before the listing's revision.
            let unchanged = Etcd.Compare(
                key: Etcd.encode(prefix),
                range_end: Etcd.encode(Etcd.rangeEnd(of: prefix)),
                target: "MOD",
                result: "LESS",
                mod_revision: String(listed.header.revisionNumber + 1)
            )
            // NB: the first piece is guarded; once it is in, the rest follow unguarded (the prefix
            // has changed by then: by this commit).
            var pieces = chunks(of: values)
            let first = pieces.removeFirst()
            let request = Etcd.TxnRequest(compare: [unchanged], success: operations(for: first), failure: [])
            let response = try client.call("v3/kv/txn", request, as: Etcd.TxnResponse.self, backend: name)
            if response.succeeded == true {
                recordOwnCommit(first, at: response.header.revisionNumber)
                for piece in pieces {
                    let rest = Etcd.TxnRequest(compare: [], success: operations(for: piece), failure: [])
                    let answer = try client.call("v3/kv/txn", rest, as: Etcd.TxnResponse.self, backend: name)
                    recordOwnCommit(piece, at: answer.header.revisionNumber)
                }
                return
            }
        }
    }

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
        guard changes.values.count <= maxOperationsPerTransaction, expected.count <= maxOperationsPerTransaction else {
            throw .backendFailed(
                backend: name,
                reason:
                    "an exclusive transaction of \(changes.values.count) writes and \(expected.count) reads is more than one etcd transaction takes (\(maxOperationsPerTransaction) operations)"
            )
        }
        var compares: [Etcd.Compare] = []
        var stale: [String] = []
        state.withLock { state in
            for (name, value) in expected {
                let key = Etcd.encode(prefix + name)
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
            // NB: the suite read a value this backend does not know at a revision (its watch is
            // behind, or it does not watch): ask etcd what the keys hold, and compare with that.
            let fetched = try fetch(stale)
            for name in stale {
                let current = fetched[name]
                guard let current, current.value == expected[name] ?? nil else {
                    var values: [String: Defaults.JSONValue?] = [:]
                    for other in expected.keys { values[other] = .some(knownValue(of: other)) }
                    for (other, found) in fetched { values[other] = .some(found.value) }
                    for other in stale where fetched[other] == nil { values[other] = .some(nil) }
                    return .conflict(current: values)
                }
                compares.append(
                    Etcd.Compare(
                        key: Etcd.encode(prefix + name),
                        target: "MOD",
                        result: "EQUAL",
                        mod_revision: String(current.modRevision)
                    )
                )
            }
        }
        if changes.removesEverything {
            // NB: rare enough (a removeAll in an exclusive transaction) to take the plain way after
            // comparing: no key it read changed, then everything goes.
            let check = Etcd.TxnRequest(compare: compares, success: [], failure: [])
            let response = try client.call("v3/kv/txn", check, as: Etcd.TxnResponse.self, backend: name)
            guard response.succeeded == true else { return .conflict(current: try currentValues(of: expected.keys)) }
            try commitRemovingEverything(changes)
            return .committed
        }
        let names = Array(expected.keys)
        let reads = names.map { name in
            Etcd.RequestOp(request_range: Etcd.RangeRequest(key: Etcd.encode(prefix + name)))
        }
        let request = Etcd.TxnRequest(compare: compares, success: operations(for: changes.values), failure: reads)
        let response = try client.call("v3/kv/txn", request, as: Etcd.TxnResponse.self, backend: name)
        if response.succeeded == true {
            recordOwnCommit(changes.values, at: response.header.revisionNumber)
            return .committed
        }
        // The failure branch read each compared key: what it holds now.
        let found = remember(names, response.responses ?? [])
        var current: [String: Defaults.JSONValue?] = [:]
        for name in names { current[name] = .some(found[name]?.value ?? nil) }
        return .conflict(current: current)
    }

    /// What the keys `names` hold in etcd now, read in one transaction, and remembered.
    private func fetch(_ names: [String]) throws(Defaults.StorageError) -> [String: (
        value: Defaults.JSONValue?, modRevision: Int64
    )] {
        let reads = names.map { name in
            Etcd.RequestOp(request_range: Etcd.RangeRequest(key: Etcd.encode(prefix + name)))
        }
        let request = Etcd.TxnRequest(compare: [], success: reads, failure: [])
        let response = try client.call("v3/kv/txn", request, as: Etcd.TxnResponse.self, backend: name)
        return remember(names, response.responses ?? [])
    }

    /// The values and mod revisions of `names` in `responses` (one range read each, in order),
    /// noted as known; absent keys are left out, and forgotten.
    private func remember(
        _ names: [String],
        _ responses: [Etcd.ResponseOp]
    ) -> [String: (value: Defaults.JSONValue?, modRevision: Int64)] {
        var found: [String: (value: Defaults.JSONValue?, modRevision: Int64)] = [:]
        for (index, name) in names.enumerated() {
            guard let pair = responses[safe: index]?.response_range?.kvs?.first else { continue }
            found[name] = ((try? parse(pair.value, of: name).get()), pair.mod_revision.flatMap(Int64.init) ?? 0)
        }
        state.withLock { state in
            for name in names {
                if let entry = found[name] {
                    // NB: never back to an older revision than one the watch has seen.
                    if (state.known[name]?.modRevision ?? 0) <= entry.modRevision { state.known[name] = entry }
                } else {
                    state.known.removeValue(forKey: name)
                }
            }
        }
        return found
    }

    private func knownValue(of name: String) -> Defaults.JSONValue? {
        state.withLock { $0.known[name]?.value ?? nil }
    }

    private func currentValues(of names: some Sequence<String>) throws(Defaults.StorageError) -> [String: Defaults
        .JSONValue?]
    {
        let (values, _) = try readAll()
        var current: [String: Defaults.JSONValue?] = [:]
        for name in names { current[name] = .some(values[name]) }
        return current
    }

    /// The puts and deletes of `values`.
    private func operations(for values: [String: Defaults.JSONValue?]) -> [Etcd.RequestOp] {
        values.sorted { $0.key < $1.key }
            .map { name, value in
                let key = Etcd.encode(prefix + name)
                if let value {
                    return Etcd.RequestOp(request_put: Etcd.PutRequest(key: key, value: Etcd.encode(value.description)))
                }
                return Etcd.RequestOp(request_delete_range: Etcd.DeleteRangeRequest(key: key))
            }
    }

    /// Notes a commit of this backend's at `revision`: its keys' values and mod revisions, and that
    /// the watch must not report it.
    private func recordOwnCommit(_ values: [String: Defaults.JSONValue?], at revision: Int64) {
        state.withLock { state in
            for (name, value) in values {
                // NB: removals too, as tombstones: the watch drops older events of the key.
                state.known[name] = (value, revision)
            }
            // NB: only while watching: otherwise no watch would pass it, and the set would only grow.
            if state.updates != nil { state.ownRevisions.insert(revision) }
            state.revision = max(state.revision, revision)
        }
        saveCache()
    }

    /// Writes what the backend knows now to the cache file, later.
    func saveCache() {
        guard let cache else { return }
        let (values, revision) = state.withLock { state in
            (state.known.compactMapValues { $0.value }, state.revision)
        }
        let name = name
        cache.write(values, revision: revision) { [weak self] reason in
            self?.report(.backendFailed(backend: name, reason: reason))
        }
    }
}
