// `defaults-gtk-test-helper preferences <settings.json>`: a preferences window made by
// DefaultsAdwaita from keys of every row kind, for its tests. Needs a display (Xvfb in CI).
// `defaults-gtk-test-helper editor <settings.json | suite name>`: the window defaults-editor shows,
// made from the schema beside the file (a suite by name opened with its system files); it prints "changed" after each change of the suite instead of
// events, and takes the same commands.
//
// The suite's system file is system.json beside the settings file. Keys: group "Editor":
// fontSize (Int, 12, 6...72, "Font size"), showLineNumbers (Bool, true, "Show line numbers"),
// theme (Theme, .system, "Colour theme"), zoom (Double, 1, 0.5...3, "Zoom"); group "You":
// displayName (String?, "Display name"), title (String, "Untitled", no summary), windowSize
// (Size, 800×600, "Window size": a read-only JSON row).
//
// HELPER_MORE_ROWS=<n> adds a group "More" of n keys more0... (Int, 0, 0...99, "More <i>"), and the
// helper prints "first frame rows=<rows GTK has> complete=<whether the pages made all>" when the
// window's first frame is painted; with HELPER_MORE_ON_PAGE_2=1 that group is on a second page.
// Variables PREFS_<KEY> override keys for the run (`overrideWithEnvironment(prefix: "PREFS_")`), and
// so do arguments after the file (`-fontSize 30`: `overrideWithLaunchArguments()`).
// It prints "event <key> <stored JSON or (none)>" on the main loop after each change of a key (after
// the rows took it in), and "ready". Commands, one a line; each runs on the main loop and ends with "ok <command>"
// once the loop has nothing left to do:
//
//     rows                       one line per row: "row <key> kind=<kind> value=<editor's value>
//                                reset=<shown> status=<shown> sensitive=<row's> editable=<editor's>
//                                bounds=<lower>..<upper> subtitle=<text> tip=<status icon's tooltip>"
//                                (spaces in the last two as "_")
//     set <key> <value>          sets the editor as the person would ("" for empty text)
//     reset <key>                clicks the row's reset button
//     resetall <group index>     clicks the group's "Reset all"
//     search <text>              opens the window's search (its toggle button), types <text> in it, then prints "found <title>..." for each row shown
//                                ("found" alone when none)
//     tree                       "tree <title>...": the rows' titles as GTK has them, in order,
//                                once the pages made them all (maybe after "ok tree")
//     screenshot <path>          a PNG of the window, through GTK's renderer
//     write <key> <int>          writes from a background thread   sync   synchronize()
import CAdw
import DefaultsAdwaita
import DefaultsGtk
import DefaultsObservation
import Foundation

/// A window's size, stored as JSON: no row edits it.
struct Size: Codable, Equatable, Defaults.Serializable {
    var width: Int
    var height: Int
}

/// The preferences window and its keys; used on the main loop only.
@MainActor
final class PreferencesSession {
    let suite: Defaults.Suite
    let window: PreferencesWindow
    private var observations: [Defaults.Observation] = []

    /// The window `defaults-editor` shows for `address` (a settings file's path, or a suite's
    /// name, opened with its system files as the editor opens it): made from the schema beside it.
    init(editing address: String) {
        suite = try! DefaultsEditor.openSuite(address)
        let schema = try? DefaultsEditor.schema(of: suite)
        window = PreferencesWindow(title: "Settings", pages: [PreferencesPage(schema: schema, suite: suite)])
        // No keys to name: each change of the suite, once the rows took it in.
        observations.append(
            Defaults.observe(suite: suite, options: []) {
                GLibMainLoop.deliver { report("changed") }
            }
        )
        show()
    }

