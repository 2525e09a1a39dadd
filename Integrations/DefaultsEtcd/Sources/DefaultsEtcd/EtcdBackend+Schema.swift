import Defaults
import Foundation

/// The schema a program publishes for the suite (`Defaults.Suite.publishSchema`), kept under the
/// prefix at ``schemaKey``, for `defaults-etcd` and the editor to check values against.
extension EtcdBackend {
    /// What follows the prefix in ``schemaKey``.
    static let schemaSuffix = ".defaults-schema"

    /// The key where the schema published for the suite is kept: `<prefix>.defaults-schema`.
    ///
    /// The name is reserved, as ``migrationRecordKey`` is: no setting of that name is read, and
    /// a write of one would replace the schema.
    public var schemaKey: String { prefix + Self.schemaSuffix }

    /// `true`: the schema is kept at ``schemaKey``.
    public var keepsSchema: Bool { true }

    /// The schema kept at ``schemaKey``; `nil` when none is.
    ///
    /// - Throws: ``Defaults/StorageError/unreadableValue(backend:key:reason:)`` when the key holds
    ///   something that is not JSON (delete it with `etcdctl del`, and the program publishes its
    ///   schema again when it next starts); what etcd's answer throws when it cannot be read.
    public func loadSchema() throws(Defaults.StorageError) -> Defaults.JSONValue? {
        try readSchema()?.document
    }

    /// Keeps `document` at ``schemaKey`` if the schema kept there is still `expected`, in one etcd
    /// transaction that compares the key's mod revision.
    ///
    /// A role that may only read gets ``Defaults/StorageError/writeRefused(backend:reason:)``.
    public func storeSchema(
        _ document: Defaults.JSONValue,
        ifUnchanged expected: Defaults.JSONValue?
    ) throws(Defaults.StorageError) -> Bool {
        let current = try readSchema()
        guard current?.document == expected else { return false }
        let key = Etcd.encode(schemaKey)
        // Sent again after a lost answer, it finds the revision moved and keeps nothing: the
        // caller reads the schema again and finds its own.
        let unchanged =
            current.map { Etcd.Compare(key: key, target: "MOD", result: "EQUAL", mod_revision: String($0.modRevision)) }
            ?? Etcd.Compare(key: key, target: "VERSION", result: "EQUAL", version: "0")
        let text = String(decoding: Array(document.prettyDescription.utf8) + [0x0A], as: UTF8.self)
        let put = Etcd.RequestOp(request_put: Etcd.PutRequest(key: key, value: Etcd.encode(text)))
        let request = Etcd.TxnRequest(compare: [unchanged], success: [put], failure: [])
        let response = try client.call("v3/kv/txn", request, as: Etcd.TxnResponse.self, backend: name, forWrite: true)
        return response.succeeded == true
    }

    /// The schema kept at ``schemaKey``, with the key's mod revision; `nil` when none is.
    private func readSchema() throws(Defaults.StorageError) -> (document: Defaults.JSONValue, modRevision: Int64)? {
        let request = Etcd.RangeRequest(key: Etcd.encode(schemaKey))
        let response = try client.call("v3/kv/range", request, as: Etcd.RangeResponse.self, backend: name)
        guard let pair = response.kvs?.first else { return nil }
        let modRevision = pair.mod_revision.flatMap(Int64.init) ?? 0
        guard let text = Etcd.decode(pair.value) else {
            throw .unreadableValue(backend: name, key: Self.schemaSuffix, reason: "\(schemaKey) is not UTF-8 text")
        }
        do {
            return (try Defaults.JSONValue(parsing: text), modRevision)
        } catch {
            throw .unreadableValue(
                backend: name,
                key: Self.schemaSuffix,
                reason: "\(schemaKey) is not JSON (\(error)); delete it, and the program publishes its schema again"
            )
        }
    }
}
