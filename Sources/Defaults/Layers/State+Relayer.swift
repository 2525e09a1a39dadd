import Foundation

extension Store {
    /// What a change beneath or above the user's values did to reads: a system file, a secret's
    /// file or a migration read through changed what some keys read.
    ///
    /// The one outcome of a change of a layer, made on the one road for it
    /// (``Store/State/relayer(_:seenBefore:_:)``); the store tells it with ``Store/tell(_:)``
    /// after its lock.
    struct ReadsChanged {
        /// The changes someone can be told of.
        var changes: [String: Defaults.StoredChange] = [:]
        /// How many keys' reads changed, observed or not: for the activity observers.
        var count = 0
        /// The suite's observers, as the event carries them.
        var suiteObservers: (any Defaults.ObserverSlot)?
        /// What left memory, released after the lock (a decoded value may be an instance of a
        /// class of the user's, whose `deinit` is user code).
        var dropped: [Defaults.Suite.CacheEntry?] = []
    }

    /// Tells what a layer's change did to reads, as one external change, and releases what
    /// left memory, on the delivery queue.
    func tell(_ changed: consuming ReadsChanged) {
        if changed.count > 0 { noteActivity(.changedElsewhere(keys: changed.count)) }
        // Moved out, not copied: a copy left in `changed` would keep the values alive until this
        // returns, on this thread, racing the delivery (see ``deliverExternally(_:suiteObservers:releasing:and:)``).
        let changes = changed.changes
        let suiteObservers = changed.suiteObservers
        let dropped = changed.dropped
        changed = ReadsChanged()
        deliverExternally(consume changes, suiteObservers: consume suiteObservers, releasing: consume dropped)
    }
}

extension Store.State {
    /// What a read of a key sees, compared before and after a layer changes.
    struct Seen {
        /// What a read returns: an override's stored form, or else ``beneath``.
        var value: JSONValue?
        /// The override's decoded value, when it was read already.
        var decoded: Defaults.Suite.CacheEntry?
        /// Whether something stands in front of the user's value (an override, a lock, a secret).
        var isOverridden: Bool
        /// What a read falls back to when no override stands in front: a secret's, a lock's,
        /// the user's value (or what a migration read through makes of it), a system file's.
        var beneath: JSONValue?
        /// Whether a system file locks the key: a lock added or lifted is a change even at the
        /// same value, since what can be written changed.
        var isLockedBySystemFile: Bool
    }

    /// What reads of `name` see now (``Seen``).
    mutating func seen(_ name: String) -> Seen {
        let beneath = layeredValue(named: name)
        let isLockedBySystemFile = layered.systemFiles?.locks[name] != nil
        // A lock's value and a secret's stand in front of this run's overrides.
        if layered.isLocked(name) {
            return Seen(
                value: beneath,
                isOverridden: true,
                beneath: beneath,
                isLockedBySystemFile: isLockedBySystemFile
            )
        }
        if let candidate = layered.overrideCandidates(for: name).first {
            return Seen(
                value: candidate.forms.first,
                decoded: layered.overrides!.cache[name],
                isOverridden: true,
                beneath: beneath,
                isLockedBySystemFile: isLockedBySystemFile
            )
        }
        return Seen(value: beneath, isOverridden: false, beneath: beneath, isLockedBySystemFile: isLockedBySystemFile)
    }

    /// The one road by which a layer changes what reads see: system files, secrets and
    /// migrations read through each change ``layered`` here, with `change`, and return what
    /// reads of `names` saw change.
    ///
    /// A key changes for reads when what a read returns changes (``Seen``), or when a system
    /// file locks or unlocks it (even when the value stays); its decoded value is forgotten when
    /// what reads fall back to changed, even when an override hides it until now. `seenBefore`
    /// holds what reads saw of the names for which that is not what the layers say now (a
    /// migration's converted value, kept for reads).
    mutating func relayer(
        _ names: some Collection<String>,
        seenBefore: [String: JSONValue?] = [:],
        _ change: (inout Store.Layered) -> Void
    ) -> Store.ReadsChanged {
        var before: [Seen] = []
        before.reserveCapacity(names.count)
        for name in names {
            var seen = seen(name)
            if !seen.isOverridden, let kept = seenBefore[name] { (seen.value, seen.beneath) = (kept, kept) }
            before.append(seen)
        }
        change(&layered)
        var outcome = Store.ReadsChanged()
        guard !names.isEmpty else { return outcome }
        generation &+= 1
        let isAllReported = Defaults.hasEveryChangeSinks || suiteObservers != nil
        for (name, old) in zip(names, before) {
            let new = seen(name)
            // Taken before its decoded value may be forgotten: that is the old one.
            let entry = table.keys[Defaults.Suite.HashedName(name)]
            if old.beneath != new.beneath { outcome.dropped.append(table.forgetDecoded(name)) }
            let lockChanged = old.isLockedBySystemFile != new.isLockedBySystemFile
            guard old.value != new.value || lockChanged else { continue }
            outcome.count += 1
            guard isAllReported || entry?.observers != nil else { continue }
            outcome.changes[name] = Defaults.StoredChange(
                old: old.value,
                new: new.value,
                oldDecoded: old.decoded ?? (old.isOverridden ? nil : entry?.decoded),
                newDecoded: new.decoded,
                observers: entry?.observers
            )
        }
        outcome.suiteObservers = suiteObservers
        return outcome
    }

    /// Makes the system file at `index` bring `layer` now, and returns what reads saw change.
    mutating func replaceSystemLayer(_ index: Int, with layer: SystemLayers.Layer) -> Store.ReadsChanged {
        guard let before = layered.systemFiles else { return Store.ReadsChanged() }
        var after = before
        after.replace(index, with: layer)
        var names: Set<String> = []
        for (name, value) in after.values where before.values[name] != value { names.insert(name) }
        for name in before.values.keys where after.values[name] == nil { names.insert(name) }
        for name in after.locks.keys where before.locks[name] == nil { names.insert(name) }
        for name in before.locks.keys where after.locks[name] == nil { names.insert(name) }
        return relayer(names) { $0.systemFiles = after }
    }
}
