import AsyncHTTPClient
import Defaults
import Foundation
import NIOCore
import Synchronization

/// One change of a key, as etcd's history has it.
struct Change {
    /// The revision it was made at.
    var revision: Int64
    /// What it wrote; `nil` for a removal, and for a value that is not JSON.
    var value: Defaults.JSONValue?
    /// Whether it removed the key.
    var removed: Bool
}

/// The fence that settles a write whose answer was lost, and the history read behind it.
///
/// A compare of the key alone cannot keep a held request from being applied late: a key that was
/// removed is at version 0 again, as one never created, so a create a stalled member held would
/// hold again after a later removal. Every commit also compares the backend's own key (the prefix
/// itself) with a revision it had not changed after; putting that key fences off every request
/// sent before.
extension EtcdBackend {
    /// What a read of history found.
    enum History {
        /// The changes of each key asked for, oldest first.
        case changes([String: [Change]])
        /// etcd compacted that history away.
        case compacted
    }

    /// The compare that holds while the backend's own key has changed at no revision after
    /// `revision` (or is absent).
    func fenceCompare(after revision: Int64) -> Etcd.Compare {
        Etcd.Compare(key: Etcd.encode(prefix), target: "MOD", result: "LESS", mod_revision: String(revision + 1))
    }

    /// The revision a commit sent now names in its fence compare: as far as the backend knows, its
    /// own key changed at this revision or before.
    var fenceRevision: Int64 { state.withLock { max($0.revision, $0.ownKeyRevision) } }

    /// Puts the backend's own key, so that no commit sent before can be applied any more; returns
    /// the revision of the put.
    ///
    /// Sent again when its answer is lost: one applied twice only moves the key on again.
    func putOwnKey() throws(Defaults.StorageError) -> Int64 {
        let marker = "{\"fence\":\"\(UUID().uuidString)\"}"
        let put = Etcd.PutRequest(key: Etcd.encode(prefix), value: Etcd.encode(marker))
        let request = Etcd.TxnRequest(compare: [], success: [Etcd.RequestOp(request_put: put)], failure: [])
        var unanswered: [String] = []
        for _ in 0...client.endpoints.count {
            switch try client.send("v3/kv/txn", request, as: Etcd.TxnResponse.self, backend: name) {
            case .answered(let response):
                let revision = response.header.revisionNumber
                state.withLock { $0.ownKeyRevision = max($0.ownKeyRevision, revision) }
                return revision
            case .unknown(let reason):
                unanswered.append(reason)
            }
        }
        throw .backendFailed(
            backend: name,
            reason: "no member answered a put of \(prefix) (\(unanswered.joined(separator: "; ")))"
        )
    }

    /// The changes of the keys `names` after the revision `after`, up to `end`, a revision that
    /// changed something under the prefix.
    ///
    /// Read through a watch of the prefix from `after + 1`: etcd delivers every change since, the
    /// removals too (which a read at an older revision cannot show), in order, until the one at
    /// `end`. One connection, however many changes there were.
    ///
    /// - Throws: When no member delivered it within the call timeout.
    func history(
        of names: Set<String>,
        after: Int64,
        through end: Int64
    ) throws(Defaults.StorageError) -> History {
        guard after < end else { return .changes([:]) }
        let request = Etcd.WatchCreateRequest(
            create_request: .init(
                key: Etcd.encode(prefix),
                range_end: Etcd.encode(Etcd.rangeEnd(of: prefix)),
                start_revision: String(after + 1)
            )
        )
        var failures: [String] = []
        let first = client.preferredIndex
        for offset in 0..<client.endpoints.count {
            let index = (first + offset) % client.endpoints.count
            let reader = HistoryReader(names: names, end: end, backend: self)
            do {
                let task = try client.startWatch(request, at: index, heartbeat: heartbeat) { reader.take($0) }
                let deadline = task.eventLoop.scheduleTask(in: client.timeout) { task.cancel() }
                let ended = Result { try task.futureResult.wait() }
                deadline.cancel()
                switch reader.outcome {
                case .reached: return .changes(reader.changes)
                case .compacted: return .compacted
                case .failed(let reason): failures.append("\(client.endpoints[index].absoluteString): \(reason)")
                case .reading:
                    let why = ended.failure.map { "\(client.explained($0, at: index))" } ?? "it ended"
                    failures.append("\(client.endpoints[index].absoluteString): \(why)")
                }
            } catch {
                failures.append("\(client.endpoints[index].absoluteString): \(error)")
            }
        }
        throw .backendFailed(
            backend: name,
            reason: "the history of \(prefix) could not be read (\(failures.joined(separator: "; ")))"
        )
    }
}

/// Takes in a watch's messages until the revision asked for: the changes of some keys.
///
/// Called on the event loop, read once the watch has ended.
private final class HistoryReader: Sendable {
    enum Outcome {
        case reading
        case reached
        case compacted
        case failed(String)
    }

    private let names: Set<String>
    private let end: Int64
    private let backend: EtcdBackend
    private let state = Mutex<(changes: [String: [Change]], outcome: Outcome)>(([:], .reading))

    init(names: Set<String>, end: Int64, backend: EtcdBackend) {
        self.names = names
        self.end = end
        self.backend = backend
    }

    var outcome: Outcome { state.withLock { $0.outcome } }
    var changes: [String: [Change]] { state.withLock { $0.changes } }

    func take(_ message: Etcd.WatchMessage) -> EtcdClient.WatchVerdict {
        guard let result = message.result else { return .more }
        if let compacted = result.compact_revision.flatMap(Int64.init), compacted > 0 {
            state.withLock { $0.outcome = .compacted }
            return .end
        }
        if result.canceled == true {
            let reason = "etcd canceled the watch: \(result.cancel_reason ?? "no reason given")"
            state.withLock { $0.outcome = .failed(reason) }
            return .fail(reason)
        }
        var reached = false
        var taken: [(String, Change)] = []
        for event in result.events ?? [] {
            let revision = event.kv.mod_revision.flatMap(Int64.init) ?? 0
            if revision >= end { reached = true }
            guard revision <= end, let name = backend.settingName(event.kv.key), names.contains(name) else { continue }
            let removed = event.type == "DELETE"
            let value = removed ? nil : try? backend.parse(event.kv.value, of: name).get()
            taken.append((name, Change(revision: revision, value: value, removed: removed)))
        }
        state.withLock { state in
            for (name, change) in taken { state.changes[name, default: []].append(change) }
            if reached { state.outcome = .reached }
        }
        return reached ? .end : .more
    }
}

extension Result {
    /// The error, if it failed.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
