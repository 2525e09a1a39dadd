// `editor-etcd-test-helper <address> <schema file>`: the window `defaults-editor-etcd` shows for a
// suite in etcd (opened with `DefaultsEditor.openSuite` and the etcd schemes, made from the schema
// with `PreferencesPage(schema:suite:)`), for the tests. Needs a display (Xvfb).
//
// Prints "rows <name>=<shown>..." (sorted by name; a spin button's value, a combo row's choice, an
// entry's text, a JSON row's subtitle; spaces as "_") once the window is drawn, then "ready", and
// again after each change of the suite, once the rows took it in. Commands, one a line:
//
//     set <key> <number>    sets the key's spin button as the person would; prints "ok set"
//     sync                  synchronize(): prints "synced" once the suite's writes are in etcd
//     quit                  ends the program
import CAdw
import DefaultsAdwaita
import DefaultsEtcd
import DefaultsGtk
import DefaultsObservation
import Foundation

/// Prints `line` at once.
func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The rows as the window shows them.
@MainActor
func rowsLine(_ window: PreferencesWindow) -> String {
    var words: [String] = []
    for row in window.pages[0].rows {
        var shown = "-"
        switch row.kind {
        case .number: shown = "\(gtk_spin_button_get_value(OpaquePointer(row.editor!)))"
        case .choice:
            let item = adw_combo_row_get_selected_item(
                UnsafeMutableRawPointer(row.row).assumingMemoryBound(to: AdwComboRow.self)
            )
            shown = item.map { String(cString: gtk_string_object_get_string(OpaquePointer($0))) } ?? "-"
        case .text: shown = String(cString: gtk_editable_get_text(OpaquePointer(row.editor!)))
        case .toggle: shown = gtk_switch_get_active(OpaquePointer(row.editor!)) != 0 ? "true" : "false"
        case .json:
            let subtitle = adw_action_row_get_subtitle(
                UnsafeMutableRawPointer(row.row).assumingMemoryBound(to: AdwActionRow.self)
            )
            shown = subtitle.map { String(cString: $0) } ?? "-"
        case .jsonText: shown = String(cString: gtk_editable_get_text(OpaquePointer(row.editor!)))
        case .optional, .list, .group: break
        }
        words.append("\(row.keyName)=\(shown.replacingOccurrences(of: " ", with: "_"))")
    }
    return (["rows"] + words.sorted()).joined(separator: " ")
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    report("usage: editor-etcd-test-helper <address> <schema file>")
    exit(2)
}
let schemes = ["etcd", "etcds"]
    .map { name in
        DefaultsEditor.Scheme(name) { address in try EtcdBackend(commandLineAddress: address) }
    }
let suite = try DefaultsEditor.openSuite(arguments[1], schemes: schemes) { error in report("problem \(error)") }
let schema = try DefaultsEditor.schema(of: suite, from: URL(fileURLWithPath: arguments[2]))
gtk_init()
GLibMainLoop.driveMainActor()
let window = MainActor.assumeIsolated {
    let window = PreferencesWindow(title: "Settings", pages: [PreferencesPage(schema: schema, suite: suite)])
    window.present()
    return window
}
// Each change, once the rows took it in: delivered to the main loop after theirs.
let observation = Defaults.observe(suite: suite, options: []) {
    GLibMainLoop.deliver { report(rowsLine(window)) }
}
// Drawn, then ready: the rows are all made once `rows` is asked. The picture goes to a file of
// its own: saved to /dev/null, it replaced the device with a regular file (GTK saves by writing
// beside the path and renaming over it), and as root that broke /dev/null for the whole machine.
let picture = FileManager.default.temporaryDirectory.appendingPathComponent("editor-etcd-\(getpid()).png").path
var drawn = false
while !drawn {
    g_main_context_iteration(nil, 1)
    drawn = MainActor.assumeIsolated { window.savePicture(to: picture) }
}
try? FileManager.default.removeItem(atPath: picture)
MainActor.assumeIsolated { report(rowsLine(window)) }
report("ready")
Thread.detachNewThread {
    while let line = readLine() {
        let words = line.split(separator: " ").map(String.init)
        GLibMainLoop.deliver {
            switch words.first {
            case "set":
                if words.count == 3, let row = window.row(named: words[1]), let editor = row.editor {
                    gtk_spin_button_set_value(OpaquePointer(editor), Double(words[2]) ?? 0)
                }
                report("ok set")
            case "sync":
                try? suite.synchronize()
                report("synced")
            case "quit":
                observation.invalidate()
                exit(0)
            default:
                report("unknown command \(line)")
            }
        }
    }
    exit(0)
}
while true { g_main_context_iteration(nil, 1) }
