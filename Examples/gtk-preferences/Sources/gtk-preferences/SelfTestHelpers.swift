import CAdw
import DefaultsGtk
import DefaultsObservation
import Foundation
import Synchronization

// MARK: - Reading the widgets

@MainActor func spin(_ window: EditorWindow) -> Int {
    Int(gtk_spin_button_get_value_as_int(OpaquePointer(window.fontSizeSpin)))
}

@MainActor func isOn(_ window: EditorWindow) -> Bool {
    gtk_switch_get_active(OpaquePointer(window.lineNumbersSwitch)) != 0
}

@MainActor func selectedTheme(_ window: EditorWindow) -> Theme? {
    let index = Int(adw_combo_row_get_selected(typed(window.themeRow)))
    return Theme.allCases.indices.contains(index) ? Theme.allCases[index] : nil
}

@MainActor func entryText(_ window: EditorWindow) -> String {
    String(cString: gtk_editable_get_text(OpaquePointer(window.nameEntry)))
}

@MainActor func label(_ window: EditorWindow) -> String {
    String(cString: gtk_label_get_text(OpaquePointer(window.previewLabel)))
}

/// Counts change callbacks, from whichever thread.
final class ChangeCounter: Sendable {
    private let value = Mutex(0)
    func add() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

/// When a widget's property last changed (`CLOCK_MONOTONIC` nanoseconds), from its notifications.
final class PropertyWatch {
    private(set) var lastChange: UInt64 = 0

    init(_ widget: UnsafeMutablePointer<GtkWidget>, _ property: String) {
        let changed: @convention(c) (gpointer?, gpointer?, gpointer?) -> Void = { _, _, data in
            Unmanaged<PropertyWatch>.fromOpaque(data!).takeUnretainedValue().lastChange = monotonicNanoseconds()
        }
        // NB: kept for the program's life: the widget outlives the checks.
        cadw_connect(
            widget,
            "notify::\(property)",
            unsafeBitCast(changed, to: GCallback.self),
            Unmanaged.passRetained(self).toOpaque()
        )
    }
}

// MARK: - GSettings beside it

/// A GSettings key, `font-size`, in GSettings' keyfile backend (a file, watched; no session bus),
/// bound with `g_settings_bind` to a spin button like the window's.
@MainActor
struct GSettingsComparison {
    let spin: UnsafeMutablePointer<GtkWidget>

    init?(folder: String) {
        guard let settings = openGSettings(folder: folder) else { return nil }
        spin = gtk_spin_button_new_with_range(6, 72, 1)
        g_object_ref_sink(spin)
        g_settings_bind(settings, "font-size", spin, "value", G_SETTINGS_BIND_DEFAULT)
    }
}

/// GSettings for the schema `org.example.gtk-preferences` compiled into `<folder>/schemas`, stored
/// in `<folder>/gsettings.keyfile`; `nil` if the schema compiler is missing.
func openGSettings(folder: String) -> UnsafeMutablePointer<GSettings>? {
    let schemas = folder + "/schemas"
    if !FileManager.default.fileExists(atPath: schemas + "/gschemas.compiled") {
        let schema = """
            <schemalist>
              <schema id="org.example.gtk-preferences" path="/org/example/gtk-preferences/">
                <key name="font-size" type="i"><default>12</default></key>
              </schema>
            </schemalist>
            """
        try? FileManager.default.createDirectory(atPath: schemas, withIntermediateDirectories: true)
        try? schema.write(
            toFile: schemas + "/org.example.gtk-preferences.gschema.xml",
            atomically: true,
            encoding: .utf8
        )
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/glib-compile-schemas")
        compiler.arguments = [schemas]
        guard (try? compiler.run()) != nil else { return nil }
        compiler.waitUntilExit()
        guard compiler.terminationStatus == 0 else { return nil }
    }
    guard let source = g_settings_schema_source_new_from_directory(schemas, nil, 1, nil) else { return nil }
    defer { g_settings_schema_source_unref(source) }
    guard let schema = g_settings_schema_source_lookup(source, "org.example.gtk-preferences", 0) else { return nil }
    defer { g_settings_schema_unref(schema) }
    let backend = g_keyfile_settings_backend_new(
        folder + "/gsettings.keyfile",
        "/org/example/gtk-preferences/",
        "gtk-preferences"
    )
    return g_settings_new_full(schema, backend, nil)
}

// MARK: - The other process

/// This program run as another process that writes: `--write-child <file>` or
/// `--gsettings-child <folder>`.
final class WriteChild {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()

    init?(_ arguments: [String]) {
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        do { try process.run() } catch { return nil }
    }

    /// Asks the child to write `value` to `key`; returns when the write returned there
    /// (`CLOCK_MONOTONIC` nanoseconds).
    @discardableResult
    func write(_ key: String, _ value: Int) -> UInt64 {
        input.fileHandleForWriting.write(Data("\(key) \(value)\n".utf8))
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return 0 }
            line += chunk
        }
        let words = String(decoding: line, as: UTF8.self).split(separator: " ")
        return words.count == 2 ? UInt64(words[1].trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 : 0
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

/// The child's side of ``WriteChild``: reads `<key> <int>` lines and writes each.
///
/// Answers `synced <CLOCK_MONOTONIC ns>` once the write returned; exits at the end of its input.
/// With a settings file, each write is followed by `synchronize()`; with a folder, it is a
/// GSettings write of `font-size` and `g_settings_sync()`.
func runWriteChild(file: URL?, gsettingsFolder: String?) -> Never {
    let suite = file.map { Defaults.Suite(fileURL: $0) }
    let settings = gsettingsFolder.flatMap { openGSettings(folder: $0) }
    while let line = readLine() {
        let words = line.split(separator: " ")
        guard words.count == 2, let value = Int(words[1]) else { continue }
        if let suite {
            suite[Defaults.Key<Int>(String(words[0]), default: 0, suite: suite)] = value
            try? suite.synchronize()
        } else if let settings {
            g_settings_set_int(settings, String(words[0]), Int32(value))
            g_settings_sync()
        }
        print("synced \(monotonicNanoseconds())")
        fflush(nil)
    }
    exit(0)
}
