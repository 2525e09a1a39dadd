import CGtk
import DefaultsGtk
import DefaultsObservation

/// The "Editor preferences" window: a widget per setting, a reset button beside each, "Reset all",
/// a "View" menu, and a preview label drawn from all four.
///
/// Each widget is bound to its key in one line: it shows the key's value, follows every change of
/// it made anywhere (this window, another one, the `defaults` command, a hand edit), and writes the
/// user's changes. The menu's items are the keys' actions.
@MainActor
final class PreferencesWindow {
    let model = PreferencesModel()
    let window: UnsafeMutablePointer<GtkWidget>
    let themeDropDown: UnsafeMutablePointer<GtkWidget>
    let fontSizeSpin: UnsafeMutablePointer<GtkWidget>
    let lineNumbersSwitch: UnsafeMutablePointer<GtkWidget>
    let nameEntry: UnsafeMutablePointer<GtkWidget>
    let previewLabel: UnsafeMutablePointer<GtkWidget>
    private(set) var resetButtons: [String: UnsafeMutablePointer<GtkWidget>] = [:]
    let resetAllButton: UnsafeMutablePointer<GtkWidget>
    /// Set when the window is closed.
    private(set) var isOpen = true
    private var preview: Defaults.Observation?

    init(printsChanges: Bool) {
        window = gtk_window_new()
        gtk_window_set_title(typed(window), "Editor preferences")
        gtk_window_set_default_size(typed(window), 560, 300)
        themeDropDown = dropDown(listing: Theme.allCases.map(\.rawValue))
        fontSizeSpin = gtk_spin_button_new_with_range(6, 72, 1)
        lineNumbersSwitch = gtk_switch_new()
        gtk_widget_set_halign(lineNumbersSwitch, GTK_ALIGN_START)
        nameEntry = gtk_entry_new()
        gtk_entry_set_placeholder_text(typed(nameEntry), "Anonymous")
        previewLabel = gtk_label_new("")
        resetAllButton = gtk_button_new_with_label("Reset all")

        Defaults.bind(.theme, to: themeDropDown, property: "selected", mapping: .caseIndex)
        Defaults.bind(.fontSize, to: fontSizeSpin, property: "value")
        Defaults.bind(.showLineNumbers, to: lineNumbersSwitch, property: "active")
        Defaults.bind(.displayName, to: nameEntry, property: "text")

        let actions = g_simple_action_group_new()!
        Defaults.addAction(for: .showLineNumbers, to: actions)
        Defaults.addAction(for: .theme, to: actions)
        gtk_widget_insert_action_group(window, "prefs", OpaquePointer(actions))
        g_object_unref(actions)

        layOut()
        connectButtons()
        let model = model
        preview = Defaults.observeOnMainLoop(keys: [.theme, .fontSize, .showLineNumbers, .displayName]) {
            [previewLabel] in
            gtk_label_set_text(OpaquePointer(previewLabel), model.preview)
            if printsChanges { print("settings: \(model.preview)") }
        }
    }

    /// Shows the window.
    func present() {
        gtk_window_present(typed(window))
    }

    /// A grid of a label, the widget and a reset button per setting; the preview and "Reset all"
    /// below; the "View" menu in the title bar.
    private func layOut() {
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
        gtk_widget_set_margin_top(previewLabel, 12)
        gtk_grid_attach(typed(grid), previewLabel, 0, 4, 3, 1)
        gtk_widget_set_halign(resetAllButton, GTK_ALIGN_END)
        gtk_grid_attach(typed(grid), resetAllButton, 0, 5, 3, 1)
        gtk_window_set_child(typed(window), grid)

        let menu = g_menu_new()!
        g_menu_append(menu, "Show line numbers", "prefs.showLineNumbers")
        let themes = g_menu_new()!
        for theme in Theme.allCases {
            g_menu_append(themes, theme.rawValue.capitalized, "prefs.theme::\(theme.rawValue)")
        }
        g_menu_append_section(menu, "Theme", UnsafeMutablePointer<GMenuModel>(themes))
        let menuButton = gtk_menu_button_new()!
        gtk_menu_button_set_label(OpaquePointer(menuButton), "View")
        gtk_menu_button_set_menu_model(OpaquePointer(menuButton), UnsafeMutablePointer<GMenuModel>(menu))
        let header = gtk_header_bar_new()!
        gtk_header_bar_pack_end(OpaquePointer(header), menuButton)
        gtk_window_set_titlebar(typed(window), header)
        g_object_unref(UnsafeMutableRawPointer(themes))
        g_object_unref(UnsafeMutableRawPointer(menu))
    }

    private func connectButtons() {
        typealias Clicked = @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void
        func connect(_ button: UnsafeMutablePointer<GtkWidget>, _ handler: Clicked) {
            cgtk_connect(button, "clicked", unsafeBitCast(handler, to: GCallback.self), nil)
        }
        connect(resetButtons["theme"]!) { _, _ in Defaults.reset(.theme) }
        connect(resetButtons["fontSize"]!) { _, _ in Defaults.reset(.fontSize) }
        connect(resetButtons["showLineNumbers"]!) { _, _ in Defaults.reset(.showLineNumbers) }
        connect(resetButtons["displayName"]!) { _, _ in Defaults.reset(.displayName) }
        connect(resetAllButton) { _, _ in PreferencesModel.resetAll() }
        let close: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { _, data in
            let address = Int(bitPattern: data)
            MainActor.assumeIsolated { PreferencesWindow.at(address).isOpen = false }
            return 0  // Let it close.
        }
        cgtk_connect(
            window,
            "close-request",
            unsafeBitCast(close, to: GCallback.self),
            Unmanaged.passUnretained(self).toOpaque()
        )
    }

    /// The window at `address`, a signal handler's user data.
    private static func at(_ address: Int) -> PreferencesWindow {
        Unmanaged<PreferencesWindow>.fromOpaque(UnsafeRawPointer(bitPattern: address)!).takeUnretainedValue()
    }
}

/// A drop-down listing `items`.
private func dropDown(listing items: [String]) -> UnsafeMutablePointer<GtkWidget> {
    let names = items.map { strdup($0) } + [nil]
    defer { for name in names { free(name) } }
    return names.withUnsafeBufferPointer { buffer in
        buffer.baseAddress!
            .withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                gtk_drop_down_new_from_strings($0)
            }
    }
}

/// A widget as the GTK type a function takes, where that type is a struct Swift can see.
///
/// (Other GTK types are opaque in Swift, and `OpaquePointer(widget)` passes those.)
func typed<Widget>(_ widget: UnsafeMutablePointer<GtkWidget>) -> UnsafeMutablePointer<Widget> {
    UnsafeMutableRawPointer(widget).assumingMemoryBound(to: Widget.self)
}

/// `CLOCK_MONOTONIC` now, in nanoseconds: one clock for every process on the machine.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
