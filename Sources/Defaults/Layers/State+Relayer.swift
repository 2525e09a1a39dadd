import Foundation

extension Store {
    /// What a change beneath or above the user's values did to reads: a system file, a secret's
    /// file or a migration read through changed what some keys read.
    ///
    /// The one outcome of the state's methods that change a layer (``Store/State/replaceSystemLayer(_:with:)``,
    /// ``Store/State/replaceSecrets(with:)``, ``Store/State/installMigrationLayer(_:)``); the store
    /// tells it with ``Store/tell(_:)`` after its lock.
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
    /// Makes the system file at `index` bring `layer` now, and returns what reads saw change.
    ///
    /// A key changes for reads when its system value changes and neither the user's file nor this
    /// run's overrides set it, or when it is locked or unlocked (even when the value stays).
    mutating func replaceSystemLayer(_ index: Int, with layer: SystemLayers.Layer) -> Store.ReadsChanged {
        var outcome = Store.ReadsChanged()
        guard let before = layered.systemFiles else { return outcome }
        var after = before
        after.replace(index, with: layer)
        var names: Set<String> = []
        for (name, value) in after.values where before.values[name] != value { names.insert(name) }
        for name in before.values.keys where after.values[name] == nil { names.insert(name) }
        for name in after.locks.keys where before.locks[name] == nil { names.insert(name) }
        for name in before.locks.keys where after.locks[name] == nil { names.insert(name) }
        let seenBefore = names.map { seen($0, under: before) }
        layered.systemFiles = after
        guard !names.isEmpty else { return outcome }
        generation &+= 1
        let isAllReported = Defaults.hasEveryChangeSinks || suiteObservers != nil
        for (name, old) in zip(names, seenBefore) {
            let new = seen(name, under: after)
            let entry = keys[Defaults.Suite.HashedName(name)]
            // The decoded value kept is that of the stored value reads fall back to when no
            // override stands in front (the lock's, the user's, the system's): forgotten when
            // that changed, even if an override hides it from reads until now.
            if old.beneath != new.beneath { outcome.dropped.append(forgetDecoded(name)) }
            // A lock added or lifted is a change even at the same value: what can be written
            // changed, and widgets bound to the key follow it at once.
            let lockChanged = (before.locks[name] == nil) != (after.locks[name] == nil)
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

    /// What reads of `name` see with the system files `layers` beneath the user's: a lock's value,
    /// an override's stored form (and its decoded value, when it was read already), or the user's
    /// value, or else the system value; and the stored value beneath any override.
    private mutating func seen(
        _ name: String,
        under layers: SystemLayers
    ) -> (value: JSONValue?, decoded: Defaults.Suite.CacheEntry?, isOverridden: Bool, beneath: JSONValue?) {
        let beneath = layers.seen(name, stored: values[name])
        if layers.locks[name] != nil { return (beneath, nil, true, beneath) }
        if let candidate = layered.overrideCandidates(for: name).first {
            return (candidate.forms.first, layered.overrides!.cache[name], true, beneath)
        }
        return (beneath, nil, false, beneath)
    }
}
