// settings-basics: keys of many types, reset, a named suite, a transaction, the file it wrote,
// and the schema it publishes beside it for editors and `defaults describe`.
//
//     swift run settings-basics
//
// Set XDG_CONFIG_HOME to keep it away from your own ~/.config.
import Defaults
import Foundation

enum Theme: String, CaseIterable, Defaults.Serializable {
    case light
    case dark
}

struct Window: Codable, Equatable, Defaults.Serializable {
    var width: Int
    var height: Int
}

// A suite of the example's own, in the XDG configuration directory.
enum Example {
    static let suite = try! Defaults.Suite(name: "settings-basics")
}
let suite = Example.suite

extension Defaults.Keys {
    static let launchCount = Key<Int>("launchCount", default: 0, suite: Example.suite, summary: "Times started")
    static let volume = Key<Double>("volume", default: 0.8, suite: Example.suite, summary: "Loudness", range: 0...1)
    static let nickname = Key<String?>("nickname", suite: Example.suite, summary: "What to call you")
    static let theme = Key<Theme>("theme", default: .dark, suite: Example.suite, summary: "Light or dark")
    static let window = Key<Window>("window", default: Window(width: 640, height: 480), suite: Example.suite)
    static let recentFiles = Key<[String]>("recentFiles", default: [], suite: Example.suite)
    static let shortcuts = Key<[String: String]>("shortcuts", default: [:], suite: Example.suite)
}

// The keys, described for editors and `defaults describe`: settings.schema.json beside the file.
// Written only when it changes, so publishing at every launch costs nothing.
let published = try suite.publishSchema(
    for: .launchCount,
    .volume,
    .nickname,
    .theme,
    .window,
    .recentFiles,
    .shortcuts
)
print("\(published ? "published" : "kept") the schema \(suite.schemaFileURL!.path)")

Defaults.removeAll(suite: suite)
print("launchCount starts at its default: \(Defaults[.launchCount])")
Defaults[.launchCount] += 1
Defaults[.volume] = 0.5
Defaults[.nickname] = "unicorn"
Defaults[.theme] = .light
Defaults[.recentFiles].append("/tmp/notes.txt")
Defaults[.shortcuts]["save"] = "Ctrl+S"
print("launchCount: \(Defaults[.launchCount]), volume: \(Defaults[.volume]), nickname: \(Defaults[.nickname] ?? "nil")")
print("theme: \(Defaults[.theme]), recentFiles: \(Defaults[.recentFiles]), shortcuts: \(Defaults[.shortcuts])")

Defaults.reset(.volume, .nickname)
print("after reset: volume \(Defaults[.volume]), nickname \(Defaults[.nickname] ?? "nil")")

// Two keys changed together: other threads see both or neither, and the file is written once.
suite.transaction {
    Defaults[.window] = Window(width: 1280, height: 800)
    Defaults[.launchCount] += 1
}
print("after the transaction: window \(Defaults[.window]), launchCount \(Defaults[.launchCount])")

try suite.synchronize()
let file = suite.fileURL!
print("\nwrote \(file.path):")
print(try String(contentsOf: file, encoding: .utf8), terminator: "")
