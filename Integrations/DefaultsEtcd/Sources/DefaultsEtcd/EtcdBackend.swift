import AsyncHTTPClient
import Defaults
import Dispatch
import Foundation
import NIOCore
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
/// - A value that is not JSON (an operator's typo) is reported through the suite's error handler.
///   A running suite keeps the last value that parsed and takes the next good one; a suite that
///   opens on such a value reads the key's default until it is mended.
///
/// Calls go to the endpoint that answered last, and to the next when it cannot be reached; every
/// call and watch asks for a leader, and a member that answers "no leader" counts as out of reach.
/// The watch asks the member it watches from for a sign of life every `heartbeat`, and leaves a
/// member that stalled for the next. A commit whose answer was lost is found out before anything of
/// its keys is sent again, in that commit or a later one (see ``commit(_:)``), never sent again
/// blindly; each holds only if the keys it writes are at the revisions the backend knows. The key
/// that is the prefix itself is the backend's own: every commit compares it, and finding out puts
/// it, so no commit sent before can be applied after; an exclusive transaction writes its id
/// there, so its outcome is known exactly.
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
        /// The writes whose answer was lost, by key, until a later commit of the key settles them
        /// (see ``UnsettledWrite``); and the writes of a commit's pieces stored before a later
        /// piece failed, so the commit sent again does not store them twice.
        var unsettled: [String: UnsettledWrite] = [:]
        /// A revision no older than the last change of the backend's own key (the prefix itself),
        /// as far as the backend knows: each commit holds only while that key has changed at no
        /// later revision than this one and ``revision`` (see ``fenceCompare(after:)``).
        var ownKeyRevision: Int64 = 0
        /// The revision a removal of everything was stored at while pieces of it are still to be
        /// stored (a later piece failed): the commit sent again finishes it, and leaves alone
        /// what others wrote since.
        var removal: Int64?
        /// For tests: how many sends of a commit went unanswered.
        var unansweredForTesting = 0
        /// For tests: told of each revision the watch has taken in, after it has.
        var watchedForTesting: (@Sendable (Int64) -> Void)?
        var updates: Defaults.BackendUpdates?
        /// Problems found before anyone listened (by the load): reported when reporting starts.
        var unreported: [Defaults.StorageError] = []
        /// Whether a read of the whole prefix has succeeded: until then the watch has no revision
        /// to start from, and reads the prefix first.
        var loaded = false
        /// The watch: where it is, and its connection now.
        var watch = WatchState()
        /// The id of the cluster last read or watched.
        var clusterID: String?
    }

    /// Where the watch is.
    ///
    /// Changed on the watch queue, but for `next` (on the event loop, as messages arrive) and
    /// `isStopped`/`isHeld` (by whoever stops or holds it).
    struct WatchState {
        /// The revision to watch from next; -1 when there is none (the load failed, or the revision
        /// was compacted away): the prefix is read whole first, and the difference reported.
        var next: Int64 = -1
        /// The endpoint to connect to next.
        var index = 0
        /// Failures in a row, for the pause before the next try.
        var failures = 0
        /// Whether the connection now has delivered a message.
        var connected = false
        var isStopped = true
        /// For tests: the watch does not connect while set.
        var isHeld = false
        /// How many connections the watch has made.
        var connections = 0
        /// Whether a connection that delivered was lost (not ended for a reload, nor stopped):
        /// the next one etcd creates is a reconnect.
        var lost = false
        /// What this run of failures has been reported as: each kind once.
        var reported: Set<WatchProblem> = []
        var connection: HTTPClient.Task<Void>?
    }

    /// What a run of the watch's failures is reported as, each once.
    enum WatchProblem {
        /// The watch could not connect, or its connection broke: a member out of reach, stalled,
        /// without a leader.
        case unavailable
        /// A member answered, and refused the watch.
        case refused
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
    /// How long the member the watch is on may leave a request for a sign of life unanswered
    /// before it is left for the next one.
    let heartbeat: TimeAmount

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
    ///   - heartbeat: How often the watch asks the member it watches from for a sign of life. A
    ///     member that has sent nothing by the next time (stalled, or behind a connection that is
    ///     half open) is left for the next member, from the revision the watch had reached: a
    ///     change made meanwhile through another member arrives between one and one and a half
    ///     heartbeats after the stall began.
    ///
    ///   - tls: For `https` endpoints: the CA to trust and the client certificate to present
    ///     (``EtcdTLS``); `nil` trusts the system's CAs and presents none.
    ///   - credentials: For a cluster with authentication on: the user to log in as, and where
    ///     its password is (``EtcdCredentials``). A write the user may not make is refused
    ///     (``Defaults/StorageError/writeRefused(backend:reason:)``), not tried again.
    ///
    /// - Precondition: `prefix` is not empty: the key that is the prefix itself is the backend's
    ///   own (see ``commit(_:)``).
    public init(
        endpoints: [URL],
        prefix: String,
        timeout: Duration = .seconds(5),
        cache: CacheLocation = .automatic,
        maxOperationsPerTransaction: Int = 128,
        heartbeat: Duration = .seconds(3),
        tls: EtcdTLS? = nil,
        credentials: EtcdCredentials? = nil
    ) {
        precondition(!prefix.isEmpty, "DefaultsEtcd: a suite in etcd needs a key prefix")
        self.prefix = prefix
        self.heartbeat = TimeAmount(heartbeat)
        self.maxOperationsPerTransaction = max(1, maxOperationsPerTransaction)
        self.client = EtcdClient(endpoints: endpoints, timeout: timeout, tls: tls, credentials: credentials)
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
        state.withLock { $0.watch.connection }?.cancel()
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
            // No revision: the values are older than anything etcd will say.
            return Defaults.BackendContents(values: cached.values)
        }
    }

    /// One range read of the prefix: the values, and the cluster's revision at the read.
    ///
    /// Keys whose value is not JSON are left out and reported.
    ///
    /// - Parameter reportsRefusal: Whether the caller reports what it throws.
    func readAll(reportsRefusal: Bool = true) throws(Defaults.StorageError) -> ([String: Defaults.JSONValue], Int64) {
        let request = Etcd.RangeRequest(
            key: Etcd.encode(prefix),
            range_end: Etcd.encode(Etcd.rangeEnd(of: prefix))
        )
        let response = try client.call(
            "v3/kv/range",
            request,
            as: Etcd.RangeResponse.self,
            backend: name,
            reportsRefusal: reportsRefusal
        )
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
            // Read again while running (after a compaction or a restore): a key whose value does
            // not parse keeps the last one that did, as a watched change does.
            for (name, entry) in known where entry.value == nil {
                guard let last = state.known[name]?.value else { continue }
                known[name] = (last, entry.modRevision)
                values[name] = last
            }
            if let cluster = response.header.cluster_id { state.clusterID = cluster }
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

    /// The setting a key names: the key without the prefix.
    ///
    /// `nil` for a key that is not text, and for the prefix itself, the backend's own key (no
    /// setting's name is empty), and for ``schemaKey``, the schema a program published. The key
    /// ``migrationRecordKey`` is the empty name: the suite's record of the migrations it ran.
    func settingName(_ base64: String) -> String? {
        guard let key = Etcd.decode(base64), key.hasPrefix(prefix), key.utf8.count > prefix.utf8.count else {
            return nil
        }
        let name = String(key.dropFirst(prefix.count))
        // The schema the program published: no setting.
        guard name != Self.schemaSuffix else { return nil }
        return name == Self.migrationRecordSuffix ? "" : name
    }

    /// The etcd key of the setting `name`: `<prefix><name>`, and ``migrationRecordKey`` for the
    /// empty name (the record of migrations, which is no setting's).
    func etcdKey(of name: String) -> String {
        prefix + (name.isEmpty ? Self.migrationRecordSuffix : name)
    }

    /// What follows the prefix in ``migrationRecordKey``.
    static let migrationRecordSuffix = ".defaults-migrations"

    /// The key where suites over this prefix record the migrations they ran.
    ///
    /// See ``Defaults/Suite/appliedMigrations``: `<prefix>.defaults-migrations`. The name is
    /// reserved: a setting of that name would be taken for the record.
    public var migrationRecordKey: String { prefix + Self.migrationRecordSuffix }

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
}

extension Defaults.StorageError {
    /// The reason a backend gave, or the whole description.
    var shortReason: String {
        if case .backendFailed(_, let reason) = self { return reason }
        return description
    }
}

extension TimeAmount {
    /// `duration`, to the nanosecond.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

extension Array {
    /// The element at `index`, or `nil` past the end.
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
