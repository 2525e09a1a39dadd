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

    // Adapted: not in the README: `UserDefaults.standard` is the standard suite `Defaults` reads.
    UserDefaults.standard[.isUnicorn] = false
    print(Defaults[.isUnicorn])
}
