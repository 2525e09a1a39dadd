import CGtk
import DefaultsObservation
import Foundation
import Observation

/// The "Editor preferences" window: a widget per setting, a reset button beside each, "Reset all",
/// and a preview label drawn from all four.
///
/// Widgets are GTK's, so they are touched on GTK's main loop only. They follow the view-model
/// through `withObservationTracking`: its `onChange` may run on any thread (a change made by
/// another process arrives on the suite's delivery thread), so it touches no widget; it asks the
/// main loop to refresh (`g_idle_add`), and the refresh reads the model and arms tracking again.
final class PreferencesWindow: @unchecked Sendable {  // Only used on GTK's main thread.
    let model: PreferencesModel
    let window: UnsafeMutablePointer<GtkWidget>
    let themeDropDown: UnsafeMutablePointer<GtkWidget>
    let fontSizeSpin: UnsafeMutablePointer<GtkWidget>
    let lineNumbersSwitch: UnsafeMutablePointer<GtkWidget>
    let nameEntry: UnsafeMutablePointer<GtkWidget>
    let previewLabel: UnsafeMutablePointer<GtkWidget>
    private(set) var resetButtons: [String: UnsafeMutablePointer<GtkWidget>] = [:]
    private(set) var resetAllButton: UnsafeMutablePointer<GtkWidget>!
    /// Set when the window is closed.
    private(set) var isOpen = true
    /// Whether to print a line each time a widget follows a change made elsewhere.
    let printsChanges: Bool
    /// When each widget last took a new value from the model (`CLOCK_MONOTONIC` nanoseconds).
    private(set) var lastFollowed: [String: UInt64] = [:]
    /// Writes a widget made that changed a setting (a write of the same value is not one).
    private(set) var widgetWrites = 0
    /// Set while the widgets take their first values, which follow nothing.
    private var isSettingUp = true

