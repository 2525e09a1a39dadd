import Foundation

// What hangs on the state for the observation module: its observer slots.
extension Store {
    /// The entries of the state's table of keys: keys with a decoded value kept, a change not yet
    /// flushed, or observers; for tests that it does not grow.
    var keyEntryCount: Int { state.withLock { $0.table.keys.count } }

    /// Changes what hangs on the key `name` of the state (shared by every suite over this store): `body` gets the key's observer slot, under the state's lock, and may change it.
    ///
    /// For the observation module, which keeps a key's observers in it; see ``Defaults/ObserverSlot``.
    /// `body` must not use the suite. It runs under the lock, so what it hangs is in place for
    /// the next write, and what it takes away is not called by writes after this returns.
    ///
    /// - Returns: What hung on the key before, so it is released after the lock.
    @discardableResult
    func updateObservers(
        named name: HashedName,
        _ body: (inout (any Defaults.ObserverSlot)?) -> Void
    ) -> (any Defaults.ObserverSlot)? {
        state.withLock { $0.updateObservers(named: name, body) }
    }

    /// Changes what hangs on every key of the state, as ``updateObservers(named:_:)``
    /// does for one key.
    ///
    /// - Returns: What hung on the state before, so it is released after the lock.
    @discardableResult
    func updateSuiteObservers(
        _ body: (inout (any Defaults.ObserverSlot)?) -> Void
    ) -> (any Defaults.ObserverSlot)? {
        state.withLock { state in
            let old = state.suiteObservers
            body(&state.suiteObservers)
            return old
        }
    }

    /// Everything hanging on the keys of the state, and on the whole state.
    func observerSlots() -> [any Defaults.ObserverSlot] {
        state.withLock { state in
            state.table.keys.values.compactMap(\.observers) + [state.suiteObservers].compactMap { $0 }
        }
    }
}

extension Store.State {
    /// Changes what hangs on the key `name` with `body`, for ``Store/updateObservers(named:_:)``.
    ///
    /// - Returns: What hung on the key before, so it is released after the lock.
    @inline(__always)
    mutating func updateObservers(
        named name: Defaults.Suite.HashedName,
        _ body: (inout (any Defaults.ObserverSlot)?) -> Void
    ) -> (any Defaults.ObserverSlot)? {
        guard let index = table.keys.index(forKey: name) else {
            var slot: (any Defaults.ObserverSlot)?
            body(&slot)
            if let slot { table.keys[name] = Defaults.Suite.KeyState(observers: slot) }
            return nil
        }
        // The entry is lent in place (`inout`), here and below: read as a value, all of it
        // would be copied, and its references retained and released.
        let old = Defaults.Suite.KeyState.observers(of: &table.keys.values[index])
        body(&table.keys.values[index].observers)
        // An entry left with nothing goes, so keys observed once leave nothing behind.
        if Defaults.Suite.KeyState.isEmpty(&table.keys.values[index]) { table.keys.remove(at: index) }
        return old
    }
}
