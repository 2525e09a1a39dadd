// observable-viewmodel: an @Observable view-model with @ObservableDefault, "rendered" under
// Observations and withObservationTracking, re-rendering whoever changes the setting.
//
//     swift run observable-viewmodel
import DefaultsObservation
import Observation
import Synchronization

enum Example {
    static let suite = try! Defaults.Suite(name: "observable-viewmodel")
}

extension Defaults.Keys {
    static let theme = Key<String>("theme", default: "light", suite: Example.suite)
    static let fontSize = Key<Int>("fontSize", default: 12, suite: Example.suite)
}

@MainActor @Observable
final class SettingsViewModel {
    // NB: @ObservationIgnored is required. @Observable turns stored properties into computed ones,
    // and a property wrapper cannot sit on a computed property; @ObservableDefault reports to
    // Observation itself.
    @ObservationIgnored @ObservableDefault(.theme) var theme: String
    @ObservationIgnored @ObservableDefault(.fontSize) var fontSize: Int

    var title: String { "Editor — \(theme), \(fontSize) pt" }
}

/// The "view": a pure function of the view-model.
@MainActor func render(_ model: SettingsViewModel) -> String {
    "[\(model.title)]"
}

@MainActor func run() async {
    Defaults.removeAll(suite: Example.suite)
    let model = SettingsViewModel()
    let otherWindow = SettingsViewModel()

    print("1. Observations re-renders after every change, whoever makes it")
    var frames = Observations { render(model) }.makeAsyncIterator()
    print("render \(await frames.next()!)")

    otherWindow.theme = "dark"
    print("after another view-model sets theme:   render \(await frames.next()!)")

    Defaults[.fontSize] = 16
    print("after Defaults[.fontSize] = 16:        render \(await frames.next()!)")

    Example.suite.transaction {
        Defaults[.theme] = "solarized"
        Defaults[.fontSize] = 18
    }
    print("after a transaction changing both:     render \(await frames.next()!)")

    model.fontSize = 20
    print("after the view-model's own write:      render \(await frames.next()!)")

    print("\n2. withObservationTracking: one onChange per change, then re-arm")
    let changes = Mutex(0)
    func arm() {
        withObservationTracking {
            _ = render(model)
        } onChange: {
            changes.withLock { $0 += 1 }
        }
    }
    arm()
    Defaults[.theme] = "light"
    print("onChange calls after Defaults[.theme] = \"light\": \(changes.withLock { $0 })")
    arm()
    Defaults.withoutPropagation { Defaults[.fontSize] = 12 }
    print("onChange calls after a write inside withoutPropagation: \(changes.withLock { $0 }) (not reported)")
    print("render now \(render(model))")
}

await run()
