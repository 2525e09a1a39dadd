import CAdw
import DefaultsGtk
import DefaultsObservation
import Foundation

// The rows of a schema page for values no Swift type of this program describes: a value that may
// be null, an array of scalars, an object with properties, and anything else as JSON text. Each
// reads and writes the value's JSON, checks a new value against the schema before writing it, and
// shows the schema's default while nothing is stored.

/// A value a schema page edits as JSON: what is stored (or the schema's default), and a write
/// checked against the schema first.
@MainActor
final class SchemaValue {
    let name: String
    let suite: Defaults.Suite
    let checker: Defaults.JSONSchema
    let property: [String: Defaults.JSONValue]
    /// The row that shows a refusal.
    var row: Widget?
    /// What the person last tried to write and the schema refused, with why; `nil` once a write
    /// goes through or the stored value changes.
    private(set) var refusal: String?

    init(name: String, suite: Defaults.Suite, checker: Defaults.JSONSchema, property: [String: Defaults.JSONValue]) {
        self.name = name
        self.suite = suite
        self.checker = checker
        self.property = property
    }

    /// The stored value, or the schema's default while none is.
    var current: Defaults.JSONValue? { suite.storedValue(named: name) ?? property["default"] }
    /// Whether a value is stored.
    var isStored: Bool { suite.storedValue(named: name) != nil }

    /// Writes `value` when it fits the schema; otherwise writes nothing and the row says why.
    @discardableResult
    func write(_ value: Defaults.JSONValue) -> Bool {
        if let outcome = checker.check(value, forKey: name), !outcome.isValid {
            refuse(outcome.violations.map(\.description).joined(separator: "; "))
            return false
        }
        clearRefusal()
        if suite.storedValue(named: name) != value { suite.setStoredValues([name: value]) }
        return true
    }

    /// The row says that what the person entered was not written, and why.
    func refuse(_ reason: String) {
        refusal = reason
        guard let row else { return }
        gtk_widget_add_css_class(row, "error")
        gtk_widget_set_tooltip_text(row, "Not written: " + reason)
    }

    func clearRefusal() {
        guard refusal != nil else { return }
        refusal = nil
        guard let row else { return }
        gtk_widget_remove_css_class(row, "error")
        gtk_widget_set_tooltip_text(row, nil)
    }
}

extension PreferencesRow {
    /// A row that edits the JSON stored under `name` with widgets `make` builds; `update` shows
    /// the stored value (or the default) after each change of the suite.
    init(
        editing value: SchemaValue,
        title: String,
        subtitle: String?,
        kind: Kind,
        make build:
            @escaping @MainActor (_ title: String) -> (row: Widget, editor: Widget?, update: @MainActor () -> Void)
    ) {
        let suite = value.suite
        let name = value.name
        self.init(named: name, in: suite, title: title, subtitle: subtitle, kind: kind) { title, _ in
            let made = build(title)
            value.row = made.row
            let update = made.update
            update()
            // Kept up to date by the suite's changes for as long as the row lives.
            let observation = Defaults.observe(suite: suite, options: []) {
                GLibMainLoop.deliver { update() }
            }
            retain(ObservationHolder(observation), by: made.row)
            return (made.row, made.editor, kind)
        }
    }
}

