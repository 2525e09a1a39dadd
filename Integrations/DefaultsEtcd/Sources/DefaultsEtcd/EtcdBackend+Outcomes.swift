import Defaults
import Foundation

/// A write whose answer was lost, remembered until its outcome is known.
///
/// etcd may or may not have applied it, and may still apply it later (a member that stalled holds
/// the request, and applies it when it goes on): until then, any commit of its key first finds out
/// what became of it, so it is applied once, and never sent again over a later write.
///
/// Also a write of a commit's piece that etcd stored before a later piece failed (``appliedAt``
/// set): the suite sends the whole commit again, and the write is not stored twice.
struct UnsettledWrite {
    /// What it wrote to the key; `nil`: it removed the key.
    var value: Defaults.JSONValue?
    /// The newest revision the backend had seen when it was first sent: it was applied after it,
    /// if at all.
    var sentAfter: Int64
    /// The mod revision its compare required of the key (0: absent).
    var guardRevision: Int64
    /// Why its outcome is unknown, for the message of a commit that cannot find it out.
    var reason: String
    /// The revision it is known applied at (the watch delivered it, or etcd answered it);
    /// `nil` while not known.
    var appliedAt: Int64?
    /// Whether etcd answered it: no request of it can be held anywhere. (One the watch delivered
    /// may be another party's write of the same value: this one may be held yet.)
    var answered = false
}

