import Defaults
import Foundation

/// A `removeAll()`'s commit: every key under the prefix removed but those written, in one guarded
/// transaction (and plain pieces after it, past etcd's limit of operations).
extension EtcdBackend {
    /// Removes every key under the prefix but those `changes` writes, and writes them, in one
    /// transaction that holds only if no key under the prefix changed since the keys were listed.
    ///
    /// Past etcd's limit of operations, the first piece is that transaction (it also puts the
    /// backend's own key, as ``transact(compare:success:failure:writes:)`` does, so its outcome is
    /// known exactly), and the rest follow as plain commits. When a later piece fails, the suite
    /// sends the commit again: then only what the removal had not removed yet goes, and a key
    /// another party wrote since the removal was stored stays.
    func commitRemovingEverything(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) {
        if let storedAt = state.withLock({ $0.removal }) {
            var values = changes.values
            for pair in try listPrefix().kvs ?? [] {
                let modRevision = pair.mod_revision.flatMap(Int64.init) ?? 0
                guard let name = settingName(pair.key), values[name] == nil, modRevision <= storedAt else { continue }
                values[name] = .some(nil)
            }
            // The pieces stored before are remembered: not stored twice.
            try commitPieces(chunks(of: values))
            state.withLock { $0.removal = nil }
            return
        }
        while true {
            let listed = try listPrefix()
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
            // The first piece is guarded; once it is in, the rest follow as plain commits (the
            // prefix has changed by then: by this commit).
            var pieces = chunks(of: values)
            let first = pieces.removeFirst()
            let outcome = try transact(
                compare: [unchanged],
                success: operations(for: first),
                failure: [],
                writes: first
            )
            guard outcome.succeeded else { continue }
            recordOwnCommit(first, at: outcome.revision)
            guard !pieces.isEmpty else { return }
            state.withLock { $0.removal = outcome.revision }
            try commitPieces(pieces, after: [(first, outcome.revision)])
            state.withLock { $0.removal = nil }
            return
        }
    }

    /// The keys under the prefix, without their values, and the revision of the listing.
    private func listPrefix() throws(Defaults.StorageError) -> Etcd.RangeResponse {
        let listing = Etcd.RangeRequest(
            key: Etcd.encode(prefix),
            range_end: Etcd.encode(Etcd.rangeEnd(of: prefix)),
            keys_only: true
        )
        return try client.call("v3/kv/range", listing, as: Etcd.RangeResponse.self, backend: name)
    }
}
