// README, "`@ObservableDefault` in `@Observable`".
import Defaults
import DefaultsMacros
import Observation  // Adapted: `@Observable` needs it, on Apple platforms too.

extension Defaults.Keys {
    // Adapted: declared as in the README's `@Default` example, which is SwiftUI.
    static let hasUnicorn = Key<Bool>("hasUnicorn", default: false)
}

@Observable
final class UnicornManager {
    @ObservableDefault(.hasUnicorn)
    @ObservationIgnored
    var hasUnicorn: Bool
}

// Adapted: what the README leaves to the reader: a change of the key reaches the model, and
// Observation's tracking.
func observableDefault() {
    let manager = UnicornManager()
    print(manager.hasUnicorn)
    withObservationTracking {
        _ = manager.hasUnicorn
    } onChange: {
        print("tracking saw a change")
    }
    Defaults[.hasUnicorn] = true
    print(manager.hasUnicorn)
}
