// What migrations (`Suite+Migration.swift`) ask of the store.
extension Store {
    /// The user's own stored value of `name`, without the layers beneath it; inside a transaction
    /// of `suite` on this task, the transaction's view.
    func userStoredValue(named name: String, in suite: Defaults.Suite) -> JSONValue? {
        state.withLock { state in
            if state.openTransactions > 0, let scope = TransactionScope.find(for: suite) {
                return scope.storedValue(named: name)
            }
            return state.values[name]
        }
    }

    /// Whether the user's record of migrations lists the migration of the key `name` (made of
    /// `formerly` and `convertsFrom`, see ``Defaults/Suite/migrationID(name:formerly:convertsFrom:)``),
    /// and, when it does, whether a former name holds a value nonetheless.
    ///
    /// Inside a transaction of `suite` on this task, the transaction's view. Allocates nothing
    /// while the record stays as it was: each key that declares a migration asks, and a record of
    /// 100 ids was searched 100 times.
    func recordedState(
        of name: HashedName,
        formerly: [String],
        convertsFrom: String?,
        in suite: Defaults.Suite
    ) -> (isRecorded: Bool, formerHoldsValue: Bool, own: JSONValue?) {
        // A type change under the key's own name: its value is looked at too, for an older form
        // an old version stored there after the conversion ran.
        let convertsOwnName = convertsFrom != nil && (formerly.isEmpty || formerly.contains(name.text))
        return state.withLock {
            $0.recordedState(
                of: name,
                formerly: formerly,
                convertsFrom: convertsFrom,
                in: suite,
                convertsOwnName: convertsOwnName
            )
        }
    }

    /// Whether any of `names` holds a user's value; inside a transaction of `suite` on this task,
    /// in the transaction's view.
    func holdsValue(underAnyOf names: [String], in suite: Defaults.Suite) -> Bool {
        state.withLock { state in
            if state.openTransactions > 0, let scope = TransactionScope.find(for: suite) {
                return names.contains { scope.storedValue(named: $0) != nil }
            }
            return names.contains { state.values[$0] != nil }
        }
    }

    /// Whether this process may not write the store, and the names it may not write: those a
    /// system file locks, and the secret keys.
    func migrationLimits() -> (readOnly: Bool, locked: Set<String>) {
        state.withLock { state in
            var locked = Set(state.layers.map { Array($0.locks.keys) } ?? [])
            if let secrets = state.secrets { locked.formUnion(secrets.values.keys) }
            return (state.readOnlyReason != nil, locked)
        }
    }
}

// The migrations read through (`Layers/MigrationLayer.swift`): worked out outside the lock from
// the user's values, taken in under it like a secret's change.
extension Store {
    /// Reads `readThroughs` through from now on, and works the layer out again.
    func readThrough(_ readThroughs: [MigrationLayer.ReadThrough]) {
        let added = state.withLock { state in
            if state.migrationLayer == nil { state.migrationLayer = MigrationLayer() }
            return readThroughs.filter { state.migrationLayer!.add($0) }
        }
        guard !added.isEmpty else { return }
        hasMigrationLayer.store(true, ordering: .releasing)
        // Keys' migrations, each for its own name, are worked out alone, over what the others
        // made: a program creating 100 renamed keys works out 100 of them, not 100 times 100.
        if added.allSatisfy({ $0.target != nil && $0.sources != nil }) {
            refreshMigrationLayer(adding: added)
        } else {
            refreshMigrationLayer()
        }
    }

    /// Stops reading the migrations `ids` names through (the store holds what they made), and
    /// works the layer out again.
    func stopReadingThrough(_ ids: Set<String>) {
        guard hasMigrationLayer.load(ordering: .acquiring) else { return }
        let removed = state.withLock { $0.migrationLayer?.remove(ids) ?? [] }
        if !removed.isEmpty { refreshMigrationLayer() }
    }

    /// Works the layer out again after a local commit, when migrations are read through here: a
    /// write of a former name, or a removal, changes what they make.
    func refreshMigrationLayerIfAny() {
        if hasMigrationLayer.load(ordering: .acquiring) { refreshMigrationLayer() }
    }

    /// Whether a change of `names` (of every name, when `isWhole`) may change the layer.
    func changesMigrationSources(_ names: some Sequence<String>, isWhole: Bool) -> Bool {
        state.withLock { state in
            guard let layer = state.migrationLayer else { return false }
            return isWhole || names.contains { layer.isSource($0) }
        }
    }

