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
