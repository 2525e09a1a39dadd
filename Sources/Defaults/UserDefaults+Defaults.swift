import Foundation

extension UserDefaults {
    /// The value of `key` in this `UserDefaults`, or the key's default; setting it stores a value.
    ///
    /// For code written for sindresorhus/Defaults. The key's name and default are used, its own
    /// suite is not: `UserDefaults.standard[key]` reads ``Defaults/Suite/standard`` (the JSON file
    /// `Defaults[key]` reads for a key made without a suite), and any other instance reads through
    /// the adapter that keys made with that instance use.
    ///
    /// ```swift
    /// extension Defaults.Keys {
    ///     static let isUnicorn = Key<Bool>("isUnicorn", default: true)
    /// }
    ///
    /// UserDefaults.standard[.isUnicorn] = false
    /// Defaults[.isUnicorn]  // false
    /// ```
    public subscript<Value: Defaults.Serializable>(key: Defaults.Key<Value>) -> Value {
        get { Defaults.Suite.resolving(self)[key] }
        set { Defaults.Suite.resolving(self)[key] = newValue }
    }
}

extension UserDefaults {
    /// Removes every value, as one change: the spelling of sindresorhus/Defaults.
    ///
    /// It follows the rule of the other `UserDefaults` spellings: `UserDefaults.standard` means
    /// ``Defaults/Suite/standard``, whose JSON file loses every value (Foundation's own standard
    /// store is left alone); any other instance means the adapter over it, which removes every
    /// value the instance reads from its own domain, and tells observers of the keys that change.
    public func removeAll() {
        Defaults.Suite.resolving(self).removeAll()
    }
}
