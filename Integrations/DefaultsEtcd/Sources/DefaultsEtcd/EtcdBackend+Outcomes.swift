import Defaults
import Foundation

/// A write whose answer was lost, remembered until its outcome is known.
///
/// etcd may or may not have applied it, and may still apply it later (a member that stalled holds
/// the request, and applies it when it goes on): until then, any commit of its key first finds out
/// what became of it, so it is applied once, and never sent again over a later write.
struct UnsettledWrite {
    /// What it wrote to the key; `nil`: it removed the key.
    var value: Defaults.JSONValue?
    /// The newest revision the backend had seen when it was first sent: it was applied after it,
    /// if at all.
    var sentAfter: Int64
    /// The mod revision its compare required of the key (0: absent).
    ///
    /// The write can be applied only while the key is there.
    var guardRevision: Int64
    /// Why its outcome is unknown, for the message of a commit that cannot find it out.
    var reason: String
    /// The revision it was found applied at, by the watch; `nil` while not known.
    var appliedAt: Int64?
}

/// Writes whose answer was lost: remembered, and found out before anything of their keys is
/// sent again, whatever the watch delivered meanwhile.
extension EtcdBackend {
    /// What became of a write whose answer was lost.
    enum WriteOutcome: Equatable {
        /// It was applied (or the key holds its value since it was sent, which is the same).
        case applied
        /// It was not applied; `mayStillBe` while the key is still where its compare required,
        /// and a member may hold the request yet.
        case notApplied(mayStillBe: Bool)
    }

    /// Remembers the writes of `pending`, sent after the revision `seen` with the compares of
    /// `guards`, as unsettled.
    func noteUnanswered(
        _ pending: [String: Defaults.JSONValue?],
        sentAfter seen: Int64,
        guards: [String: Int64],
        reason: String
    ) {
        state.withLock { state in
            for (name, value) in pending {
                var write = UnsettledWrite(
                    value: value,
                    sentAfter: seen,
                    guardRevision: guards[name] ?? 0,
                    reason: reason
                )
                // The same value sent before, unsettled: either may be applied, so its history is
                // read from the first.
                if let earlier = state.unsettled[name], earlier.value == value, earlier.appliedAt == nil {
                    write.sentAfter = min(earlier.sentAfter, seen)
                }
                state.unsettled[name] = write
            }
        }
    }

    /// Settles the unsettled writes of the keys of `pending`, before anything of them is sent:
    /// the keys are read, and each one's history from the revision its write was sent at.
    ///
    /// A key whose write was applied, and that `pending` writes the same value to (the suite
    /// sends again what it was not told was stored), leaves `pending`: what the key holds now
    /// stays, and the suite is told of it if it is another's later value. The other keys are
    /// compared at the revision they have now.
    ///
    /// - Throws: When the keys or their history cannot be read: the writes stay unsettled, and
    ///   so do the suite's.
    func settleUnanswered(
        _ pending: inout [String: Defaults.JSONValue?],
        guards: inout [String: Int64]
    ) throws(Defaults.StorageError) {
        let writes = state.withLock { state in
            pending.keys.compactMap { name in state.unsettled[name].map { (name: name, write: $0) } }
        }
        guard !writes.isEmpty else { return }
        func unknown(_ error: Defaults.StorageError) -> Defaults.StorageError {
            .backendFailed(
                backend: name,
                reason:
                    "a commit may or may not be stored (\(writes[0].write.reason)), and finding out failed: \(error.shortReason)"
            )
        }
        let found: [String: (value: Defaults.JSONValue?, modRevision: Int64)]
        do {
            found = try fetch(writes.map(\.name).sorted())
        } catch {
            throw unknown(error)
        }
        var current: [String: Defaults.JSONValue?] = [:]
        for (name, write) in writes {
            let outcome: WriteOutcome
            do {
                outcome = try self.outcome(of: write, named: name, now: found[name])
            } catch {
                throw unknown(error)
            }
            guards[name] = found[name]?.modRevision ?? 0
            state.withLock { state in
                // Not applied while the key is where its compare required: a member may hold
                // it yet; what is sent now is compared there too, so only one of them is.
                if outcome != .notApplied(mayStillBe: true) { state.unsettled.removeValue(forKey: name) }
            }
            guard outcome == .applied, let value = pending[name], value == write.value else { continue }
            pending.removeValue(forKey: name)
            let now = found[name]?.value ?? nil
            if now != value { current[name] = .some(now) }
        }
        // The suite holds the values it wrote, and kept them over what the watch said of their
        // keys meanwhile: it is told what they hold. No revision, so it is not dropped as older
        // than one the suite has seen.
        if !current.isEmpty { state.withLock { $0.updates }?.changed(current) }
    }

    /// What became of `write` to the key `name`, which holds `now` (`nil`: absent).
    func outcome(
        of write: UnsettledWrite,
        named name: String,
        now: (value: Defaults.JSONValue?, modRevision: Int64)?
    ) throws(Defaults.StorageError) -> WriteOutcome {
        if write.appliedAt != nil { return .applied }
        // No revision the write could have been applied at is this old.
        let untouched = max(write.sentAfter, write.guardRevision)
        guard let now else {
            // Absent: a removal holds. A put was not applied, or was removed since, which this
            // cannot tell (no history of a deleted key is read): it is sent again.
            if write.value == nil { return .applied }
            return .notApplied(mayStillBe: write.guardRevision == 0)
        }
        if write.value != nil, now.value == write.value { return .applied }
        if now.modRevision <= untouched {
            return .notApplied(mayStillBe: now.modRevision == write.guardRevision)
        }
        // Changed since it was sent: by the write, and by another after it, or by another only,
        // whose write made the compare fail. The key's history from the revision the write was
        // sent at says which; the key has left the revision the write compared, so it can never
        // be applied later.
        return try held(name, write.value, between: untouched, and: now.modRevision)
            ? .applied : .notApplied(mayStillBe: false)
    }

    /// Whether the event of the key `name`, at `modRevision`, with `value`, is the key's
    /// unsettled write; then it is noted applied, as the backend's own.
    ///
    /// Called under the state lock.
    /// An event of another party that wrote the same value since is taken for it too, to the
    /// same end: the key holds the write's value, after it was sent.
    static func takeUnsettled(
        _ name: String,
        _ value: Defaults.JSONValue?,
        at modRevision: Int64,
        in state: inout State
    ) -> Bool {
        guard let write = state.unsettled[name], write.appliedAt == nil, modRevision > write.sentAfter,
            write.value == value
        else { return false }
        state.unsettled[name]?.appliedAt = modRevision
        state.known[name] = (value, modRevision)
        return true
    }
}
