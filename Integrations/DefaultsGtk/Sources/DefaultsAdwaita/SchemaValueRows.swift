import CAdw
import DefaultsGtk
import DefaultsObservation
import Foundation

// The rows of a schema page for values no Swift type of this program describes: a value that may
// be null, an array of scalars, an object with properties, and anything else as JSON text. Each
// reads and writes the value's JSON, checks a new value against the schema before writing it, and
// shows the schema's default while nothing is stored.

/// A scalar a schema describes, and what edits it.
enum ScalarShape: Equatable {
    case boolean
    case integer(lower: Double, upper: Double)
    case number(lower: Double, upper: Double)
    case string
    case choice([String])

    /// The shape `property` describes; `nil` for anything but one scalar type.
    init?(_ property: [String: Defaults.JSONValue]) {
        if case .array(let values)? = property["enum"] {
            let choices = values.compactMap { value -> String? in
                if case .string(let text) = value { return text }
                return nil
            }
            guard choices.count == values.count, !choices.isEmpty else { return nil }
            self = .choice(choices)
            return
        }
        guard case .string(let type)? = property["type"] else { return nil }
        let lower = bound(property["minimum"]) ?? bound(property["exclusiveMinimum"])
        let upper = bound(property["maximum"]) ?? bound(property["exclusiveMaximum"])
        switch type {
        case "boolean": self = .boolean
        case "string": self = .string
        case "integer":
            self = .integer(
                lower: max(lower ?? Double(Int32.min), Double(Int32.min)),
                upper: min(upper ?? Double(Int32.max), Double(Int32.max))
            )
        case "number":
            self = .number(lower: max(lower ?? -1e9, -1e15), upper: min(upper ?? 1e9, 1e15))
        default: return nil
        }
    }

    /// The decimal places a number's spin button shows (see ``ScalarEditor``).
    var digits: UInt32 {
        guard case .number(let lower, let upper) = self else { return 0 }
        return floatingStep(upper - lower < 2e9 ? upper - lower : nil).digits
    }

    /// Why the editor of this shape cannot show `value` exactly (a number past its control's
    /// range or with more decimals than it shows, text with a NUL character); `nil` when it
    /// can, or when `value` is not of this shape (the schema says what is wrong with that).
    func cannotShow(_ value: Defaults.JSONValue) -> String? {
        switch (self, value) {
        case (.integer(let lower, let upper), .number(let text)):
            guard let number = Double(text), number.rounded() == number else { return nil }
            guard number < lower || number > upper else { return nil }
            return "\(text) is past what its control holds, whole numbers from \(Int(lower)) to \(Int(upper))"
        case (.number(let lower, let upper), .number(let text)):
            guard let number = Double(text) else { return nil }
            guard number.isFinite else { return "\(text) is past what a floating-point number holds" }
            if number < lower || number > upper {
                return
                    "\(text) is past what its control holds, numbers from \(jsonNumber(lower)) to \(jsonNumber(upper))"
            }
            let places = Int(digits)
            guard Double(String(format: "%.\(places)f", number)) == number else {
                return "\(text) has more decimals than its control shows (\(places))"
            }
            return nil
        case (.string, .string(let text)), (.choice, .string(let text)):
            return text.unicodeScalars.contains("\u{0}") ? "an entry cannot hold its NUL character" : nil
        default:
            return nil
        }
    }

    /// The value it shows while nothing else is given.
    var zero: Defaults.JSONValue {
        switch self {
        case .boolean: .bool(false)
        case .integer(let lower, let upper): .number(String(Int(min(max(0, lower), upper))))
        case .number(let lower, let upper): .number(jsonNumber(min(max(0, lower), upper)))
        case .string: .string("")
        case .choice(let choices): .string(choices[0])
        }
    }
}

private func bound(_ value: Defaults.JSONValue?) -> Double? {
    guard case .number(let text)? = value else { return nil }
    return Double(text)
}

/// A `Double` as JSON number text: whole numbers without a fraction.
func jsonNumber(_ value: Double) -> String {
    if value.rounded() == value, abs(value) < 1e15 { return String(Int(value)) }
    return "\(value)"
}

/// The scalar shape of a property that is that scalar or null: `type` of the scalar's name and
/// "null", or `anyOf` of the scalar's schema and `{"type": "null"}`.
func nullableShape(_ property: [String: Defaults.JSONValue]) -> (
    shape: ScalarShape, property: [String: Defaults.JSONValue]
)? {
    if case .array(let types)? = property["type"], types.count == 2, types.contains(.string("null")),
        let other = types.first(where: { $0 != .string("null") })
    {
        var single = property
        single["type"] = other
        return ScalarShape(single).map { ($0, single) }
    }
    if case .array(let options)? = property["anyOf"], options.count == 2,
        options.contains(.object(["type": .string("null")]))
    {
        for case .object(let option) in options where option != ["type": .string("null")] {
            return ScalarShape(option).map { ($0, option) }
        }
    }
    return nil
}