    /// The helper's own window (see the top of the file).
    init(file: URL) {
        suite = Defaults.Suite(
            fileURL: file,
            systemFiles: [file.deletingLastPathComponent().appendingPathComponent("system.json")]
        )
        suite.overrideWithEnvironment(prefix: "PREFS_")
        suite.overrideWithLaunchArguments()
        let fontSize = Defaults.Key<Int>("fontSize", default: 12, suite: suite, summary: "Font size", range: 6...72)
        let showLineNumbers = Defaults.Key<Bool>(
            "showLineNumbers",
            default: true,
            suite: suite,
            summary: "Show line numbers"
        )
        let theme = Defaults.Key<Theme>("theme", default: .system, suite: suite, summary: "Colour theme")
        let zoom = Defaults.Key<Double>("zoom", default: 1, suite: suite, summary: "Zoom", range: 0.5...3)
        let displayName = Defaults.Key<String?>("displayName", suite: suite, summary: "Display name")
        let title = Defaults.Key<String>("title", default: "Untitled", suite: suite)
        let windowSize = Defaults.Key<Size>(
            "windowSize",
            default: Size(width: 800, height: 600),
            suite: suite,
            summary: "Window size"
        )
        // More rows than a first screen shows, for the test of the rows made later.
        let more = (0..<(Int(ProcessInfo.processInfo.environment["HELPER_MORE_ROWS"] ?? "") ?? 0))
            .map { [suite] index in
                Defaults.Key<Int>("more\(index)", default: 0, suite: suite, summary: "More \(index)", range: 0...99)
            }
        let groups = [
            PreferencesGroup(
                "Editor",
                [
                    .row(fontSize, subtitle: "In points"), .row(showLineNumbers), .row(theme),
                    .row(zoom, subtitle: "Of the text"),
                ]
            ),
            PreferencesGroup(
                "You",
                description: "How others see you",
                [.row(displayName, subtitle: "Shown to others"), .row(title), .row(windowSize)]
            ),
        ]
        let moreGroup = more.isEmpty ? [] : [PreferencesGroup("More", more.map { .row($0) })]
        if ProcessInfo.processInfo.environment["HELPER_MORE_ON_PAGE_2"] == "1" {
            window = PreferencesWindow(
                title: "Editor preferences",
                pages: [PreferencesPage(groups: groups), PreferencesPage(title: "More", groups: moreGroup)]
            )
        } else {
            window = PreferencesWindow(title: "Editor preferences", groups: groups + moreGroup)
        }
        let keys: [Defaults._AnyKey] = [fontSize, showLineNumbers, theme, zoom, displayName, title, windowSize] + more
        for key in keys {
            let suite = suite
            observations.append(
                Defaults.observeOnMainLoop(keys: [key], options: []) {
                    report("event \(key.name) \(suite.storedValue(named: key.name)?.description ?? "(none)")")
                }
            )
        }
        show()
    }

    private func show() {
        gtk_window_set_default_size(
            UnsafeMutableRawPointer(window.window).assumingMemoryBound(to: GtkWindow.self),
            600,
            760
        )
        window.present()
        // At the first frame: how many rows GTK has then, and whether the page says it made all.
        let painted: @convention(c) (gpointer?, gpointer?) -> Void = { clock, data in
            let session = Unmanaged<PreferencesSession>.fromOpaque(data!).takeUnretainedValue()
            MainActor.assumeIsolated {
                guard !session.firstFrameSeen else { return }
                session.firstFrameSeen = true
                let complete = session.window.pages.allSatisfy(\.isComplete)
                report("first frame rows=\(session.rowTitles().count) complete=\(complete)")
            }
        }
        cadw_connect(
            UnsafeMutableRawPointer(gtk_widget_get_frame_clock(window.window)),
            "after-paint",
            unsafeBitCast(painted, to: GCallback.self),
            Unmanaged.passUnretained(self).toOpaque()
        )
    }

    private var firstFrameSeen = false

    /// Prints the rows' titles as GTK has them once every page says it made all its rows.
    private func reportTreeWhenComplete() {
        whenSettled { [self] in
            guard window.pages.allSatisfy(\.isComplete) else { return reportTreeWhenComplete() }
            report((["tree"] + rowTitles()).joined(separator: " "))
        }
    }

    /// The titles of the rows in the window's widgets, in order, as GTK has them (not asking the
    /// page, which would make the rows it has not made yet).
    private func rowTitles() -> [String] {
        var titles: [String] = []
        walk(window.window) { widget in
            guard cadw_is_preferences_row(widget) != 0 else { return }
            titles.append(
                String(cString: adw_preferences_row_get_title(typed(widget))).replacingOccurrences(of: " ", with: "_")
            )
        }
        return titles
    }

