import Foundation

extension Store.State {
    /// Starts a working-out of the migration layer: what it works from, outside the lock.
    ///
    /// With `isAdding` (keys' migrations just added), the entries as they are come too, when
    /// they are up to date with the values and no other working-out is under way.
    mutating func startWorkingOutMigrationLayer(adding isAdding: Bool) -> MigrationLayer.Start {
        let layer = layered.migrations!
        let isCurrent = layer.valuesGeneration == generation && layer.installed == layer.started
        layered.migrations!.started += 1
        return MigrationLayer.Start(
            ticket: layered.migrations!.started,
            readThroughs: layer.readThroughs,
            values: values,
            generation: generation,
            base: isAdding && isCurrent ? (layer.entries, layer.installed) : nil
        )
    }

    /// Whether a final migration of `name` from `formerly` is settled as memory holds the
    /// store: nothing is left to move (the value moved already, or there never was one).
    ///
    /// The first look of a program whose migrations ran, for each key that declares one, and
    /// asked first outside any transaction (``Store/recordedState(of:formerly:convertsFrom:isFinal:in:)``):
    /// it needs no suite, so the look keeps no reference to one. Memory holds what the store
    /// held when it holds a record or the key's own value: a store that could not be read yet
    /// holds neither, and its migrations wait for its values.
    @inline(__always)
    mutating func isSettled(_ name: Defaults.Suite.HashedName, formerly: [String]) -> Bool {
        (holdsValue(named: Defaults.Suite.migrationRecordName) || holdsValue(named: name.text))
            && !formerly.contains(where: { holdsValue(named: $0) && $0 != name.text })
    }

    /// ``Store/recordedState(of:formerly:convertsFrom:isFinal:in:)``, under the lock.
    ///
    /// With `isSettledWhenMoved`, a key none of whose former names holds a value has nothing to
    /// move, once memory holds the store's record or the key's own value: it is answered as
    /// recorded, without the record being looked at.
    mutating func recordedState(
        of name: Defaults.Suite.HashedName,
        formerly: [String],
        convertsFrom: String?,
        in suite: Defaults.Suite,
        convertsOwnName: Bool,
        isSettledWhenMoved: Bool
    ) -> (isRecorded: Bool, formerHoldsValue: Bool, own: JSONValue?) {
        if openTransactions > 0, let scope = TransactionScope.find(for: suite) {
            let id = Defaults.Suite.migrationID(name: name.text, formerly: formerly, convertsFrom: convertsFrom)
            let record = scope.storedValue(named: Defaults.Suite.migrationRecordName)
            guard Defaults.Suite.record(record, contains: id) else { return (false, false, nil) }
            return (
                true, formerly.contains { $0 != name.text && scope.storedValue(named: $0) != nil },
                convertsOwnName ? scope.storedValue(named: name.text) : nil
            )
        }
        if isSettledWhenMoved, isSettled(name, formerly: formerly) { return (true, false, nil) }
        // Checked again once the values changed; made again only when the record did.
        if recordIndex?.generation != generation {
            let record = values[Defaults.Suite.migrationRecordName]
            let index = recordIndex.flatMap { $0.index.isIndex(of: record) ? $0.index : nil }
            recordIndex = (generation, index ?? RecordIndex(record))
        }
        guard recordIndex!.index.lists(name, formerly: formerly, convertsFrom: convertsFrom) else {
            return (false, false, nil)
        }
        return (
            true, formerly.contains { $0 != name.text && values.index(forKey: $0) != nil },
            convertsOwnName ? values[name.text] : nil
        )
    }

    /// Takes in the migration layer worked out outside the lock, and returns what reads saw
    /// change; `nil` when the values or the layer moved on meanwhile (to work it out again).
    mutating func installMigrationLayer(_ workedOut: MigrationLayer.WorkedOut) -> Store.ReadsChanged? {
        let (entries, ticket, base) = (workedOut.entries, workedOut.ticket, workedOut.base)
        let generation = workedOut.generation
        // A later working-out was taken in already: it saw later values.
        guard ticket > layered.migrations!.installed else { return Store.ReadsChanged() }
        if let base, layered.migrations!.installed != base || self.generation != generation { return nil }
        // Worked out from the values memory holds now: the next key's alone is worked out.
        let isCurrent = self.generation == generation
        layered.migrations!.valuesGeneration = generation
        let before = layered.migrations!.entries
        let names = Set(before.keys).union(entries.keys).filter { before[$0] != entries[$0] }
        // What reads saw: an older form stored under a converted key's name since its entry
        // was worked out was taken in without a change (`refusedChanges`), and reads kept the
        // converted value the entry made.
        let converted = layered.migrations!.convertedNames
        var kept: [String: JSONValue?] = [:]
        for name in names where converted.contains(name) {
            if let entry = before[name], entry.basedOn != values[name] { kept[name] = .some(entry.value) }
        }
        let outcome = relayer(names, seenBefore: kept) { layered in
            layered.migrations!.entries = entries
            layered.migrations!.installed = ticket
        }
        // Telling of the change moved the generation on, not the values.
        if isCurrent { layered.migrations!.valuesGeneration = self.generation }
        return outcome
    }
}
