import CAdw
import DefaultsGtk
import DefaultsObservation
import Foundation

/// A preferences window (an `AdwPreferencesWindow`, searchable by the rows' titles and subtitles)
/// made from keys: one call.
///
/// Closing it hides it; it is destroyed when this object goes.
///
/// ```swift
/// let preferences = PreferencesWindow(groups: [
///     PreferencesGroup("Editor", [.row(.fontSize), .row(.showLineNumbers), .row(.theme)]),
///     PreferencesGroup("You", [.row(.displayName)]),
/// ])
/// preferences.present()
/// ```
@MainActor
public final class PreferencesWindow {
    /// The `AdwPreferencesWindow`.
    public let window: Widget
    /// Its pages, in order.
    public let pages: [PreferencesPage]

    /// A window of `pages`.
    ///
    /// - Parameters:
    ///   - title: The window's title.
    ///   - pages: The pages, in order.
    public init(title: String = "Preferences", pages: [PreferencesPage]) {
        adw_init()
        window = adw_preferences_window_new()!
        gtk_window_set_title(typed(window), title)
        adw_preferences_window_set_search_enabled(typed(window), 1)
        self.pages = pages
        for page in pages { adw_preferences_window_add(typed(window), typed(page.page)) }
        // Closing hides the window, which lives as long as this object: `present()` again, from
        // a menu, shows it again, and its rows are never used after they are gone.
        gtk_window_set_hide_on_close(typed(window), 1)
        g_object_ref(UnsafeMutableRawPointer(window))
        // Every page makes its rows once the window is first drawn, the pages not shown too: the
        // search looks in all of them.
        let mapped: @convention(c) (gpointer?, gpointer?) -> Void = { _, data in
            let window = Unmanaged<PreferencesWindow>.fromOpaque(data!).takeUnretainedValue()
            MainActor.assumeIsolated {
                for page in window.pages { page.makeRestAfterPaint(of: window.window) }
            }
        }
        mapHandler = cadw_connect(
            window,
            "map",
            unsafeBitCast(mapped, to: GCallback.self),
            Unmanaged.passUnretained(self).toOpaque()
        )
    }

    /// The window's "map" handler, which calls this object: disconnected when it goes.
    private var mapHandler: gulong = 0

    isolated deinit {
        g_signal_handler_disconnect(UnsafeMutableRawPointer(window), mapHandler)
        gtk_window_destroy(typed(window))
        g_object_unref(UnsafeMutableRawPointer(window))
    }

    /// A window of one page of `groups`.
    ///
    /// - Parameters:
    ///   - title: The window's title.
    ///   - groups: The groups, in order.
    public convenience init(title: String = "Preferences", groups: [PreferencesGroup]) {
        self.init(title: title, pages: [PreferencesPage(groups: groups)])
    }

    /// Shows the window.
    public func present() {
        gtk_window_present(typed(window))
    }

    /// Whether the window is showing: `false` once the person closed it (which hides it:
    /// ``present()`` shows it again).
    public var isOpen: Bool { gtk_widget_get_visible(window) != 0 }

    /// Saves a picture of the window, as drawn now, to a PNG at `path` (for self-tests and
    /// documentation), through GTK's renderer; no screen capture.
    ///
    /// - Returns: Whether the file was written: `false` while the window is not drawn yet.
    @discardableResult
    public func savePicture(to path: String) -> Bool {
        cgtk_save_png(window, path) != 0
    }

    /// The widgets of the row of the key named `name`, on any page.
    public func row(named name: String) -> PreferencesRowWidgets? {
        for page in pages {
            if let row = page.row(named: name) { return row }
        }
        return nil
    }
}

/// Keeps a row's reset button and status icon in step with its key; lives as long as the row
/// (the row holds it), and observes nothing once the row is disposed.
@MainActor
final class RowController {
    /// A closure a signal runs.
    final class Handler {
        let run: @MainActor () -> Void
        init(_ run: @escaping @MainActor () -> Void) { self.run = run }
    }

