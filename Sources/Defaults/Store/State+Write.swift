import Foundation

// A write of this process, decided under the store's lock: ``Store/commit(_:decoded:commitsLater:removesEverything:all:refused:)``
// takes the lock and acts after it.
extension Store.State {
    /// Applies the changes `makeWrites` computes from the stored values, as one change.
    ///
    /// `decoded`, for a write of one key, is the written value to keep as the decoded one; with
    /// `removesEverything` (a `removeAll()`), the next commit removes every key the backend holds.
    /// Every change made, reported or not, goes into `all` (for the caller to release after the
    /// lock), each write refused into `refused`.
    ///
    /// - Returns: The changes to report, whether the caller must arm the timer, and the whole
    ///   state's observers; `nil` when nothing changed.
    mutating func commit(
        _ makeWrites: ([String: JSONValue]) -> [String: JSONValue?],
        decoded: Defaults.Suite.CacheEntry?,
        commitsLater: Bool,
        removesEverything: Bool,
        all: inout [String: Defaults.StoredChange],
        refused: inout [(name: String, refusal: Defaults.Suite.WriteRefusal)]
    ) -> (changes: [String: Defaults.StoredChange], flush: Bool, suiteObservers: (any Defaults.ObserverSlot)?)? {
        var changes: [String: Defaults.StoredChange] = [:]
        for (name, new) in makeWrites(values) {
            // `decoded` is only given for a write of one key.
            let newDecoded = decoded
            let outcome = applyWrite(
                new,
                named: Defaults.Suite.HashedName(name),
                decoded: newDecoded,
                marksChanged: commitsLater
            )
            let (old, oldDecoded, observers): (JSONValue?, Defaults.Suite.CacheEntry?, (any Defaults.ObserverSlot)?)
            switch outcome {
            case .unchanged:
                continue
            case .refused(let refusal):
                refused.append((name, refusal))
                continue
            case .changed(let changedFrom, let decodedBefore, let keyObservers):
                (old, oldDecoded, observers) = (changedFrom, decodedBefore, keyObservers)
            }
            // What reads see: where the user's file has no value, a system file's stands in.
            let seenOld = layered.seen(name, stored: old)
            let seenNew = layered.seen(name, stored: new)
            let change = Defaults.StoredChange(
                old: seenOld,
                new: seenNew,
                oldDecoded: oldDecoded,
                newDecoded: newDecoded,
                observers: observers
            )
            guard seenOld != seenNew else {
                all[name] = change
                continue
            }
            changes[name] = change
        }
        // A file this process may not write is not cleared either (the removals were refused).
        let clears = removesEverything && commitsLater && layered.readOnlyReason == nil
        if clears {
            flushing.removeAll()
            // The record of migrations, which `removeAll()` keeps, is written again after
            // the file is cleared.
            if values[Defaults.Suite.migrationRecordName] != nil {
                markChanged(Defaults.Suite.migrationRecordName)
            }
        }
        guard !changes.isEmpty || !all.isEmpty || clears else { return nil }
        generation &+= 1
        // Reads of an overridden key return the override, which did not change.
        let told = self.layered.reported(changes)
        all.merge(changes) { kept, _ in kept }
        let schedule = commitsLater && flushing.machine.changed()
        return (told, schedule, suiteObservers)
    }
}

extension Store.State {
    /// Takes the writes a system file's lock, a read-only file or a secret's name refuses out of
    /// `writes`, for ``Store/refuse(_:)``.
    ///
    /// - Returns: Those that would have changed something.
    mutating func refuse(_ writes: inout [String: JSONValue?]) -> [(name: String, refusal: Defaults.Suite.WriteRefusal)]
    {
        guard !layered.layering.isDisjoint(with: [.refusals, .secrets]) else { return [] }
        var refused: [(name: String, refusal: Defaults.Suite.WriteRefusal)] = []
        for (name, new) in writes {
            guard let refusal = layered.refusal(ofWriteTo: name, isRemoval: new == nil) else { continue }
            writes[name] = nil
            if values[name] != new { refused.append((name, refusal)) }
        }
        return refused
    }
}
