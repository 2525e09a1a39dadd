import Defaults
import Dispatch
import Foundation
import Synchronization

/// A ``Defaults/Backend`` whose values live in etcd under a key prefix: each setting one etcd key,
/// `<prefix><name>`, whose value is the setting's JSON text.
///
/// ```swift
/// let suite = Defaults.Suite(backend: EtcdBackend(endpoints: [URL(string: "http://10.0.0.5:2379")!],
///                                                 prefix: "/config/billing/"))
/// ```
///
/// `etcdctl get --prefix /config/billing/` shows the settings as text, and an operator changes one
/// with `etcdctl put /config/billing/logLevel '"debug"'`: every suite over the prefix takes it in as
/// one `.external` change.
///
/// - Opening reads the prefix once (one range read) and watches it from the revision after that
///   read, so no change made between the two is missed.
/// - Each etcd revision that touches the prefix is one report, so one change event: a transaction
///   of three keys is one event of three keys. The backend's own commits are not reported back.
/// - Each commit of the suite's pending writes is one etcd transaction, merged per key: instances
///   writing different keys lose none. A conditional commit (`exclusiveTransaction`) compares the
///   mod revisions of the keys it read, so a lost race is a conflict, and the suite runs the
///   transaction again.
/// - A value that is not JSON (an operator's typo) is reported through the suite's error handler
///   and reads as absent, so the key's default applies until it is mended.
///
/// Calls go to the endpoint that answered last, and to the next when it cannot be reached; a
/// member that answers "no leader" counts as out of reach.
public final class EtcdBackend: Defaults.Backend, Sendable {
    /// The prefix every key of the suite's settings has in etcd.
    public let prefix: String
    /// Where etcd is reached.
    public var endpoints: [URL] { client.endpoints }

    let client: EtcdClient

    struct State {
        /// What the backend last knew of each key: its value and its mod revision.
        var known: [String: (value: Defaults.JSONValue?, modRevision: Int64)] = [:]
        /// The newest revision seen: loaded, watched or committed.
        var revision: Int64 = 0
        /// Revisions of this backend's own commits that the watch has not passed yet.
        var ownRevisions: Set<Int64> = []
        var updates: Defaults.BackendUpdates?
        var watch: Task<Void, Never>?
        /// Problems found before anyone listened (by the load): reported when reporting starts.
        var unreported: [Defaults.StorageError] = []
        /// Whether a read of the whole prefix has succeeded: until then the watch has no revision
        /// to start from, and reads the prefix first.
        var loaded = false
        /// For tests: the watch does not connect while set.
        var watchHeld = false
        /// Those waiting for the watch to be let go.
        var heldWaiters: [CheckedContinuation<Void, Never>] = []
        /// The watch's connection now.
        var attempt: Task<Void, any Error>?
    }

    let state = Mutex(State())
    /// Held across each commit, and while a watched revision is looked at: so the watch knows every
    /// revision this backend has committed before it decides whether a revision is its own.
    let commitGate = NSLock()
    /// Where watched messages are looked at, one at a time, off the event loop (they may wait for a
    /// commit, whose answer comes on the event loop).
    let watchQueue = DispatchQueue(label: "DefaultsEtcd.watch")

    /// Where the last values seen are kept, for a suite opened while etcd is out of reach.
    let cache: EtcdCache?
    /// The most operations the backend puts in one etcd transaction: etcd's `--max-txn-ops`.
    public let maxOperationsPerTransaction: Int

    /// Creates a backend over the keys under `prefix` in the etcd cluster at `endpoints`.
    ///
    /// - Parameters:
    ///   - endpoints: The client URLs of the cluster's members (`http://host:2379`).
    ///   - prefix: The prefix of the suite's keys, usually ending in `/` (`/config/billing/`).
    ///   - timeout: How long one call to one member may take before the next is tried.
    ///   - cache: Where to keep the last values seen, so a suite opened while etcd is out of
    ///     reach starts from them.
    ///   - maxOperationsPerTransaction: The cluster's `--max-txn-ops` (128 unless it was set): a
    ///     commit of more keys goes in several transactions, each one change for the other suites.
    public init(
        endpoints: [URL],
        prefix: String,
        timeout: Duration = .seconds(5),
        cache: CacheLocation = .automatic,
        maxOperationsPerTransaction: Int = 128
    ) {
        self.prefix = prefix
        self.maxOperationsPerTransaction = max(1, maxOperationsPerTransaction)
        self.client = EtcdClient(endpoints: endpoints, timeout: timeout)
        switch cache {
        case .automatic: self.cache = EtcdCache(url: EtcdCache.defaultURL(endpoints: endpoints, prefix: prefix))
        case .none: self.cache = nil
        case .file(let url): self.cache = EtcdCache(url: url)
        }
    }