    func run(_ words: [String]) {
        switch words.first {
        case "rows":
            for page in window.pages {
                for row in page.rows { report(describe(row)) }
            }
        case "set":
            guard words.count == 3, let row = window.row(named: words[1]), let editor = row.editor else { return }
            let value = words[2]
            switch row.kind {
            case .toggle: gtk_switch_set_active(OpaquePointer(editor), value == "true" ? 1 : 0)
            case .number: gtk_spin_button_set_value(OpaquePointer(editor), Double(value) ?? 0)
            case .choice: adw_combo_row_set_selected(typed(editor), UInt32(value) ?? 0)
            case .text: gtk_editable_set_text(OpaquePointer(editor), value == "\"\"" ? "" : value)
            case .json, .list, .group: break
            case .optional:
                // As a person does: the switch on (or off, for null), then the value.
                let isSet = widgets(under: row.row).first { cadw_is_switch($0) != 0 && $0 != editor }!
                gtk_switch_set_active(OpaquePointer(isSet), value == "null" ? 0 : 1)
                if value != "null" { setWidget(editor, value) }
            case .jsonText:
                gtk_editable_set_text(OpaquePointer(editor), words.dropFirst(2).joined(separator: " "))
                cadw_emit(editor, "apply")
            }
        case "list":
            // list <key> add | remove <i> | up <i> | down <i> | set <i> <value>
            guard words.count >= 3, let row = window.row(named: words[1]) else { return }
            let children = elementRows(of: row.row)
            func button(_ tip: String, in widget: Widget) -> Widget? {
                widgets(under: widget).first { cadw_is_button($0) != 0 && tooltip($0) == tip }
            }
            let index = words.count >= 4 ? Int(words[3]).map { $0 - 1 } : nil
            switch words[2] {
            case "add":
                if let add = button("Add an element", in: row.row) { cadw_click(add) }
            case "remove", "up", "down":
                let tip = ["remove": "Remove", "up": "Move up", "down": "Move down"][words[2]]!
                if let index, children.indices.contains(index), let pressed = button(tip, in: children[index]) {
                    cadw_click(pressed)
                }
            case "set":
                if let index, children.indices.contains(index), words.count == 5,
                    let editor = editors(under: children[index]).first
                {
                    setWidget(editor, words[4])
                }
            default: break
            }
        case "member":
            // member <key> <member title> <value>
            guard words.count == 4, let row = window.row(named: words[1]) else { return }
            for child in memberRows(of: row.row) where title(of: child) == words[2] {
                if let editor = editors(under: child).first { setWidget(editor, words[3]) }
            }
        case "reset":
            if words.count == 2, let row = window.row(named: words[1]) { cadw_click(row.resetButton) }
        case "resetproblem":
            // The Reset button of the row that says the stored value breaks the schema.
            if words.count == 2, let row = window.row(named: words[1]), let problem = row.problemRow,
                let reset = widgets(under: problem).first(where: { cadw_is_button($0) != 0 })
            {
                cadw_click(reset)
            }
        case "expand":
            if words.count == 2, let row = window.row(named: words[1]) {
                adw_expander_row_set_expanded(typed(row.row), 1)
            }
        case "resetall":
            if words.count == 2, let index = Int(words[1]) { cadw_click(window.pages[0].resetAllButtons[index]) }
        case "search":
            var entries: [Widget] = []
            walk(window.window) { widget in
                // The search opened, as the person opens it: its button (the window's one toggle).
                if cadw_is_toggle_button(widget) != 0 { gtk_toggle_button_set_active(typed(widget), 1) }
                if cadw_is_search_entry(widget) != 0 { entries.append(widget) }
            }
            guard let entry = entries.first else { return report("no search entry") }
            // NB: at once, not after the entry's usual pause for typing.
            gtk_search_entry_set_search_delay(OpaquePointer(entry), 0)
            gtk_editable_set_text(OpaquePointer(entry), words.dropFirst().joined(separator: " "))
            whenSettled { [window] in
                var titles: [String] = []
                walk(window.window) { widget in
                    guard cadw_is_preferences_row(widget) != 0, isShown(widget) else { return }
                    titles.append(
                        String(cString: adw_preferences_row_get_title(typed(widget)))
                            .replacingOccurrences(of: " ", with: "_")
                    )
                }
                report((["found"] + titles).joined(separator: " "))
            }
        case "tree":
            reportTreeWhenComplete()
        case "screenshot":
            if words.count == 2 {
                report(window.savePicture(to: words[1]) ? "saved" : "not saved")
            }
        default:
            report("unknown command \(words.joined(separator: " "))")
        }
    }

