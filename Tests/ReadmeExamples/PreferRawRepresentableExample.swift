// README, "Serialization for ambiguous `Codable` type": compiles; prints `nil` here, as the
// example reads Foundation's `UserDefaults.standard`, where this package stores nothing (and the
// example itself writes nothing).
import Defaults
import Foundation  // Adapted: written out; the README takes it for granted.

// Adapted: `private`, as two other examples declare another `mime`.
private enum mime: String, Codable, Defaults.Serializable, Defaults.PreferRawRepresentable {
    case JSON = "application/json"
}

extension Defaults.Keys {
    // Adapted: `fileprivate`, as "Wrapped in `Array`, `Set`, or `Dictionary`" declares it too.
    fileprivate static let magic = Key<[String: Defaults.AnySerializable]>("magic", default: [:])
}

func preferRawRepresentable() {
    print(UserDefaults.standard.string(forKey: "magic") as Any)  // Adapted: `as Any`, or a warning.
    //=> application/json

}