/// Writes whose answer was lost: remembered, and found out before anything of their keys is
/// sent again, whatever the watch delivered meanwhile.
///
/// Finding out is exact: the backend first puts its own key (the prefix itself), which every commit
/// compares, so no request sent before can be applied any more (see ``fenceCompare(after:)``); then
/// it reads the prefix's history, from the revision the write was sent at to that put, through a
/// watch, which has every change, removals included.
extension EtcdBackend {
    /// Remembers the writes of `pending`, sent after the revision `seen` with the compares of
    /// `guards`, as unsettled.
    func noteUnanswered(
        _ pending: [String: Defaults.JSONValue?],
        sentAfter seen: Int64,
        guards: [String: Int64],
        reason: String
    ) {
        state.withLock { state in
            state.unansweredForTesting += 1
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

    /// Remembers the writes of `pieces`, which etcd stored, each at its revision: the suite sends
    /// the commit again after a later piece failed, and they must not be stored twice.
    func noteStored(_ pieces: [(values: [String: Defaults.JSONValue?], revision: Int64)]) {
        state.withLock { state in
            for (values, revision) in pieces {
                for (name, value) in values {
                    state.unsettled[name] = UnsettledWrite(
                        value: value,
                        sentAfter: revision - 1,
                        guardRevision: 0,
                        reason: "stored before a later piece of its commit failed",
                        appliedAt: revision,
                        answered: true
                    )
                }
            }
        }
    }

    /// Settles the unsettled writes of the keys of `pending`, before anything of them is sent.
    ///
    /// The keys are read; then, unless etcd answered each write, the backend's own key is put,
    /// after which no request sent before can be applied, the prefix's history is read from the
    /// revision the first write not known applied was sent at to that put, and the keys again. A
    /// write that is in that history is applied; one that is not never will be.
    ///
    /// A key whose write was applied, and that `pending` writes the same value to (the suite
    /// sends again what it was not told was stored), leaves `pending`: what the key holds now
    /// stays, and the suite is told of it if it is another's later value (not if it does not
    /// parse: the suite keeps the last good one). A key whose history etcd compacted meanwhile
    /// cannot be found out: its write is not sent again, and the error handler is told. Every
    /// other key is compared at the revision it has now.
    ///
    /// - Throws: When the own key cannot be put, or the keys or their history cannot be read: the
    ///   writes stay unsettled, and so do the suite's.
    func settleUnanswered(
        _ pending: inout [String: Defaults.JSONValue?],
        guards: inout [String: Int64]
    ) throws(Defaults.StorageError) {
        let writes = state.withLock { state in
            pending.keys.sorted().compactMap { name in state.unsettled[name].map { (name: name, write: $0) } }
        }
        guard !writes.isEmpty else { return }
        let reason = writes.first { $0.write.appliedAt == nil }?.write.reason ?? writes[0].write.reason
        func unknown(_ error: Defaults.StorageError) -> Defaults.StorageError {
            if case .writeRefused = error { return error }
            return .backendFailed(
                backend: name,
                reason: "a commit may or may not be stored (\(reason)), and finding out failed: \(error.shortReason)"
            )
        }
        let searched = writes.filter { $0.write.appliedAt == nil }
        let fenced = writes.contains { !$0.write.answered }
        var history: [String: [Change]] = [:]
        var compacted = false
        var found: [String: (value: Defaults.JSONValue?, modRevision: Int64)]
        do throws(Defaults.StorageError) {
            // Read first: a member that does not answer fails this, before anything is sent to it
            // that it could hold.
            found = try fetch(writes.map(\.name))
            if fenced {
                let fence = try putOwnKey()
                if !searched.isEmpty {
                    let from = searched.map { max($0.write.sentAfter, $0.write.guardRevision) }.min() ?? 0
                    switch try self.history(of: Set(searched.map(\.name)), after: from, through: fence) {
                    case .changes(let changes): history = changes
                    case .compacted: compacted = true
                    }
                }
                // What the keys hold now that nothing sent before can change them.
                found = try fetch(writes.map(\.name))
            }
        } catch {
            throw unknown(error)
        }
        var current: [String: Defaults.JSONValue?] = [:]
        var lost: [String] = []
        for (name, write) in writes {
            let now = found[name]
            let applied: Bool
            if write.appliedAt != nil {
                applied = true
            } else if compacted {
                // Not sent again: it may have been stored, and storing it twice could put it over a
                // later write. Said unless the key holds it anyway.
                applied = true
                if now.map({ $0.value != write.value }) ?? (write.value != nil) { lost.append(name) }
            } else {
                applied = Self.wasApplied(write, in: history[name] ?? [], now: now)
            }
            guards[name] = now?.modRevision ?? 0
            state.withLock { state in _ = state.unsettled.removeValue(forKey: name) }
            guard applied, let value = pending[name], value == write.value else { continue }
            pending.removeValue(forKey: name)
            // A value that does not parse: the suite keeps the last good one, as from the watch.
            if let now, now.value == nil { continue }
            let held = now?.value ?? nil
            if held != value { current[name] = .some(held) }
        }
        let updates = state.withLock { $0.updates }
        if !lost.isEmpty {
            updates?
                .report(
                    .backendFailed(
                        backend: name,
                        reason:
                            "a commit may or may not be stored (\(reason)), and etcd compacted the history that would say: it is not sent again, and \(lost.joined(separator: ", ")) read what etcd holds"
                    )
                )
        }
        // The suite holds the values it wrote, and kept them over what the watch said of their
        // keys meanwhile: it is told what they hold. No revision, so it is not dropped as older
        // than one the suite has seen.
        if !current.isEmpty { updates?.changed(current) }
    }

    /// Whether `write` is in `changes`, the history of its key after it was sent (up to a put of
    /// the backend's own key, after which it cannot be applied); the key holds `now` (`nil`: absent).
    ///
    /// Another party's write of the same value counts too: the key held the write's value after
    /// it was sent, which is what storing it again would give.
    static func wasApplied(
        _ write: UnsettledWrite,
        in changes: [Change],
        now: (value: Defaults.JSONValue?, modRevision: Int64)?
    ) -> Bool {
        let untouched = max(write.sentAfter, write.guardRevision)
        let since = changes.filter { $0.revision > untouched }
        guard let value = write.value else {
            // A removal: the key is absent, or was removed since (and written again after).
            return now == nil || since.contains { $0.removed }
        }
        return since.contains { !$0.removed && $0.value == value }
    }

    /// Whether the event of the key `name`, at `modRevision`, with `value`, is the key's
    /// unsettled write; then it is noted applied, as the backend's own.
    ///
    /// Called under the state lock. The event is reported all the same: the suite keeps a value
    /// it has not committed over a report, and one that no longer holds the value (its commit
    /// since was refused) must hear of it.
    static func takeUnsettled(
        _ name: String,
        _ value: Defaults.JSONValue?,
        at modRevision: Int64,
        in state: inout State
    ) {
        guard let write = state.unsettled[name], write.appliedAt == nil, modRevision > write.sentAfter,
            write.value == value
        else { return }
        state.unsettled[name]?.appliedAt = modRevision
    }
}
