// README, "Shared `UserDefaults`".
import Defaults
import Foundation  // Adapted: written out; the README takes it for granted.

// Adapted: `nonisolated(unsafe)`: Foundation on Linux marks `UserDefaults` as not `Sendable`.
nonisolated(unsafe) let extensionDefaults = UserDefaults(suiteName: "com.unicorn.app")!

extension Defaults.Keys {
    // Adapted: `fileprivate`, as "It's just `UserDefaults` with sugar" declares another `isUnicorn`.
    fileprivate static let isUnicorn = Key<Bool>("isUnicorn", default: true, suite: extensionDefaults)
}

func sharedUserDefaults() {
    print(Defaults[.isUnicorn])  // Adapted: printed.
    //=> true

    // Or

    print(extensionDefaults[.isUnicorn])  // Adapted: printed.
    //=> true

    // Adapted: not in the README: both spellings reach the same store, `extensionDefaults` itself.
    extensionDefaults[.isUnicorn] = false
    print(
        Defaults[.isUnicorn],
        extensionDefaults.bool(forKey: "isUnicorn"),
        extensionDefaults.object(forKey: "isUnicorn") != nil
    )
    Defaults.removeAll(suite: extensionDefaults)
    print(Defaults[.isUnicorn], extensionDefaults.object(forKey: "isUnicorn") == nil)
}
