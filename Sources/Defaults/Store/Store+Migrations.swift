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
    /// A final migration that carries a value from other names (`isFinal`, and its key does not
    /// convert its own name) is settled, recorded or not, when its key's name holds a value and
    /// none of its former names does: there is nothing for it to move, and nothing under the
    /// key's name it could take for an older form. It is answered as recorded without the record
    /// being looked at.
    ///
    /// Inside a transaction of `suite` on this task, the transaction's view. Allocates nothing
    /// while the record stays as it was: each key that declares a migration asks, and a record of
    /// 100 ids was searched 100 times.
    func recordedState(
        of name: HashedName,
        formerly: [String],
        convertsFrom: String?,
        isFinal: Bool,
        in suite: Defaults.Suite
    ) -> (isRecorded: Bool, formerHoldsValue: Bool, own: JSONValue?) {
        // A type change under the key's own name: its value is looked at too, for an older form
        // an old version stored there after the conversion ran.
        let convertsOwnName = convertsFrom != nil && (formerly.isEmpty || formerly.contains(name.text))
        let isSettledWhenMoved = isFinal && !convertsOwnName
        // The common answer first, with no transaction open: a look that keeps no suite.
        if isSettledWhenMoved, isSettled(name, formerly: formerly) {
            return (true, false, nil)
        }
        return state.withLock {
            $0.recordedState(
                of: name,
                formerly: formerly,
                convertsFrom: convertsFrom,
                in: suite,
                convertsOwnName: convertsOwnName,
                isSettledWhenMoved: isSettledWhenMoved
            )
        }
    }

    /// ``State/isSettled(_:formerly:)`` outside any transaction; `false` inside one.
    @inline(__always)
    func isSettled(_ name: HashedName, formerly: [String]) -> Bool {
        state.withLock { $0.openTransactions == 0 && $0.isSettled(name, formerly: formerly) }
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
            var locked = Set(state.layered.systemFiles.map { Array($0.locks.keys) } ?? [])
            if let secrets = state.layered.secrets { locked.formUnion(secrets.values.keys) }
            return (state.layered.readOnlyReason != nil, locked)
        }
    }
}

// The migrations read through (`Layers/MigrationLayer.swift`): worked out outside the lock from
// the user's values, taken in under it like a secret's change.
extension Store {
    /// Reads `readThroughs` through from now on, and works the layer out again.
    func readThrough(_ readThroughs: [MigrationLayer.ReadThrough]) {
        let added = state.withLock { state in
            if state.layered.migrations == nil { state.layered.migrations = MigrationLayer() }
            return readThroughs.filter { state.layered.migrations!.add($0) }
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
        let removed = state.withLock { $0.layered.migrations?.remove(ids) ?? [] }
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
            guard let layer = state.layered.migrations else { return false }
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
        let start = state.withLock { $0.startWorkingOutMigrationLayer(adding: added != nil) }
        // The migrations are user code: run with no lock held.
        let entries: [String: MigrationLayer.Entry]
        if let added, let base = start.base {
            entries = MigrationLayer.entries(adding: added, to: base.entries, from: start.values)
        } else {
            entries = MigrationLayer.entries(of: start.readThroughs, from: start.values)
        }
        let workedOut = MigrationLayer.WorkedOut(
            entries: entries,
            ticket: start.ticket,
            generation: start.generation,
            base: start.base?.installed
        )
        let outcome = state.withLock { $0.installMigrationLayer(workedOut) }
        guard let outcome else { return refreshMigrationLayer(adding: nil) }
        tell(outcome)
    }
}