    init(model: PreferencesModel, printsChanges: Bool) {
        self.model = model
        self.printsChanges = printsChanges
        window = gtk_window_new()
        gtk_window_set_title(typed(window), "Editor preferences")
        gtk_window_set_default_size(typed(window), 560, 300)

        let names = Theme.allCases.map { strdup($0.rawValue) } + [nil]
        themeDropDown = names.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!
                .withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                    gtk_drop_down_new_from_strings($0)
                }
        }
        for name in names { free(name) }
        fontSizeSpin = gtk_spin_button_new_with_range(6, 72, 1)
        lineNumbersSwitch = gtk_switch_new()
        gtk_widget_set_halign(lineNumbersSwitch, GTK_ALIGN_START)
        nameEntry = gtk_entry_new()
        gtk_entry_set_placeholder_text(typed(nameEntry), "Anonymous")
        previewLabel = gtk_label_new("")
        gtk_widget_set_margin_top(previewLabel, 12)

        let grid = gtk_grid_new()!
        gtk_grid_set_row_spacing(typed(grid), 8)
        gtk_grid_set_column_spacing(typed(grid), 12)
        for side in [
            gtk_widget_set_margin_top, gtk_widget_set_margin_bottom, gtk_widget_set_margin_start,
            gtk_widget_set_margin_end,
        ] {
            side(grid, 16)
        }
        let rows: [(String, String, UnsafeMutablePointer<GtkWidget>)] = [
            ("Theme", "theme", themeDropDown), ("Font size", "fontSize", fontSizeSpin),
            ("Show line numbers", "showLineNumbers", lineNumbersSwitch), ("Display name", "displayName", nameEntry),
        ]
        for (row, (title, key, widget)) in rows.enumerated() {
            let label = gtk_label_new(title)!
            gtk_label_set_xalign(OpaquePointer(label), 0)
            gtk_widget_set_hexpand(widget, 1)
            let reset = gtk_button_new_with_label("Reset")!
            resetButtons[key] = reset
            gtk_grid_attach(typed(grid), label, 0, Int32(row), 1, 1)
            gtk_grid_attach(typed(grid), widget, 1, Int32(row), 1, 1)
            gtk_grid_attach(typed(grid), reset, 2, Int32(row), 1, 1)
        }
        gtk_grid_attach(typed(grid), previewLabel, 0, 4, 3, 1)
        resetAllButton = gtk_button_new_with_label("Reset all")
        gtk_widget_set_halign(resetAllButton, GTK_ALIGN_END)
        gtk_grid_attach(typed(grid), resetAllButton, 0, 5, 3, 1)
        gtk_window_set_child(typed(window), grid)

        refresh()
        isSettingUp = false
        connectSignals()
        track()
    }

    /// Shows the window.
    func present() {
        gtk_window_present(typed(window))
    }

    // MARK: - Model to widgets

    /// Reads the model on the next turn of GTK's main loop, whatever thread asks.
    private struct MainLoopWake: @unchecked Sendable {  // The pointer is dereferenced on the main loop only.
        let window: UnsafeMutableRawPointer

        func schedule() {
            g_idle_add(
                { data in
                    let window = preferencesWindow(data)
                    window.refresh()
                    window.track()
                    return 0  // G_SOURCE_REMOVE: once.
                },
                window
            )
        }
    }

    /// Arms observation of everything the widgets show; the next change schedules one refresh.
    func track() {
        let wake = MainLoopWake(window: Unmanaged.passUnretained(self).toOpaque())
        withObservationTracking {
            _ = model.preview
        } onChange: {
            // NB: may run on the suite's delivery thread: no widget is touched here.
            wake.schedule()
        }
    }

    /// Sets each widget that differs from the model, and the preview.
    ///
    /// Setting a widget makes GTK emit its change signal, whose handler writes the model back: the
    /// same value, which the store does not commit and nobody is told of. That equality is what
    /// keeps a change from echoing between the widget and the model.
    func refresh() {
        let theme = UInt32(Theme.allCases.firstIndex(of: model.theme) ?? 0)
        if gtk_drop_down_get_selected(OpaquePointer(themeDropDown)) != theme {
            gtk_drop_down_set_selected(OpaquePointer(themeDropDown), theme)
            followed("theme", model.theme.rawValue)
        }
        let size = model.fontSize
        if gtk_spin_button_get_value_as_int(OpaquePointer(fontSizeSpin)) != Int32(size) {
            gtk_spin_button_set_value(OpaquePointer(fontSizeSpin), Double(size))
            followed("fontSize", "\(size)")
        }
        let lines = model.showLineNumbers
        if (gtk_switch_get_active(OpaquePointer(lineNumbersSwitch)) != 0) != lines {
            gtk_switch_set_active(OpaquePointer(lineNumbersSwitch), lines ? 1 : 0)
            followed("showLineNumbers", "\(lines)")
        }
        let name = model.displayName ?? ""
        if entryText != name {
            gtk_editable_set_text(OpaquePointer(nameEntry), name)
            followed("displayName", name)
        }
        gtk_label_set_text(OpaquePointer(previewLabel), model.preview)
    }

    /// The entry's text.
    var entryText: String { String(cString: gtk_editable_get_text(OpaquePointer(nameEntry))) }

    private func followed(_ key: String, _ value: String) {
        guard !isSettingUp else { return }
        lastFollowed[key] = monotonicNanoseconds()
        if printsChanges {
            print("window follows: \(key) = \(value)")
            fflush(nil)
        }
    }

    // MARK: - Widgets to model

    /// A widget's write: counted when it changed the setting.
    private func write<Value: Equatable>(_ keyPath: ReferenceWritableKeyPath<PreferencesModel, Value>, _ value: Value) {
        if model[keyPath: keyPath] != value { widgetWrites += 1 }
        model[keyPath: keyPath] = value
    }

    private func connectSignals() {
        let me = Unmanaged.passUnretained(self).toOpaque()
        typealias Handler = @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void
        typealias NotifyHandler = @convention(c) (OpaquePointer?, OpaquePointer?, UnsafeMutableRawPointer?) -> Void
        func connect(_ widget: UnsafeMutablePointer<GtkWidget>, _ signal: String, _ handler: Handler) {
            cgtk_connect(widget, signal, unsafeBitCast(handler, to: GCallback.self), me)
        }
        func connect(_ widget: UnsafeMutablePointer<GtkWidget>, _ signal: String, _ handler: NotifyHandler) {
            cgtk_connect(widget, signal, unsafeBitCast(handler, to: GCallback.self), me)
        }
        connect(fontSizeSpin, "value-changed") { spin, data in
            let size = Int(gtk_spin_button_get_value_as_int(spin))
            preferencesWindow(data).write(\.fontSize, size)
        }
        connect(lineNumbersSwitch, "notify::active") { toggle, _, data in
            preferencesWindow(data).write(\.showLineNumbers, gtk_switch_get_active(toggle) != 0)
        }
        connect(themeDropDown, "notify::selected") { dropDown, _, data in
            let index = Int(gtk_drop_down_get_selected(dropDown))
            guard Theme.allCases.indices.contains(index) else { return }
            preferencesWindow(data).write(\.theme, Theme.allCases[index])
        }
        connect(nameEntry, "changed") { _, data in
            let text = preferencesWindow(data).entryText
            preferencesWindow(data).write(\.displayName, text.isEmpty ? nil : text)
        }
        connect(resetButtons["theme"]!, "clicked") { _, _ in Defaults.reset(.theme) }
        connect(resetButtons["fontSize"]!, "clicked") { _, _ in Defaults.reset(.fontSize) }
        connect(resetButtons["showLineNumbers"]!, "clicked") { _, _ in Defaults.reset(.showLineNumbers) }
        connect(resetButtons["displayName"]!, "clicked") { _, _ in Defaults.reset(.displayName) }
        connect(resetAllButton, "clicked") { _, data in preferencesWindow(data).model.resetAll() }
        let close: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { _, data in
            preferencesWindow(data).isOpen = false
            return 0  // Let it close.
        }
        cgtk_connect(window, "close-request", unsafeBitCast(close, to: GCallback.self), me)
    }
}

/// A widget as the GTK type a function takes, where that type is a struct Swift can see.
///
/// (Other GTK types are opaque in Swift, and `OpaquePointer(widget)` passes those.)
func typed<Widget>(_ widget: UnsafeMutablePointer<GtkWidget>) -> UnsafeMutablePointer<Widget> {
    UnsafeMutableRawPointer(widget).assumingMemoryBound(to: Widget.self)
}

/// The window a signal handler's user data points to.
private func preferencesWindow(_ data: UnsafeMutableRawPointer?) -> PreferencesWindow {
    Unmanaged<PreferencesWindow>.fromOpaque(data!).takeUnretainedValue()
}

/// `CLOCK_MONOTONIC` now, in nanoseconds: one clock for every process on the machine.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
