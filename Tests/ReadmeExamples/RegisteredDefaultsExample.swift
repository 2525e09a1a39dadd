// README, "Default values are registered with `UserDefaults`": compiles, but prints `false` here;
// this package registers nothing with Foundation's `UserDefaults.standard`.
import Defaults
import Foundation  // Adapted: written out; the README takes it for granted.

extension Defaults.Keys {
    // Adapted: `fileprivate`, as other examples declare an `isUnicornMode` whose default is `false`.
    fileprivate static let isUnicornMode = Key<Bool>("isUnicornMode", default: true)
}

func registeredDefaults() {
    print(UserDefaults.standard.bool(forKey: Defaults.Keys.isUnicornMode.name))
    //=> true
}
