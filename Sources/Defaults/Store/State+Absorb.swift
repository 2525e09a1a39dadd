import Foundation

// Another process's change (or the backend's word on everything), taken into memory: decided
// under the store's lock by `absorb`, acted on after it by ``Store/absorbOutside(_:isWhole:revision:leaving:)``.
extension Store.State {
    /// A key, its new stored value, and its change when reads see one.
    ///
    /// A struct, not a tuple: an array of tuples holding optionals was copied and destroyed
    /// through the runtime's generic tuple witnesses, element by element.
    struct Listed {
        let name: String
        let stored: JSONValue?
        /// The change, when reads see one that someone may be told of or that moves a decoded
        /// value; `nil` otherwise.
        let change: Defaults.StoredChange?
        /// Whether reads see a change, also when no ``change`` is made for it (nothing is kept
        /// beside the key and nobody can be told).
        let isSeen: Bool
    }

    /// What ``absorb(_:isWhole:revision:leaving:found:into:)`` did, for the caller to act on
    /// after the lock.
    struct Absorbed {
        /// Each key considered: its change holds its observers, released by the caller after
        /// the lock.
        var listed: [Listed] = []
        /// The keys that changed only their stored value (nothing kept beside them, nobody to
        /// tell), taken at once and counted, not listed.
        var plainChanges = 0
        /// What leaves memory, for the caller to release after the lock.
        var dropped: [Defaults.Suite.CacheEntry?]
    }

    /// Takes `values` (`nil`: removed) from outside into memory, and returns the changes someone
    /// can be told of, with the observers of the whole suite.
    ///
    /// What ``Store/absorbOutside(_:isWhole:revision:leaving:)`` says, decided: keys changed here
    /// and not committed yet keep their values; a value of none of the types its key is read as
    /// (`found`) is taken as stored while reads keep the last good one; with `isWhole` the keys
    /// `values` lacks are removed, but for those in `kept`. What it did goes into `absorbed`
    /// (``Absorbed``).
    mutating func absorb(
        _ values: [String: JSONValue?],
        isWhole: Bool,
        revision: UInt64?,
        leaving kept: Set<String>,
        found: RefusedChanges,
        into absorbed: inout Absorbed
    ) -> ([String: Defaults.StoredChange], (any Defaults.ObserverSlot)?) {
        if let revision {
            // A whole report is the backend's word on everything, even at an older revision
            // (its history began again: a database restored from a backup); a report of some
            // keys is dropped unless it is newer.
            if !isWhole, let known = backendRevision, revision <= known { return ([:], nil) }
            backendRevision = revision
        }
        var keptGood: [(String, Defaults.Suite.CacheEntry)] = []
        absorbed.listed.reserveCapacity(values.count)
        let hasLocalChanges = flushing.isDirty
        let isAllReported = Defaults.hasEveryChangeSinks || suiteObservers != nil
        // Nobody gets every change, no layer, nothing refused or decoded: a key nothing is kept
        // beside changes its stored value and nothing else, taken with one search of the values
        // (most keys of a file another process wrote, in a program that reads few of them).
        let isPlain = !isAllReported && layered.layering.isEmpty && found.refused.isEmpty && found.decoded.isEmpty
        if isPlain { self.values.reserveCapacity(self.values.count + values.count) }
        // What is kept beside a changed key, found with one search; only for keys that
        // changed, and searched by a name hashed once.
        func consider(_ name: String, _ new: JSONValue?) {
            if isPlain, table.keys.index(forKey: Defaults.Suite.HashedName(name)) == nil {
                let old = new.map { self.values.updateValue($0, forKey: name) } ?? self.values.removeValue(forKey: name)
                if old != new { absorbed.plainChanges += 1 }
                return
            }
            let old = self.values[name]
            guard old != new else { return }
            let entry = table.keys[Defaults.Suite.HashedName(name)]
            guard !hasLocalChanges || entry?.isChanged != true else { return }
            if !found.refused.isEmpty, let new, found.refused[name] == new, !layered.isLocked(name) {
                // Of none of the types the key is read as: memory takes the value as
                // stored (a write, or an exclusive commit's compare, is made against it), and
                // typed reads keep the last good one, which was the old value: the key's
                // observers are not told, but those of the whole suite are, which read its
                // stored values (observeStoredValues, `defaults watch`): its JSON changed.
                let kept = entry?.decoded.map { $0.box != nil } ?? false
                if !kept, let good = found.lastGood[name] { keptGood.append((name, good)) }
                let change =
                    suiteObservers != nil
                    ? Defaults.StoredChange(
                        old: layered.seen(name, stored: old),
                        new: layered.seen(name, stored: new),
                        oldDecoded: nil,
                        newDecoded: nil,
                        observers: nil
                    ) : nil
                absorbed.listed.append(Listed(name: name, stored: new, change: change, isSeen: false))
                return
            }
            // Nothing kept beside the key, nothing decoded for it, nobody to tell: its value is
            // all that changes (as above, with something refused or decoded for other keys).
            if entry == nil, !isAllReported, layered.layering.isEmpty,
                found.decoded.isEmpty || found.decoded[name] == nil
            {
                absorbed.listed.append(Listed(name: name, stored: new, change: nil, isSeen: true))
                return
            }
            // What reads see of the key: a locked key does not change, and a system
            // file's value stands in for the user's where the user's file has none.
            let seenOld = layered.seen(name, stored: old)
            let seenNew = layered.seen(name, stored: new)
            guard layered.layering.isDisjoint(with: .seenByReads) || (!layered.isLocked(name) && seenOld != seenNew)
            else {
                absorbed.listed.append(Listed(name: name, stored: new, change: nil, isSeen: false))
                return
            }
            let change = Defaults.StoredChange(
                old: seenOld,
                new: seenNew,
                oldDecoded: entry?.decoded,
                // Decoded from the stored value, which reads see when no layer is there.
                newDecoded: layered.layering.contains(.systemFiles) || layered.isSecret(name)
                    || found.decoded.isEmpty ? nil : found.decoded[name],
                observers: entry?.observers
            )
            absorbed.listed.append(Listed(name: name, stored: new, change: change, isSeen: true))
        }
        for (name, new) in values { consider(name, new) }
        if isWhole {
            var gone: [String] = []
            for name in self.values.keys where values.index(forKey: name) == nil && !kept.contains(name) {
                gone.append(name)
            }
            for name in gone { consider(name, nil) }
        }
        for (name, good) in keptGood {
            absorbed.dropped.append(table.keepDecoded(good, for: Defaults.Suite.HashedName(name)))
        }
        if absorbed.plainChanges > 0 { generation &+= 1 }
        return take(absorbed.listed, dropping: &absorbed.dropped)
    }