/// A value the closures of one row share and change.
@MainActor
final class Shared<Value> {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Ends an observation when the widget holding it goes.
@MainActor
private final class ObservationHolder {
    let observation: Defaults.Observation
    init(_ observation: Defaults.Observation) { self.observation = observation }
    isolated deinit { observation.invalidate() }
}

/// Keeps `object` alive as long as `widget`.
@MainActor
func retain(_ object: AnyObject, by widget: Widget) {
    g_object_set_data_full(
        UnsafeMutableRawPointer(widget).assumingMemoryBound(to: GObject.self),
        "defaults-\(ObjectIdentifier(object).hashValue)",
        Unmanaged.passRetained(object).toOpaque(),
        { pointer in
            guard let pointer else { return }
            Unmanaged<AnyObject>.fromOpaque(pointer).release()
        }
    )
}

/// Connects `handler` to the change of `property` of `widget` (its `notify::` signal), held until
/// the widget is finalized.
@MainActor
func connectNotify(_ widget: Widget, _ property: String, _ handler: RowController.Handler) {
    let callback: @convention(c) (gpointer?, gpointer?, gpointer?) -> Void = { _, _, data in
        guard let data else { return }
        let handler = Unmanaged<RowController.Handler>.fromOpaque(data).takeUnretainedValue()
        MainActor.assumeIsolated { handler.run() }
    }
    g_signal_connect_data(
        widget,
        "notify::" + property,
        unsafeBitCast(callback, to: GCallback.self),
        Unmanaged.passRetained(handler).toOpaque(),
        { data, _ in if let data { Unmanaged<RowController.Handler>.fromOpaque(data).release() } },
        GConnectFlags(0)
    )
}

// MARK: - The rows

/// A row for a scalar that may be null: the scalar's editor, and a switch that says whether it
/// is set (off stores `null`).
@MainActor
func optionalRow(_ value: SchemaValue, shape: ScalarShape, title: String, subtitle: String?) -> PreferencesRow {
    PreferencesRow(editing: value, title: title, subtitle: subtitle, kind: .optional) { title in
        let row = actionRow(title, subtitle)
        let editor = ScalarEditor(shape)
        let isSet = gtk_switch_new()!
        gtk_widget_set_valign(isSet, GTK_ALIGN_CENTER)
        gtk_widget_set_tooltip_text(isSet, "Set: off stores null")
        adw_action_row_add_suffix(typed(row), editor.widget)
        adw_action_row_add_suffix(typed(row), isSet)
        let isShowing = Shared(false)
        editor.changed = { value.write(editor.value) }
        connectNotify(
            isSet,
            "active",
            RowController.Handler {
                guard !isShowing.value else { return }
                let on = gtk_switch_get_active(OpaquePointer(isSet)) != 0
                gtk_widget_set_visible(editor.widget, on ? 1 : 0)
                value.write(on ? editor.value : .null)
            }
        )
        let update: @MainActor () -> Void = {
            let current = value.current ?? .null
            isShowing.value = true
            gtk_switch_set_active(OpaquePointer(isSet), current == .null ? 0 : 1)
            isShowing.value = false
            // Not set: no value to show (a greyed 0 would be neither stored nor the default).
            gtk_widget_set_visible(editor.widget, current == .null ? 0 : 1)
            if current != .null { editor.show(current) }
        }
        return (row, editor.widget, update)
    }
}

/// The most elements a list row shows as rows; an array with more is shown as JSON text.
let listedElementLimit = 500

/// A row for an array of scalars: an expander with a row per element (its editor, and buttons
/// that move it up, down, or remove it), and a button in its header that adds one.
@MainActor
func listRow(
    _ value: SchemaValue,
    items: ScalarShape,
    itemDefault: Defaults.JSONValue?,
    title: String,
    subtitle: String?
) -> PreferencesRow {
    PreferencesRow(editing: value, title: title, subtitle: subtitle, kind: .list) { title in
        let expander = expanderRow(title)
        let rows = Shared<[(row: Widget, editor: ScalarEditor)]>([])
        // In the row's header, beside its reset button.
        let add = gtk_button_new_from_icon_name("list-add-symbolic")!
        gtk_widget_set_valign(add, GTK_ALIGN_CENTER)
        gtk_widget_set_tooltip_text(add, "Add an element")
        gtk_widget_add_css_class(add, "flat")
        adw_expander_row_add_action(typed(expander), add)

        // Writes the elements the rows show, changed by `change`.
        let written: @MainActor ((inout [Defaults.JSONValue]) -> Void) -> Void = { change in
            var edited = rows.value.map(\.editor.value)
            change(&edited)
            value.write(.array(edited))
        }
        // Rows are made or removed to match the count, then each shows its element.
        let show: @MainActor ([Defaults.JSONValue]) -> Void = { shown in
            while rows.value.count > shown.count {
                adw_expander_row_remove(typed(expander), rows.value.removeLast().row)
            }
            while rows.value.count < shown.count {
                let index = rows.value.count
                let row = actionRow("", nil)
                let editor = ScalarEditor(items)
                editor.changed = { written { _ in } }
                adw_action_row_add_suffix(typed(row), editor.widget)
                for (icon, tip, move) in [
                    ("go-up-symbolic", "Move up", -1), ("go-down-symbolic", "Move down", 1),
                    ("list-remove-symbolic", "Remove", 0),
                ] {
                    let button = gtk_button_new_from_icon_name(icon)!
                    gtk_widget_set_valign(button, GTK_ALIGN_CENTER)
                    gtk_widget_set_tooltip_text(button, tip)
                    gtk_widget_add_css_class(button, "flat")
                    adw_action_row_add_suffix(typed(row), button)
                    connect(
                        button,
                        "clicked",
                        RowController.Handler {
                            written { edited in
                                if move == 0 {
                                    edited.remove(at: index)
                                } else if edited.indices.contains(index + move) {
                                    edited.swapAt(index, index + move)
                                }
                            }
                        }
                    )
                }
                adw_expander_row_add_row(typed(expander), row)
                rows.value.append((row, editor))
            }
            for (index, element) in shown.enumerated() {
                adw_preferences_row_set_title(typed(rows.value[index].row), "\(index + 1)")
                rows.value[index].editor.show(element)
            }
        }
        connect(
            add,
            "clicked",
            RowController.Handler { written { $0.append(itemDefault ?? items.zero) } }
        )
        let update: @MainActor () -> Void = {
            var shown: [Defaults.JSONValue] = []
            if case .array(let elements)? = value.current { shown = elements }
            // Past what a list of rows shows (a row each costs a millisecond): none; the value is
            // shown as JSON in this row's place (see `listedElementLimit`).
            show(shown.count > listedElementLimit ? [] : shown)
            let count = shown.count == 1 ? "1 element" : "\(shown.count) elements"
            let line = [subtitle, count + (value.isStored ? "" : " (default)")].compactMap { $0 }
            adw_expander_row_set_subtitle(typed(expander), line.joined(separator: "\n"))
        }
        return (expander, nil, update)
    }
}

/// A row for an object with properties: an expander with a row per property, each with its
/// scalar's editor, or its JSON as text.
@MainActor
func objectRow(
    _ value: SchemaValue,
    members: [(name: String, property: [String: Defaults.JSONValue])],
    title: String,
    subtitle: String?
) -> PreferencesRow {
    PreferencesRow(editing: value, title: title, subtitle: subtitle, kind: .group) { title in
        let expander = expanderRow(title)
        let object: @MainActor () -> [String: Defaults.JSONValue] = {
            if case .object(let members)? = value.current { return members }
            return [:]
        }
        let showers = Shared<[@MainActor ([String: Defaults.JSONValue]) -> Void]>([])
        for (name, property) in members {
            var memberTitle = name
            if case .string(let text)? = property["description"] { memberTitle = text }
            if let shape = ScalarShape(property) {
                let row = actionRow(memberTitle, memberTitle == name ? nil : name)
                let editor = ScalarEditor(shape)
                adw_action_row_add_suffix(typed(row), editor.widget)
                editor.changed = {
                    var edited = object()
                    edited[name] = editor.value
                    value.write(.object(edited))
                }
                adw_expander_row_add_row(typed(expander), row)
                showers.value.append { shown in editor.show(shown[name] ?? property["default"] ?? shape.zero) }
            } else {
                let (row, show) = jsonEntry(memberTitle) { parsed in
                    var edited = object()
                    edited[name] = parsed
                    return value.write(.object(edited))
                }
                adw_expander_row_add_row(typed(expander), row)
                showers.value.append { shown in show(shown[name] ?? property["default"]) }
            }
        }
        let update: @MainActor () -> Void = {
            let shown = object()
            for show in showers.value { show(shown) }
            let state = value.isStored ? shown.isEmpty ? "empty" : "" : "(default)"
            let line = [subtitle, state.isEmpty ? nil : state].compactMap { $0 }
            adw_expander_row_set_subtitle(typed(expander), line.joined(separator: "\n"))
        }
        return (expander, nil, update)
    }
}

/// An expander row titled `title`, as text (not markup).
@MainActor
private func expanderRow(_ title: String) -> Widget {
    let expander = adw_expander_row_new()!
    adw_preferences_row_set_use_markup(typed(expander), 0)
    adw_preferences_row_set_title(typed(expander), title)
    return expander
}

/// A row for any other value: its JSON as text, written when the person applies it, if it is
/// JSON and fits the schema.
@MainActor
func jsonTextRow(_ value: SchemaValue, title: String, subtitle: String?) -> PreferencesRow {
    PreferencesRow(editing: value, title: title, subtitle: subtitle, kind: .jsonText) { title in
        let (row, show) = jsonEntry(title) { value.write($0) }
        if let subtitle { gtk_widget_set_tooltip_text(row, subtitle) }
        return (row, row, { show(value.current) })
    }
}

/// An entry row of JSON text, and what shows a value in it.
///
/// `apply` takes what the person applied, parsed; a text that is not JSON is refused in the row.
@MainActor
func jsonEntry(
    _ title: String,
    apply: @escaping @MainActor (Defaults.JSONValue) -> Bool
) -> (row: Widget, show: @MainActor (Defaults.JSONValue?) -> Void) {
    let row = entryRow(title, nil)
    adw_entry_row_set_show_apply_button(typed(row), 1)
    connect(
        row,
        "apply",
        RowController.Handler {
            let text = String(cString: gtk_editable_get_text(OpaquePointer(row)))
            do {
                let parsed = try Defaults.JSONValue(parsing: text)
                if apply(parsed) {
                    gtk_widget_remove_css_class(row, "error")
                }
            } catch {
                gtk_widget_add_css_class(row, "error")
                gtk_widget_set_tooltip_text(row, "Not written: not JSON (\(error))")
            }
        }
    )
    let show: @MainActor (Defaults.JSONValue?) -> Void = { shown in
        // What would hide or reorder the text (U+202E) as JSON escapes: read back the same.
        let text = shown.map(escapedJSON) ?? ""
        if String(cString: gtk_editable_get_text(OpaquePointer(row))) != text {
            gtk_editable_set_text(OpaquePointer(row), text)
        }
    }
    return (row, show)
}
