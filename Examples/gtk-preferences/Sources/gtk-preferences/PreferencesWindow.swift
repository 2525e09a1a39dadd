import CAdw
import DefaultsAdwaita
import DefaultsGtk
import DefaultsObservation

/// The "Editor preferences" window: made from the four keys in one call, with a preview of the
/// program's own beneath them.
///
/// Each row is bound to its key: it shows the key's value, follows every change of it made
/// anywhere (this window, another one, the `defaults` command, a hand edit), and writes the
/// user's changes; it offers a reset while the user's file holds the key, and the group "Reset
/// all". The keys' actions (a menu's items, in a program's main window) are on the window too.
@MainActor
final class EditorWindow {
    let model = PreferencesModel()
    let preferences: PreferencesWindow
    let previewLabel: UnsafeMutablePointer<GtkWidget>
    private var preview: Defaults.Observation?

    init(printsChanges: Bool) {
        preferences = PreferencesWindow(
            title: "Editor preferences",
            groups: [
                PreferencesGroup(
                    "Editor",
                    [
                        .row(.theme), .row(.fontSize, subtitle: "In points"), .row(.showLineNumbers),
                        .row(.displayName, subtitle: "Shown in the preview"),
                    ]
                )
            ]
        )
        gtk_window_set_default_size(typed(preferences.window), 560, 520)

        // The program's own group under the rows: what the settings make.
        previewLabel = gtk_label_new("")
        let previewGroup = adw_preferences_group_new()!
        adw_preferences_group_set_title(typed(previewGroup), "Preview")
        adw_preferences_group_add(typed(previewGroup), previewLabel)
        adw_preferences_page_add(typed(preferences.pages[0].page), typed(previewGroup))

        let actions = g_simple_action_group_new()!
        Defaults.addAction(for: .showLineNumbers, to: actions)
        Defaults.addAction(for: .theme, to: actions)
        gtk_widget_insert_action_group(preferences.window, "prefs", OpaquePointer(actions))
        g_object_unref(actions)

        let model = model
        preview = Defaults.observeOnMainLoop(keys: [.theme, .fontSize, .showLineNumbers, .displayName]) {
            [previewLabel] in
            gtk_label_set_text(OpaquePointer(previewLabel), model.preview)
            if printsChanges { print("settings: \(model.preview)") }
        }
    }

    var window: UnsafeMutablePointer<GtkWidget> { preferences.window }
    var isOpen: Bool { preferences.isOpen }
    /// The widgets the rows made, for the self-test.
    var fontSizeSpin: UnsafeMutablePointer<GtkWidget> { editor(of: "fontSize") }
    var lineNumbersSwitch: UnsafeMutablePointer<GtkWidget> { editor(of: "showLineNumbers") }
    var themeRow: UnsafeMutablePointer<GtkWidget> { editor(of: "theme") }
    var nameEntry: UnsafeMutablePointer<GtkWidget> { editor(of: "displayName") }
    var resetButtons: [String: UnsafeMutablePointer<GtkWidget>] {
        Dictionary(uniqueKeysWithValues: preferences.pages[0].rows.map { ($0.keyName, $0.resetButton) })
    }
    var resetAllButton: UnsafeMutablePointer<GtkWidget> { preferences.pages[0].resetAllButtons[0] }

    /// Shows the window.
    func present() {
        preferences.present()
    }

    private func editor(of key: String) -> UnsafeMutablePointer<GtkWidget> {
        preferences.row(named: key)!.editor!
    }
}

/// A widget as the GTK or libadwaita type a function takes, where that type is a struct Swift can
/// see.
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
