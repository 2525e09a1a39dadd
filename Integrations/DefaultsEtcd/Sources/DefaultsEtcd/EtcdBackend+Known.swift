import Defaults
import Foundation

/// What the backend knows etcd holds: read, remembered after each commit, and cached.
extension EtcdBackend {
    /// What the keys `names` hold in etcd now, read in one transaction, and remembered.
    func fetch(_ names: [String]) throws(Defaults.StorageError) -> [String: (
        value: Defaults.JSONValue?, modRevision: Int64
    )] {
        try read(names).found
    }

    /// ``fetch(_:)``, with the revision of the read: no key, the backend's own included, has
    /// changed at a later one.
    ///
    /// - Parameter forWrite: Whether a refusal is a write's (see ``EtcdClient/call(_:_:as:backend:reportsRefusal:forWrite:)``).
    func read(_ names: [String], forWrite: Bool = false) throws(Defaults.StorageError) -> (
        found: [String: (value: Defaults.JSONValue?, modRevision: Int64)], revision: Int64
    ) {
        let reads = names.map { name in
            Etcd.RequestOp(request_range: Etcd.RangeRequest(key: Etcd.encode(etcdKey(of: name))))
        }
        let request = Etcd.TxnRequest(compare: [], success: reads, failure: [])
        let response = try client.call(
            "v3/kv/txn",
            request,
            as: Etcd.TxnResponse.self,
            backend: name,
            forWrite: forWrite
        )
        let revision = response.header.revisionNumber
        state.withLock { $0.ownKeyRevision = max($0.ownKeyRevision, revision) }
        return (remember(names, response.responses ?? []), revision)
    }

    /// The values and mod revisions of `names` in `responses` (one range read each, in order),
    /// noted as known; absent keys are left out, and forgotten.
    ///
    /// A value that is not JSON is returned as `nil` at its revision; the backend keeps knowing
    /// the last value that parsed, as the watch does.
    func remember(
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
                    // Never back to an older revision than one the watch has seen.
                    guard (state.known[name]?.modRevision ?? 0) <= entry.modRevision else { continue }
                    state.known[name] = (entry.value ?? state.known[name]?.value ?? nil, entry.modRevision)
                } else {
                    state.known.removeValue(forKey: name)
                }
            }
        }
        return found
    }

    func knownValue(of name: String) -> Defaults.JSONValue? {
        state.withLock { $0.known[name]?.value ?? nil }
    }

    func currentValues(of names: some Sequence<String>) throws(Defaults.StorageError) -> [String: Defaults
        .JSONValue?]
    {
        let (values, _) = try readAll()
        var current: [String: Defaults.JSONValue?] = [:]
        for name in names { current[name] = .some(values[name]) }
        return current
    }

    /// The puts and deletes of `values`.
    func operations(for values: [String: Defaults.JSONValue?]) -> [Etcd.RequestOp] {
        values.sorted { $0.key < $1.key }
            .map { name, value in
                let key = Etcd.encode(etcdKey(of: name))
                if let value {
                    return Etcd.RequestOp(request_put: Etcd.PutRequest(key: key, value: Etcd.encode(value.description)))
                }
                return Etcd.RequestOp(request_delete_range: Etcd.DeleteRangeRequest(key: key))
            }
    }

    /// Notes a commit of this backend's at `revision`: its keys' values and mod revisions, and that
    /// the watch must not report it.
    ///
    /// - Parameter created: Whether the commit made a revision of its own. One that changed
    ///   nothing (it only removed keys that were absent) answers with the newest revision, which
    ///   may be another's the watch has not passed yet: the watch must still report that one.
    func recordOwnCommit(_ values: [String: Defaults.JSONValue?], at revision: Int64, created: Bool = true) {
        state.withLock { state in
            for (name, value) in values {
                // Removals too, as tombstones: the watch drops older events of the key.
                state.known[name] = (value, revision)
                // Nothing of the key sent before can be applied after this: a plain commit is sent
                // only once the earlier writes of its keys are settled, and an exclusive one puts
                // the backend's own key, which every commit compares (see `fenceCompare`).
                state.unsettled.removeValue(forKey: name)
            }
            // Only while watching: otherwise no watch would pass it, and the set would only grow.
            if created, state.updates != nil { state.ownRevisions.insert(revision) }
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