    /// Puts `listed` (a key, its new stored value, and its change when reads see one) into memory,
    /// and returns the changes someone can be told of, with the observers of the whole suite; what
    /// leaves memory goes into `dropped`, for the caller to release after the lock.
    @inline(__always)
    private mutating func take(
        _ listed: [Listed],
        dropping dropped: inout [Defaults.Suite.CacheEntry?]
    ) -> ([String: Defaults.StoredChange], (any Defaults.ObserverSlot)?) {
        guard !listed.isEmpty else { return ([:], nil) }
        // The event lists only changes someone can be told of: those of observed keys,
        // unless a sink gets every change or the whole suite is observed. A file of thousands of
        // keys nobody observes makes no event of thousands of changes.
        let isAllReported = Defaults.hasEveryChangeSinks || suiteObservers != nil
        self.values.reserveCapacity(self.values.count + listed.count)
        var changes: [String: Defaults.StoredChange] = .init(minimumCapacity: isAllReported ? listed.count : 0)
        for item in listed {
            let name = item.name
            self.values[name] = item.stored
            // A change reads do not see keeps the key's decoded value and tells nobody.
            guard let change = item.change else { continue }
            // Only a key that had a decoded value kept has one to forget; one decoded from the
            // new value is kept in its place.
            if let newDecoded = change.newDecoded {
                dropped.append(table.keepDecoded(newDecoded, for: Defaults.Suite.HashedName(name)))
            } else if change.oldDecoded != nil {
                dropped.append(table.forgetDecoded(name))
            }
            if isAllReported || change.observers != nil {
                changes[name] = change
            } else if change.oldDecoded != nil {
                dropped.append(change.oldDecoded)
            }
        }
        generation &+= 1
        guard !changes.isEmpty else { return ([:], nil) }
        guard layered.layering.contains(.overrides) else { return (changes, suiteObservers) }
        let reported = layered.reported(changes)
        for (name, change) in changes where reported[name] == nil { dropped.append(change.oldDecoded) }
        return (reported, suiteObservers)
    }
}