    /// Where a backend keeps the last values it saw.
    public enum CacheLocation: Sendable {
        /// A file in `$XDG_CACHE_HOME/defaults-etcd/` (or `~/.cache/defaults-etcd/`) named after
        /// the prefix and the endpoints.
        case automatic
        /// None: a suite opened while etcd is out of reach starts from its defaults.
        case none
        /// The file at this URL.
        case file(URL)
    }

    deinit {
        state.withLock { $0.watch }?.cancel()
    }

    /// "etcd", the prefix and the endpoints.
    public var name: String { "etcd \(prefix) at \(client.endpointList)" }

    // MARK: - Load

    /// Reads every key under the prefix, with the revision of the read.
    ///
    /// When etcd is out of reach, returns the values of the cache file, if there are any, and
    /// reports that it did; the watch reads the prefix again once etcd answers.
    public func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        do {
            let (values, revision) = try readAll()
            return Defaults.BackendContents(values: values, revision: UInt64(revision))
        } catch {
            guard let cache, let cached = cache.read() else { throw error }
            let problem = Defaults.StorageError.backendFailed(
                backend: name,
                reason: "\(error.shortReason); starting from the values last seen, kept in \(cache.url.path)"
            )
            state.withLock { state in
                state.known = cached.values.mapValues { (Optional($0), 0) }
                state.unreported.append(problem)
            }
            // NB: no revision: the values are older than anything etcd will say.
            return Defaults.BackendContents(values: cached.values)
        }
    }

    /// One range read of the prefix: the values, and the cluster's revision at the read.
    ///
    /// Keys whose value is not JSON are left out and reported.
    func readAll() throws(Defaults.StorageError) -> ([String: Defaults.JSONValue], Int64) {
        let request = Etcd.RangeRequest(
            key: Etcd.encode(prefix),
            range_end: Etcd.encode(Etcd.rangeEnd(of: prefix))
        )
        let response = try client.call("v3/kv/range", request, as: Etcd.RangeResponse.self, backend: name)
        var values: [String: Defaults.JSONValue] = [:]
        var known: [String: (value: Defaults.JSONValue?, modRevision: Int64)] = [:]
        var problems: [Defaults.StorageError] = []
        for pair in response.kvs ?? [] {
            guard let name = settingName(pair.key) else { continue }
            let modRevision = pair.mod_revision.flatMap(Int64.init) ?? 0
            switch parse(pair.value, of: name) {
            case .success(let value):
                values[name] = value
                known[name] = (value, modRevision)
            case .failure(let problem):
                known[name] = (nil, modRevision)
                problems.append(problem)
            }
        }
        let revision = response.header.revisionNumber
        let updates = state.withLock { state in
            state.known = known
            state.revision = max(state.revision, revision)
            state.loaded = true
            if state.updates == nil { state.unreported += problems }
            return state.updates
        }
        if let updates { for problem in problems { updates.report(problem) } }
        saveCache()
        return (values, revision)
    }

    /// The setting a key names: the key without the prefix; `nil` for a key that is not text.
    func settingName(_ base64: String) -> String? {
        guard let key = Etcd.decode(base64), key.hasPrefix(prefix) else { return nil }
        return String(key.dropFirst(prefix.count))
    }

    func parse(_ base64: String?, of name: String) -> Result<Defaults.JSONValue, Defaults.StorageError> {
        guard let text = Etcd.decode(base64) else {
            return .failure(
                .unreadableValue(backend: self.name, key: name, reason: "\(prefix)\(name) is not UTF-8 text")
            )
        }
        do {
            return .success(try Defaults.JSONValue(parsing: text))
        } catch {
            return .failure(
                .unreadableValue(
                    backend: self.name,
                    key: name,
                    reason: "\(prefix)\(name) is not JSON (\(error)): \(text)"
                )
            )
        }
    }

    // MARK: - Commit

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

extension Defaults.StorageError {
    /// The reason a backend gave, or the whole description.
    var shortReason: String {
        if case .backendFailed(_, let reason) = self { return reason }
        return description
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
