import Foundation

extension Store.State {
    // MARK: - What reads see beneath the user's values

    /// Sets the flags that follow from ``readOnlyReason`` and ``layers``; call it after
    /// changing either.
    mutating func updateLayerFlags() {
        hasLayers = layers.map { !$0.values.isEmpty || !$0.locks.isEmpty } ?? false
        guardsWrites = readOnlyReason != nil || layers?.locks.isEmpty == false
        writesTakeGeneralPath = hasLayers || guardsWrites
    }

    /// Why a write of `name` is refused; `nil` when it is not.
    func refusal(ofWriteTo name: String) -> Defaults.Suite.WriteRefusal? {
        if let readOnlyReason { return .readOnly(readOnlyReason) }
        if hasLayers, let index = layers!.locks[name] { return .locked(by: layers!.layers[index].url) }
        return nil
    }

    /// The value a read of `name` decodes before this run's overrides: a locked key's system
    /// value, or else the user's, or else a system file's.
    mutating func layeredValue(named name: String) -> JSONValue? {
        // Read first, on a line of its own: as an argument, the values' mutating accessor
        // overlapped the call's borrow of `self`, and the whole state was copied for it.
        let stored = values[name]
        // NB: not through `layeredValue(named:stored:)`: a call of a non-mutating method from
        // here passes it a copy of the whole state (a memcpy of the state on every call).
        guard hasLayers else { return stored }
        return layers!.seen(name, stored: stored)
    }

    /// ``layeredValue(named:)`` where the user's layer holds `stored` (a transaction's view,
    /// or a change about to be made).
    func layeredValue(named name: String, stored: JSONValue?) -> JSONValue? {
        guard hasLayers else { return stored }
        return layers!.seen(name, stored: stored)
    }

    /// Every key's value as reads see it before this run's overrides: ``layeredValue(named:)``
    /// of every key set somewhere, where the user's layer holds `stored`.
    func layeredValues(stored: [String: JSONValue]) -> [String: JSONValue] {
        guard hasLayers else { return stored }
        return layers!.seen(stored: stored)
    }

    /// Whether a system file locks `name`.
    func isLocked(_ name: String) -> Bool {
        hasLayers && layers!.locks[name] != nil
    }
}