    private let row: PreferencesRow
    private let widgets: PreferencesRowWidgets
    private let subtitle: String?
    private var observation: Defaults.Observation?
    /// What the row shows now: at first, what `make` made it show.
    private var last: Shown
    /// Set when the row is disposed.
    private var isGone = false
    /// What is wrong with the stored value now, by the row's schema; `nil` when nothing is.
    private var problem: StoredProblem?
    /// The row shown in this one's place while the stored value breaks its schema: made the first
    /// time one does.
    private var problemRow: Widget?
    /// The problem row's Reset button.
    private var problemReset: Widget?
    /// The row shown in this one's place while its editor cannot show the stored value exactly:
    /// made the first time it cannot.
    private var alternateRow: Widget?

    private init(row: PreferencesRow, widgets: PreferencesRowWidgets) {
        self.row = row
        self.widgets = widgets
        subtitle = row.subtitle
        last = Shown(line: row.subtitle ?? "", tooltip: widgets.kind.isEntry ? row.subtitle : nil)
    }

    /// Makes `row`'s widgets, bound, with their controller.
    static func make(_ row: PreferencesRow) -> PreferencesRowWidgets {
        let made = row.make(row.title, row.subtitle)
        let status = gtk_image_new_from_icon_name("changes-prevent-symbolic")!
        gtk_widget_set_visible(status, 0)
        let reset = gtk_button_new_from_icon_name("edit-undo-symbolic")!
        gtk_widget_set_visible(reset, 0)
        gtk_widget_set_tooltip_text(reset, "Reset to the default")
        gtk_widget_add_css_class(reset, "flat")
        gtk_widget_set_valign(reset, GTK_ALIGN_CENTER)
        switch made.kind {
        case .text, .jsonText:
            adw_entry_row_add_suffix(typed(made.row), status)
            adw_entry_row_add_suffix(typed(made.row), reset)
        case .list, .group:
            adw_expander_row_add_action(typed(made.row), status)
            adw_expander_row_add_action(typed(made.row), reset)
        default:
            adw_action_row_add_suffix(typed(made.row), status)
            adw_action_row_add_suffix(typed(made.row), reset)
        }
        let widgets = PreferencesRowWidgets(
            keyName: row.keyName,
            kind: made.kind,
            row: made.row,
            editor: made.editor,
            resetButton: reset,
            statusIcon: status
        )
        let controller = RowController(row: row, widgets: widgets)
        connect(reset, "clicked", Handler(row.reset))
        controller.observation = row.observe { [weak controller] in controller?.update() }
        controller.update()
        // Told when the row is disposed, before its widgets go: nothing is observed after.
        g_object_weak_ref(
            UnsafeMutableRawPointer(made.row).assumingMemoryBound(to: GObject.self),
            { data, _ in
                let controller = Unmanaged<RowController>.fromOpaque(data!).takeUnretainedValue()
                MainActor.assumeIsolated { controller.end() }
            },
            Unmanaged.passUnretained(controller).toOpaque()
        )
        // Held by the row, released when it is finalized.
        g_object_set_data_full(
            UnsafeMutableRawPointer(made.row).assumingMemoryBound(to: GObject.self),
            "defaults-row",
            Unmanaged.passRetained(controller).toOpaque(),
            { pointer in
                guard let pointer else { return }
                let controller = Unmanaged<RowController>.fromOpaque(pointer).takeRetainedValue()
                MainActor.assumeIsolated { controller.observation?.invalidate() }
            }
        )
        return widgets
    }

    /// Shows the key's state.
    ///
    /// The reset button while the user's settings hold it, the lock or the override, the JSON of a
    /// read-only row.
    /// Stops observing: the row is being disposed.
    func end() {
        isGone = true
        observation?.invalidate()
        observation = nil
    }

