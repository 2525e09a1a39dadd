// README, "Observe changes to a key", "Reset keys to their default values" and "Control
// propagation of change events".
import Defaults
import DefaultsObservation

extension Defaults.Keys {
    // Adapted: `fileprivate`, as "Default values are registered with `UserDefaults`" declares another.
    fileprivate static let isUnicornMode = Key<Bool>("isUnicornMode", default: false)
}

func observeChangesToAKey() {
    // …

    Task {
        for await value in Defaults.updates(.isUnicornMode) {
            print("Value:", value)
        }
    }
}

func resetKeys() {
    Defaults[.isUnicornMode] = true
    print(Defaults[.isUnicornMode])  // Adapted: printed.
    //=> true

    Defaults.reset(.isUnicornMode)

    print(Defaults[.isUnicornMode])  // Adapted: printed.
    //=> false
}

extension Defaults.Keys {
    // Adapted: the README uses these keys without declaring them.
    static let key1 = Key<Int>("key1", default: 0)
    static let key2 = Key<Int>("key2", default: 0)
    static let someKey = Key<Bool>("someKey", default: false)
}

func controlPropagation() {
    let observer = Defaults.observe(keys: .key1, .key2) {
        // …

        Defaults.withoutPropagation {
            // Update `.key1` without propagating the change to listeners.
            Defaults[.key1] = 11
        }

        // This will be propagated.
        Defaults[.someKey] = true
    }
    // Adapted: what the initial call of the handler did, and the observation ended.
    print(Defaults[.key1], Defaults[.someKey])
    observer.invalidate()
}
