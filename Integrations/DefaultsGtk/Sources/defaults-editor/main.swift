// defaults-editor: the settings of any program that uses Defaults, in a preferences window made
// from the schema the program published beside its file (settings.schema.json): the right row for
// each key, live both ways, and the values the schema does not describe as JSON. The
// dconf-editor of these settings.
//
//     defaults-editor <suite name | path of a settings file>
//     defaults-editor <suite> --picture <png>     draws the window once, saves it, and exits
//
// A suite by name is $XDG_CONFIG_HOME/<name>/settings.json with the system files of
// $XDG_CONFIG_DIRS beneath it, as for the `defaults` command.
import CAdw
import DefaultsAdwaita
import DefaultsGtk
import DefaultsObservation
import Foundation

/// Prints `message` on standard error, prefixed with the program's name.
func complain(_ message: String) {
    FileHandle.standardError.write(Data("defaults-editor: \(message)\n".utf8))
}

var arguments = Array(CommandLine.arguments.dropFirst())
var picture: String?
if let flag = arguments.firstIndex(of: "--picture") {
    guard flag + 1 < arguments.count else {
        complain("--picture needs the path of the PNG to write")
        exit(2)
    }
    picture = arguments[flag + 1]
    arguments.removeSubrange(flag...(flag + 1))
}
guard arguments.count == 1, !arguments[0].hasPrefix("-") else {
    complain("usage: defaults-editor <suite name | settings file> [--picture <png>]")
    exit(2)
}
let address = arguments[0]
if address.contains("://") {
    complain("\(address): only suites kept in files can be edited here (this build knows no other schemes)")
    exit(2)
}

// By name, as the `defaults` command opens it: with the system files beneath it (their values
// and locks), so a locked row is insensitive here as in the program.
let suite: Defaults.Suite
if address.contains("/") || address.hasSuffix(".json") {
    suite = Defaults.Suite(fileURL: URL(fileURLWithPath: address)) { error in complain("\(error)") }
} else {
    do {
        suite = try Defaults.Suite(name: address) { error in complain("\(error)") }
    } catch {
        complain("\(address): \(error)")
        exit(2)
    }
}
let file = suite.fileURL!

// The schema the program published; without one (or an unreadable one, said so), every value
// shows as JSON.
let schemaFile = Defaults.Suite.schemaFileURL(forSettingsFile: file)
var schema: Defaults.JSONValue?
if let bytes = FileManager.default.contents(atPath: schemaFile.path) {
    do {
        schema = try Defaults.JSONValue(parsing: Array(bytes))
    } catch {
        complain("\(schemaFile.path): \(error); its values are shown as JSON")
    }
} else {
    complain("no schema at \(schemaFile.path); the values are shown as JSON")
}

gtk_init()
GLibMainLoop.driveMainActor()
let window = MainActor.assumeIsolated {
    let page = PreferencesPage(schema: schema, suite: suite, title: "Settings")
    let window = PreferencesWindow(
        title: "Settings of \(file.deletingLastPathComponent().lastPathComponent)",
        pages: [page]
    )
    gtk_window_set_default_size(
        UnsafeMutableRawPointer(window.window).assumingMemoryBound(to: GtkWindow.self),
        640,
        720
    )
    window.present()
    return window
}
if let picture {
    // Tried after each turn of the loop until the window is drawn; a timer wakes the loop every
    // 20 ms meanwhile, for at most 200 turns.
    g_timeout_add(20, { _ in 1 }, nil)
    var saved = false
    for _ in 0..<200 where !saved {
        g_main_context_iteration(nil, 1)
        saved = MainActor.assumeIsolated { window.savePicture(to: picture) }
    }
    if !saved { complain("the window was never drawn; no picture") }
    exit(saved ? 0 : 1)
}
print("editing \(file.path); close the window to quit")
while MainActor.assumeIsolated({ window.isOpen }) {
    g_main_context_iteration(nil, 1)
}
try? suite.synchronize()