    /// Works the layer out again from the user's values, and reports the keys whose reads change
    /// as one external change, as a system file's change is reported.
    func refreshMigrationLayer() {
        refreshMigrationLayer(adding: nil)
    }

    /// ``refreshMigrationLayer()``; with `added`, only those (keys' migrations just added) are
    /// worked out, over the entries as they are, when those are up to date with the values and
    /// nothing changes them meanwhile (otherwise the whole layer is).
    private func refreshMigrationLayer(adding added: [MigrationLayer.ReadThrough]?) {
        let (ticket, readThroughs, values, generation, base) = state.withLock { state in
            let layer = state.migrationLayer!
            // Up to date: worked out from these values, and no working-out under way.
            let isCurrent = layer.valuesGeneration == state.generation && layer.installed == layer.started
            state.migrationLayer!.started += 1
            return (
                state.migrationLayer!.started, layer.readThroughs, state.values, state.generation,
                added != nil && isCurrent ? (layer.entries, layer.installed) : nil
            )
        }
        // The migrations are user code: run with no lock held.
        let entries: [String: MigrationLayer.Entry]
        if let added, let base {
            entries = MigrationLayer.entries(adding: added, to: base.0, from: values)
        } else {
            entries = MigrationLayer.entries(of: readThroughs, from: values)
        }
        var dropped: [CacheEntry?] = []
        var changedCount = 0
        var isStale = false
        let (changes, suiteObservers) = state.withLock { state in
            state.installMigrationLayer(
                entries,
                ticket: ticket,
                workedOutAt: generation,
                over: base?.1,
                isStale: &isStale,
                changedCount: &changedCount,
                dropping: &dropped
            )
        }
        if changedCount > 0 { noteActivity(.changedElsewhere(keys: changedCount)) }
        deliverExternally(consume changes, suiteObservers: consume suiteObservers, releasing: consume dropped)
        if isStale { refreshMigrationLayer(adding: nil) }
    }
}

extension Store.State {
    /// ``Store/recordedState(of:formerly:convertsFrom:in:)``, under the lock.
    mutating func recordedState(
        of name: Defaults.Suite.HashedName,
        formerly: [String],
        convertsFrom: String?,
        in suite: Defaults.Suite,
        convertsOwnName: Bool
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

    /// Takes in `entries`, the migration layer worked out outside the lock.
    ///
    /// `entries` were worked out from the values of `generation`, as working-out `ticket`; over
    /// `base`, the working-out they added to, when they did. Sets `isStale` when the values or
    /// the layer moved on meanwhile (to work it out again); returns the changes of the keys whose
    /// reads change, and counts them in `changedCount`; what leaves memory goes into `dropped`.
    mutating func installMigrationLayer(
        _ entries: [String: MigrationLayer.Entry],
        ticket: UInt64,
        workedOutAt generation: UInt64,
        over base: UInt64?,
        isStale: inout Bool,
        changedCount: inout Int,
        dropping dropped: inout [Defaults.Suite.CacheEntry?]
    ) -> ([String: Defaults.StoredChange], (any Defaults.ObserverSlot)?) {
        // A later working-out was taken in already: it saw later values.
        guard ticket > migrationLayer!.installed else { return ([:], nil) }
        if let base, migrationLayer!.installed != base || self.generation != generation {
            isStale = true
            return ([:], nil)
        }
        // Worked out from the values memory holds now: the next key's alone is worked out.
        let isCurrent = self.generation == generation
        migrationLayer!.valuesGeneration = generation
        let before = migrationLayer!.entries
        let names = Set(before.keys).union(entries.keys).filter { before[$0] != entries[$0] }
        // What reads saw: an older form stored under a converted key's name since its entry
        // was worked out was taken in without a change (`refusedChanges`), and reads kept the
        // converted value the entry made.
        let converted = migrationLayer!.convertedNames
        let seenBefore = names.map { name -> JSONValue? in
            if converted.contains(name), let entry = before[name], entry.basedOn != values[name] {
                return entry.value
            }
            return layeredValue(named: name)
        }
        migrationLayer!.entries = entries
        migrationLayer!.installed = ticket
        updateLayering()
        guard !names.isEmpty else { return ([:], nil) }
        let changes: [String: Defaults.StoredChange]
        (changes, changedCount) = changesOfReads(
            names,
            seenBefore: seenBefore,
            checksOverrides: true,
            dropping: &dropped
        )
        // Telling of the change moved the generation on, not the values.
        if isCurrent { migrationLayer!.valuesGeneration = self.generation }
        return (changes, suiteObservers)
    }
}