    func update() {
        guard !isGone else { return }
        let source = row.source()
        var shown = Shown(line: subtitle ?? "", tooltip: widgets.kind.isEntry ? subtitle : nil)
        switch source {
        case .userFile, .suiteStorage: shown.stored = true
        case .locked(let file, _): shown.status = ("changes-prevent-symbolic", "Locked by \(file.path)")
        case .launchArgument: shown.status = ("dialog-information-symbolic", "Set for this run by a launch argument")
        case .environment(let variable):
            shown.status = ("dialog-information-symbolic", "Set for this run by the environment variable \(variable)")
        case .secret(let file): shown.status = ("dialog-password-symbolic", "A secret, read from \(file.path)")
        case .systemFile, .defaultValue: break
        }
        // A locked key cannot change here: the whole row says so (its editor's binding already
        // made the editor insensitive).
        if case .locked = source { shown.locked = true }
        let report = row.storedReport?() ?? StoredReport()
        // What the check could not apply is said where nothing else is.
        if shown.status == nil, let note = report.uncheckedNote { shown.status = ("dialog-warning-symbolic", note) }
        if let status = shown.status { shown.tooltip = status.text }
        if widgets.kind.hasSubtitle {
            if let json = row.shownJSON?() { shown.line = shown.line.isEmpty ? json : shown.line + "\n" + json }
            // An override is said in words too; a lock by the row's look and its icon.
            if let status = shown.status, !shown.locked {
                shown.line += (shown.line.isEmpty ? "" : " — ") + status.text
            }
        }
        // Only what changed: each call restyles the row, and a window of many rows makes them all.
        if shown.stored != last.stored {
            gtk_widget_set_visible(widgets.resetButton, shown.stored && row.canReset ? 1 : 0)
        }
        if shown.status?.icon != last.status?.icon || shown.status?.text != last.status?.text {
            gtk_widget_set_visible(widgets.statusIcon, shown.status == nil ? 0 : 1)
            if let status = shown.status {
                gtk_image_set_from_icon_name(OpaquePointer(widgets.statusIcon), status.icon)
                gtk_widget_set_tooltip_text(widgets.statusIcon, status.text)
            }
        }
        if shown.locked != last.locked { gtk_widget_set_sensitive(widgets.row, shown.locked ? 0 : 1) }
        if shown.tooltip != last.tooltip { gtk_widget_set_tooltip_text(widgets.row, shown.tooltip) }
        if widgets.kind.hasSubtitle, shown.line != last.line {
            adw_action_row_set_subtitle(typed(widgets.row), shown.line)
        }
        last = shown
        showInstead(report)
    }

    /// Shows, in this row's place, the problem of the stored value in a row of its own, or the
    /// value as JSON text when this row's editor cannot show it exactly; this row again once
    /// neither holds.
    ///
    /// This row's editor would show a value clamped, a default, or nothing, as if that were
    /// stored. The rows shown instead are made once this one is in its group (``placed(_:)``).
    private func showInstead(_ report: StoredReport) {
        // A row no schema describes (or one shown in another's place) is shown as it is.
        guard row.storedReport != nil else { return }
        let problem = report.problem
        let cannotShow = problem == nil && row.alternate != nil ? report.cannotShow : nil
        // Not in its group yet: shown once it is.
        guard let list = gtk_widget_get_parent(widgets.row) else { return }
        if let problem {
            let shown = problemRow ?? makeProblemRow(in: list)
            if problem != self.problem {
                let line = [subtitle, problem.line].compactMap { $0 }.joined(separator: "\n")
                adw_action_row_set_subtitle(typed(shown), line)
                if let problemReset { gtk_widget_set_visible(problemReset, problem.canReset ? 1 : 0) }
            }
            gtk_widget_set_visible(shown, 1)
        } else if let problemRow {
            gtk_widget_set_visible(problemRow, 0)
        }
        self.problem = problem
        if let cannotShow, let alternate = row.alternate {
            let shown = alternateRow ?? makeAlternateRow(alternate(cannotShow), in: list)
            gtk_widget_set_visible(shown, 1)
        } else if let alternateRow {
            gtk_widget_set_visible(alternateRow, 0)
        }
        gtk_widget_set_visible(widgets.row, problem == nil && cannotShow == nil ? 1 : 0)
    }

