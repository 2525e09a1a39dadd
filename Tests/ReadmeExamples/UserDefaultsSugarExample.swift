// README, "It's just `UserDefaults` with sugar".
import Defaults
import Foundation  // Adapted: written out; the README takes it for granted.

extension Defaults.Keys {
    // Adapted: `fileprivate`, as "Shared `UserDefaults`" declares another `isUnicorn`.
    fileprivate static let isUnicorn = Key<Bool>("isUnicorn", default: true)
}

func justUserDefaultsWithSugar() {
    print(UserDefaults.standard[.isUnicorn])  // Adapted: printed.
    //=> true
}