    private func describe(_ row: PreferencesRowWidgets) -> String {
        func flag(_ value: gboolean) -> String { value != 0 ? "true" : "false" }
        func words(_ text: UnsafePointer<CChar>?) -> String {
            guard let text else { return "-" }
            let string = String(cString: text)
            return string.isEmpty
                ? "-"
                : string.replacingOccurrences(of: " ", with: "_")
                    .replacingOccurrences(of: "\n", with: "/")
        }
        var line = "row \(row.keyName) kind=\(row.kind)"
        switch row.kind {
        case .toggle: line += " value=\(propertyText(row.editor!, "active"))"
        case .number:
            let adjustment = gtk_spin_button_get_adjustment(OpaquePointer(row.editor!))
            line += " value=\(gtk_spin_button_get_value(OpaquePointer(row.editor!)))"
            line += " bounds=\(gtk_adjustment_get_lower(adjustment))..\(gtk_adjustment_get_upper(adjustment))"
            line += " step=\(gtk_adjustment_get_step_increment(adjustment))"
        case .choice:
            let selected = adw_combo_row_get_selected(typed(row.row))
            let item = adw_combo_row_get_selected_item(typed(row.row))
            let name = item.map { String(cString: gtk_string_object_get_string(OpaquePointer($0))) } ?? "-"
            line += " value=\(selected) name=\(name.replacingOccurrences(of: " ", with: "_"))"
        case .text: line += " value=\(propertyText(row.editor!, "text"))"
        case .json: break
        case .optional:
            let isSet = widgets(under: row.row).first { cadw_is_switch($0) != 0 && $0 != row.editor }!
            line += " value=\(widgetText(row.editor!)) set=\(flag(gtk_switch_get_active(OpaquePointer(isSet))))"
            line += " editorshown=\(flag(gtk_widget_get_visible(row.editor!)))"
        case .list:
            let shown = elementRows(of: row.row).map { child in editors(under: child).map(widgetText).joined() }
            line += " elements=\(words(shown.joined(separator: ",")))"
            line += " subtitle=\(words(adw_expander_row_get_subtitle(typed(row.row))))"
        case .group:
            let shown = memberRows(of: row.row)
                .map { child in
                    title(of: child) + ":" + editors(under: child).map(widgetText).joined()
                }
            line += " members=\(words(shown.joined(separator: ",")))"
            line += " subtitle=\(words(adw_expander_row_get_subtitle(typed(row.row))))"
        case .jsonText:
            line += " value=\(words(gtk_editable_get_text(OpaquePointer(row.row))))"
        }
        line += " error=\(flag(gtk_widget_has_css_class(row.row, "error")))"
        line += " hidden=\(flag(gtk_widget_get_visible(row.row) == 0 ? 1 : 0))"
        if let problem = row.problemRow, gtk_widget_get_visible(problem) != 0 {
            line += " problem=\(words(adw_action_row_get_subtitle(typed(problem))))"
            let buttons = widgets(under: problem).filter { cadw_is_button($0) != 0 && isShown($0) }
            line += " problemreset=\(flag(buttons.isEmpty ? 0 : 1))"
        }
        if let alternate = row.alternateRow, gtk_widget_get_visible(alternate) != 0 {
            line += " alternate=\(words(gtk_editable_get_text(OpaquePointer(alternate))))"
            line += " alternatetip=\(words(gtk_widget_get_tooltip_text(alternate)))"
        }
        if let tip = gtk_widget_get_tooltip_text(row.row), row.kind != .text {
            line += " rowtip=\(words(tip))"
        }
        line += " reset=\(flag(gtk_widget_get_visible(row.resetButton)))"
        line += " status=\(flag(gtk_widget_get_visible(row.statusIcon)))"
        line += " sensitive=\(flag(gtk_widget_get_sensitive(row.row)))"
        if let editor = row.editor { line += " editable=\(flag(gtk_widget_is_sensitive(editor)))" }
        line += " title=\(words(adw_preferences_row_get_title(typed(row.row))))"
        if ![.text, .jsonText, .list, .group].contains(row.kind) {
            line += " subtitle=\(words(adw_action_row_get_subtitle(typed(row.row))))"
        }
        line += " tip=\(words(gtk_widget_get_tooltip_text(row.statusIcon)))"
        return line
    }
}

func runPreferences(address: String, editing: Bool) -> Never {
    gtk_init()
    GLibMainLoop.driveMainActor()
    // Off, so a stack shows its new page at once, not after a crossfade.
    cadw_set_animations(0)
    let session = MainActor.assumeIsolated {
        editing ? PreferencesSession(editing: address) : PreferencesSession(file: URL(fileURLWithPath: address))
    }
    let suite = MainActor.assumeIsolated { session.suite }
    runWindowCommands(suite: suite) { words in session.run(words) }
}
