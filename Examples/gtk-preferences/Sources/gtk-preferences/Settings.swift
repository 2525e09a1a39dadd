import DefaultsObservation
import Foundation

/// The editor's colour theme, stored by its raw value.
enum Theme: String, CaseIterable, Defaults.Serializable {
    case system
    case light
    case dark
    case solarized
}

enum Preferences {
    /// `$XDG_CONFIG_HOME/gtk-preferences/settings.json`, so `defaults write gtk-preferences …`
    /// reaches it; the self-test uses a file in its own folder instead.
    static let suite: Defaults.Suite = {
        let arguments = CommandLine.arguments
        if let flag = arguments.firstIndex(of: "--self-test"), flag + 1 < arguments.count {
            return Defaults.Suite(fileURL: selfTestFile(in: arguments[flag + 1]))
        }
        return try! Defaults.Suite(name: "gtk-preferences")
    }()

    /// The settings file the self-test in `folder` uses.
    static func selfTestFile(in folder: String) -> URL {
        URL(fileURLWithPath: folder).appendingPathComponent("settings.json")
    }
}

extension Defaults.Keys {
    static let theme = Key<Theme>("theme", default: .system, suite: Preferences.suite, summary: "Colour theme")
    static let fontSize = Key<Int>(
        "fontSize",
        default: 12,
        suite: Preferences.suite,
        summary: "Font size",
        range: 6...72
    )
    static let showLineNumbers = Key<Bool>(
        "showLineNumbers",
        default: true,
        suite: Preferences.suite,
        summary: "Show line numbers"
    )
    static let displayName = Key<String?>("displayName", suite: Preferences.suite, summary: "Your name")
}