/// One widget that edits a scalar: a switch, a spin button, an entry or a drop-down.
@MainActor
final class ScalarEditor {
    let shape: ScalarShape
    let widget: Widget
    /// Called after the person changes the value.
    var changed: (@MainActor () -> Void)?
    /// Set while the value is shown, so showing it is not taken for the person's change.
    private var isShowing = false

    init(_ shape: ScalarShape) {
        self.shape = shape
        switch shape {
        case .boolean:
            widget = gtk_switch_new()!
        case .integer(let lower, let upper):
            widget = gtk_spin_button_new_with_range(lower, upper, 1)!
            gtk_spin_button_set_digits(OpaquePointer(widget), 0)
        case .number(let lower, let upper):
            let (step, digits) = floatingStep(upper - lower < 2e9 ? upper - lower : nil)
            widget = gtk_spin_button_new_with_range(lower, upper, step)!
            gtk_spin_button_set_digits(OpaquePointer(widget), digits)
        case .string:
            widget = gtk_entry_new()!
            gtk_editable_set_width_chars(OpaquePointer(widget), 16)
        case .choice(let choices):
            let strings = choiceNames(choices).map { strdup($0) } + [nil]
            defer { for string in strings { free(string) } }
            widget = strings.withUnsafeBufferPointer { buffer in
                buffer.baseAddress!
                    .withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                        gtk_drop_down_new_from_strings($0)!
                    }
            }
        }
        gtk_widget_set_valign(widget, GTK_ALIGN_CENTER)
        let handler = RowController.Handler { [weak self] in
            guard let self, !self.isShowing else { return }
            self.changed?()
        }
        switch shape {
        case .boolean: connectNotify(widget, "active", handler)
        case .integer, .number: connect(widget, "value-changed", handler)
        case .string: connect(widget, "changed", handler)
        case .choice: connectNotify(widget, "selected", handler)
        }
        // Held by the widget.
        retain(self, by: widget)
    }

    /// The value the widget shows.
    var value: Defaults.JSONValue {
        switch shape {
        case .boolean:
            return .bool(gtk_switch_get_active(OpaquePointer(widget)) != 0)
        case .integer:
            return .number(String(Int(gtk_spin_button_get_value(OpaquePointer(widget)))))
        case .number:
            let digits = Int(gtk_spin_button_get_digits(OpaquePointer(widget)))
            let shown = Double(String(format: "%.\(digits)f", gtk_spin_button_get_value(OpaquePointer(widget)))) ?? 0
            return .number(jsonNumber(shown))
        case .string:
            return .string(String(cString: gtk_editable_get_text(OpaquePointer(widget))))
        case .choice(let choices):
            return .string(choices[min(Int(gtk_drop_down_get_selected(OpaquePointer(widget))), choices.count - 1)])
        }
    }

    /// Shows `value` (a value of another shape shows the shape's zero) without calling ``changed``.
    func show(_ value: Defaults.JSONValue) {
        guard value != self.value else { return }
        isShowing = true
        defer { isShowing = false }
        switch (shape, value) {
        case (.boolean, .bool(let on)): gtk_switch_set_active(OpaquePointer(widget), on ? 1 : 0)
        case (.integer, .number(let text)), (.number, .number(let text)):
            gtk_spin_button_set_value(OpaquePointer(widget), Double(text) ?? 0)
        case (.string, .string(let text)): gtk_editable_set_text(OpaquePointer(widget), text)
        case (.choice(let choices), .string(let text)):
            gtk_drop_down_set_selected(OpaquePointer(widget), UInt32(choices.firstIndex(of: text) ?? 0))
        default:
            if value != shape.zero { show(shape.zero) }
        }
    }
}

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
                gtk_widget_set_sensitive(editor.widget, on ? 1 : 0)
                value.write(on ? editor.value : .null)
            }
        )
        let update: @MainActor () -> Void = {
            let current = value.current ?? .null
            isShowing.value = true
            gtk_switch_set_active(OpaquePointer(isSet), current == .null ? 0 : 1)
            isShowing.value = false
            gtk_widget_set_sensitive(editor.widget, current == .null ? 0 : 1)
            if current != .null { editor.show(current) }
        }
        return (row, editor.widget, update)
    }
}

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
        let expander = adw_expander_row_new()!
        adw_preferences_row_set_use_markup(typed(expander), 0)
        adw_preferences_row_set_title(typed(expander), title)
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
            show(shown)
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
        let expander = adw_expander_row_new()!
        adw_preferences_row_set_use_markup(typed(expander), 0)
        adw_preferences_row_set_title(typed(expander), title)
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
        let text = shown?.description ?? ""
        if String(cString: gtk_editable_get_text(OpaquePointer(row))) != text {
            gtk_editable_set_text(OpaquePointer(row), text)
        }
    }
    return (row, show)
}
