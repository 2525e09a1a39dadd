import DefaultsObservation
import Observation

/// The window's view-model: four settings, and the preview drawn from them.
///
/// Every property reads and writes the suite, so it follows changes made anywhere: this window,
/// another window, the `defaults` command, a hand edit of the file. Observation tells whoever
/// reads it; for a change made outside this thread, it does so on the thread that delivers it.
@Observable
final class PreferencesModel {
    // NB: @ObservationIgnored because @Observable would turn these into computed properties, which
    // cannot carry a property wrapper; @ObservableDefault reports to Observation itself.
    @ObservationIgnored @ObservableDefault(.theme) var theme: Theme
    @ObservationIgnored @ObservableDefault(.fontSize) var fontSize: Int
    @ObservationIgnored @ObservableDefault(.showLineNumbers) var showLineNumbers: Bool
    @ObservationIgnored @ObservableDefault(.displayName) var displayName: String?

    /// What the preview label shows.
    var preview: String {
        let name = displayName ?? "Anonymous"
        let numbers = showLineNumbers ? "line numbers" : "no line numbers"
        return "\(name) — \(theme.rawValue), \(fontSize) pt, \(numbers)"
    }

    /// Brings every setting back to its default: the keys are removed from the file.
    static func resetAll() {
        Defaults.reset(.theme, .fontSize, .showLineNumbers, .displayName)
    }
}
