import Foundation

extension Defaults.Suite {
    enum WriteRefusal: Equatable {
        /// The file may not be written by this process: why.
        case readOnly(String)
        /// A system file locks the key.
        case locked(by: URL)
        /// The key is secret: it is read from this file (`nil`: the suite has no secrets
        /// directory), and never stored.
        case secret(URL?)
    }

    /// What a state keeps beside one key's stored value.
    struct KeyState {
        /// The value decoded as the type last read or written; `nil` when none is kept.
        var decoded: CacheEntry?
        /// File stores: whether the key was changed here since the last successful write.
        var isChanged = false
        /// The key's observers, as the observation module keeps them.
        var observers: (any Defaults.ObserverSlot)?

        /// Whether ``decoded`` holds a value written in place whose JSON the state's values do
        /// not have yet (see `Table`).
        var isJSONStale = false

        /// Whether the entry holds nothing, so it can go.
        var isEmpty: Bool { decoded == nil && !isChanged && observers == nil }

        /// Whether `entry` holds nothing; for an entry lent in place.
        static func isEmpty(_ entry: inout KeyState) -> Bool { entry.isEmpty }

        /// The observers of `entry`; for an entry lent in place.
        static func observers(of entry: inout KeyState) -> (any Defaults.ObserverSlot)? { entry.observers }

        /// Marks the key changed; returns whether it was already.
        mutating func markChanged() -> Bool {
            defer { isChanged = true }
            return isChanged
        }

        /// Replaces the decoded value and marks the key changed when asked; returns the old decoded
        /// value, the observers and whether the key was marked changed already.
        mutating func record(
            _ newDecoded: CacheEntry?,
            marksChanged: Bool
        ) -> (CacheEntry?, (any Defaults.ObserverSlot)?, Bool) {
            // Swapped out, not copied: a copy and a release of the old box on every write.
            var old = newDecoded
            swap(&old, &decoded)
            let wasChanged = isChanged
            if marksChanged { isChanged = true }
            return (old, observers, wasChanged)
        }
    }
}
