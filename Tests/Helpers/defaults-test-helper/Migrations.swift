import Defaults
import DefaultsLaunchOverrideSamples
import Foundation

/// What the old version of a program stores: the helper's `old-version` command writes it.
enum OldVersion {
    static func write(to url: URL) throws {
        let suite = Defaults.Suite(fileURL: url)
        suite[Defaults.Key<Int>("fontSize", default: 13, suite: suite)] = 16
        suite[Defaults.Key<Bool>("darkMode", default: false, suite: suite)] = true
        suite[Defaults.Key<Bool>("sync", default: false, suite: suite)] = true
        suite[Defaults.Key<Int>("refreshMinutes", default: 60, suite: suite)] = 90
        suite[Defaults.Key<[Int]>("windowSize", default: [640, 480], suite: suite)] = [800, 600]
        suite[Defaults.Key<String>("firstName", default: "", suite: suite)] = "Ada"
        suite[Defaults.Key<String>("lastName", default: "", suite: suite)] = "Lovelace"
        suite[Defaults.Key<Bool>("legacyMode", default: false, suite: suite)] = true
        try suite.synchronize()
    }
}

/// The new version of the same program.
///
/// Renamed keys, changed types, a split, a merge, a retired key; the helper's `new-version`
/// command opens a file with it.
enum NewVersion {
    enum Theme: String, Defaults.Serializable { case light, dark, system }
    enum Sync: String, Defaults.Serializable { case off, manual, automatic }

    /// The suite's own migrations, oldest first; the first counts its runs in the file.
    static let migrations: [Defaults.Migration] = [
        Defaults.Migration("2: count the runs") { values in
            values["migrationRuns"] = .number(String((try values.value(named: "migrationRuns", as: Int.self) ?? 0) + 1))
            // Each time the body runs, in any process: a line in the log the test names.
            if let log = ProcessInfo.processInfo.environment["DEFAULTS_TEST_MIGRATION_RUNS_LOG"] {
                appendLine("ran \(getpid())", to: log)
            }
        },
        MigrationSamples.windowSplit,
        MigrationSamples.oneName,
        .retiring(["legacyMode"]),
    ]

    /// Opens the file as the new version does; prints what each key reads and what ran.
    static func open(_ url: URL) throws {
        let suite = Defaults.Suite(fileURL: url) { error in say("error \(error.description)") }
        let report = try suite.migrate(migrations)
        let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
        let theme = Defaults.Key<Theme>("appearance", default: .system, suite: suite, formerly: ["darkMode"]) {
            (dark: Bool) in dark ? .dark : .light
        }
        let sync = Defaults.Key<Sync>("sync", default: .manual, suite: suite) { (on: Bool) in on ? .automatic : .off }
        let refresh = Defaults.Key<Double>("refreshHours", default: 1, suite: suite, formerly: ["refreshMinutes"]) {
            (minutes: Int) in Double(minutes) / 60
        }
        let width = Defaults.Key<Int>("window.width", default: 640, suite: suite)
        let height = Defaults.Key<Int>("window.height", default: 480, suite: suite)
        let fullName = Defaults.Key<String>("fullName", default: "", suite: suite)
        try suite.synchronize()
        say("applied \(report.applied.joined(separator: "|"))")
        say(
            "editor.fontSize \(suite[fontSize]) appearance \(suite[theme]) sync \(suite[sync]) refreshHours \(suite[refresh])"
        )
        say("window \(suite[width])x\(suite[height]) fullName \(suite[fullName])")
    }
}

/// The new version during a rolling upgrade, and its schema.
enum RollingVersion {
    /// Opens the file with "editor.fontSize" not final yet, prints what it reads now and after
    /// each change, until killed.
    static func follow(_ url: URL) -> Never {
        let suite = Defaults.Suite(fileURL: url) { error in say("error \(error.description)") }
        let fontSize = Defaults.Key<Int>(
            "editor.fontSize",
            default: 13,
            suite: suite,
            formerly: ["fontSize"],
            isFinal: false
        )
        say("editor.fontSize \(suite[fontSize])")
        Defaults.addChangeSink(
            Defaults.ChangeSink { change in
                guard change.suite == suite, change.changes["editor.fontSize"] != nil else { return }
                say("editor.fontSize \(suite[fontSize])")
            }
        )
        // Changes arrive on Dispatch's queues; the main thread only waits, until the process is killed.
        withExtendedLifetime(suite) { dispatchMain() }
    }

    /// Publishes the new version's schema beside the file without opening it (the keys are on a
    /// suite of their own, so nothing migrates).
    static func publishSchema(besides url: URL) throws {
        let suite = Defaults.Suite.inMemory()
        let keys: [Defaults.Keys] = [
            Defaults.Key<Int>(
                "editor.fontSize",
                default: 13,
                suite: suite,
                summary: "Font size in points",
                formerly: ["fontSize"]
            ),
            Defaults.Key<NewVersion.Theme>("appearance", default: .system, suite: suite, formerly: ["darkMode"]) {
                (dark: Bool) in dark ? .dark : .light
            },
        ]
        let document = suite.schema(for: keys, migrations: NewVersion.migrations)
        try Data(document.description.utf8).write(to: Defaults.Suite.schemaFileURL(forSettingsFile: url))
    }
}

/// Appends `line` to the file at `path` in one `write` (O_APPEND: lines of processes writing at
/// once do not mix).
func appendLine(_ line: String, to path: String) {
    let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { return }
    defer { close(descriptor) }
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
}