    /// The widgets of `alternate`, put in the list after this one.
    private func makeAlternateRow(_ alternate: PreferencesRow, in list: Widget) -> Widget {
        let made = RowController.make(alternate)
        let index = gtk_list_box_row_get_index(typed(widgets.row))
        gtk_list_box_insert(OpaquePointer(list), made.row, index + 1)
        g_object_set_data(
            UnsafeMutableRawPointer(widgets.row).assumingMemoryBound(to: GObject.self),
            "defaults-alternate-row",
            UnsafeMutableRawPointer(made.row)
        )
        alternateRow = made.row
        return made.row
    }

    /// The row that says what is wrong with the stored value, put in the list after this one.
    private func makeProblemRow(in list: Widget) -> Widget {
        let shown = actionRow(row.title, nil)
        adw_action_row_set_subtitle_lines(typed(shown), 8)
        gtk_widget_add_css_class(shown, "property")
        let icon = gtk_image_new_from_icon_name("dialog-warning-symbolic")!
        gtk_widget_add_css_class(icon, "warning")
        gtk_widget_set_tooltip_text(icon, "The stored value breaks the program's schema")
        adw_action_row_add_prefix(typed(shown), icon)
        // Not for what the program marks read-only.
        if row.canReset {
            let reset = gtk_button_new_with_label("Reset")!
            gtk_widget_set_tooltip_text(reset, "Remove the stored value, so the program reads its default")
            gtk_widget_set_valign(reset, GTK_ALIGN_CENTER)
            adw_action_row_add_suffix(typed(shown), reset)
            connect(reset, "clicked", Handler(row.reset))
            problemReset = reset
        }
        let index = gtk_list_box_row_get_index(typed(widgets.row))
        gtk_list_box_insert(OpaquePointer(list), shown, index + 1)
        g_object_set_data(
            UnsafeMutableRawPointer(widgets.row).assumingMemoryBound(to: GObject.self),
            "defaults-problem-row",
            UnsafeMutableRawPointer(shown)
        )
        problemRow = shown
        return shown
    }

    /// `row` is in its group now: the problem of its stored value, if any, is shown.
    static func placed(_ row: Widget) {
        guard
            let data = g_object_get_data(
                UnsafeMutableRawPointer(row).assumingMemoryBound(to: GObject.self),
                "defaults-row"
            )
        else { return }
        let controller = Unmanaged<RowController>.fromOpaque(data).takeUnretainedValue()
        controller.showInstead(controller.row.storedReport?() ?? StoredReport())
    }

    /// What a row shows of its key's state.
    struct Shown {
        var stored = false
        var status: (icon: String, text: String)?
        var locked = false
        var line: String
        var tooltip: String?
    }
}

extension PreferencesRow.Kind {
    /// Whether the row is an entry row, whose tooltip says what an action row's subtitle would.
    var isEntry: Bool { self == .text || self == .jsonText }
    /// Whether the row is an action row, whose subtitle the controller writes (an expander row
    /// writes its own).
    var hasSubtitle: Bool { !isEntry && self != .list && self != .group }
}

/// Connects `handler` to `signal` of `widget`, held until the widget is finalized.
@MainActor
func connect(_ widget: Widget, _ signal: String, _ handler: RowController.Handler) {
    let callback: @convention(c) (gpointer?, gpointer?) -> Void = { _, data in
        guard let data else { return }
        let handler = Unmanaged<RowController.Handler>.fromOpaque(data).takeUnretainedValue()
        MainActor.assumeIsolated { handler.run() }
    }
    g_signal_connect_data(
        widget,
        signal,
        unsafeBitCast(callback, to: GCallback.self),
        Unmanaged.passRetained(handler).toOpaque(),
        { data, _ in if let data { Unmanaged<RowController.Handler>.fromOpaque(data).release() } },
        GConnectFlags(0)
    )
}
