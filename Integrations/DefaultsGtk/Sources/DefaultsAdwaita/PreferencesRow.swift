import CAdw
import Foundation
import DefaultsGtk
import DefaultsObservation

/// One row of a preferences window, made from a key: its title, the widget that edits the key's
/// value (bound to it, live both ways), a reset button, and a sign when a system file locks the
/// key or this run overrides it.
///
/// Make rows with ``row(_:subtitle:)-(Defaults.Key<Bool>,_)`` and its overloads, which pick the
/// editor from the key's type:
///
/// | Key's type | Row |
/// |---|---|
/// | `Bool` | a switch in an action row |
/// | an integer, `Double`, `Float` | a spin button bounded by the key's range |
/// | an enum, `CaseIterable` | a combo row listing its cases by readable names |
/// | `String`, `String?` | an entry row (for `String?`, empty is `nil`) |
/// | anything else | an action row showing the value's JSON, read-only |
///
/// The title is the key's summary, or its name when it has none.
@MainActor
public struct PreferencesRow {
    /// The key's name.
    public let keyName: String
    /// The row's title: the key's summary, or its name.
    public let title: String
    /// The line under the title, when the caller gave one.
    public let subtitle: String?
    /// The key's suite.
    let suite: Defaults.Suite
    /// Removes the key from the user's settings.
    let reset: @MainActor @Sendable () -> Void
    /// Makes the row's widgets and binds the editor.
    let make: @MainActor (_ title: String, _ subtitle: String?) -> (row: Widget, editor: Widget?, kind: Kind)
    /// Where the key's value comes from now.
    let source: @MainActor @Sendable () -> Defaults.ValueSource
    /// The value's JSON, for a read-only row.
    var shownJSON: (@MainActor @Sendable () -> String)?
    /// Observes the key, calling the handler on the main loop after each change.
    let observe: @MainActor (@escaping @MainActor @Sendable () -> Void) -> Defaults.Observation
    /// What a schema says of the stored value, for a row made from a schema: asked after each change.
    var storedReport: (@MainActor () -> StoredReport)?
    /// The row shown in this one's place while its editor cannot show the stored value exactly
    /// (a schema page's JSON text row), given why; made the first time it is needed.
    var alternate: (@MainActor (_ reason: String) -> PreferencesRow)?
    /// Whether the row has a reset button: not for what the program marks read-only.
    var canReset = true

    /// What kind of row it is.
    public enum Kind: Sendable, Equatable {
        /// A switch in an action row.
        case toggle
        /// A spin button in an action row.
        case number
        /// A combo row.
        case choice
        /// An entry row.
        case text
        /// An action row showing the value's JSON, which it cannot edit.
        case json
        /// An action row for a value that may be null: the value's editor, and a switch that
        /// says whether it is set (off stores `null`).
        case optional
        /// An expander row for an array: a row per element, to edit, move or remove it, and one
        /// that adds an element.
        case list
        /// An expander row for an object: a row per property the schema describes.
        case group
        /// An entry row of the value's JSON, written when applied if it fits the schema.
        case jsonText
    }

    init<Value: Defaults.Serializable>(
        _ key: Defaults.Key<Value>,
        subtitle: String?,
        json: Bool = false,
        make: @escaping @MainActor (_ title: String, _ subtitle: String?) -> (row: Widget, editor: Widget?, kind: Kind)
    ) {
        keyName = key.name
        title = key.summary ?? key.name
        self.subtitle = subtitle
        suite = key.suite
        reset = { key.reset() }
        self.make = make
        source = { key.suite.source(of: key) }
        if json {
            shownJSON = { @MainActor @Sendable in shownValue(of: key) }
        } else {
            shownJSON = nil
        }
        observe = { handler in Defaults.observeOnMainLoop(key, options: []) { _ in handler() } }
    }

    /// A read-only row of the value named `name` in `suite`, which no key of this program
    /// describes; while none is stored, it shows `defaultValue` (a schema's default), if any.
    init(
        named name: String,
        in suite: Defaults.Suite,
        title: String?,
        subtitle: String?,
        defaultValue: Defaults.JSONValue? = nil
    ) {
        self.init(named: name, in: suite, title: title, subtitle: subtitle, kind: .json) { title, _ in
            let row = actionRow(title, nil)
            adw_action_row_set_subtitle_lines(typed(row), 6)
            return (row, nil, .json)
        }
        shownJSON = { @MainActor @Sendable in
            suite.storedValue(named: name).map { shownText($0) }
                ?? defaultValue.map { shownText($0) + " (default)" } ?? "(none)"
        }
    }

    /// A row of the value named `name` in `suite`, which no key of this program describes, made
    /// of the widgets `make` returns.
    init(
        named name: String,
        in suite: Defaults.Suite,
        title: String?,
        subtitle: String?,
        kind: Kind,
        make: @escaping @MainActor (_ title: String, _ subtitle: String?) -> (row: Widget, editor: Widget?, kind: Kind)
    ) {
        keyName = name
        self.title = title ?? name
        self.subtitle = subtitle
        self.suite = suite
        reset = { Defaults.reset([name], suite: suite) }
        self.make = make
        source = { suite.source(ofValueNamed: name) }
        shownJSON = nil
        observe = { handler in
            // Any change of the suite: no key names the value to observe it by.
            Defaults.observe(suite: suite, options: []) { GLibMainLoop.deliver(handler) }
        }
    }
}

/// What a read-only row shows of `key`: its stored JSON, or its default's (as the suite's
/// schema gives it).
private func shownValue<Value: Defaults.Serializable>(of key: Defaults.Key<Value>) -> String {
    if let stored = key.suite.storedValue(named: key.name) { return shownText(stored) }
    if case .object(let document) = key.suite.schema(for: [key]),
        case .object(let properties)? = document["properties"],
        case .object(let entry)? = properties[key.name], let value = entry["default"]
    {
        return shownText(value) + " (default)"
    }
    return "(default)"
}

/// A value's JSON as a read-only row shows it: what would hide or reorder text escaped, and cut
/// after 1,000 characters (a row of a megabyte's text takes seconds to lay out), saying how long
/// it is.
func shownText(_ value: Defaults.JSONValue) -> String {
    let text = value.description
    guard text.utf8.count > 1_000 else { return printable(text) }
    let count = text.count
    guard count > 1_000 else { return printable(text) }
    return printable(String(text.prefix(1_000))) + "… (\(count) characters)"
}

/// A widget, as GTK's functions return it.
public typealias Widget = UnsafeMutablePointer<GtkWidget>

extension PreferencesRow {
    /// A switch for a Boolean key.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - subtitle: A line under the title.
    public static func row(_ key: Defaults.Key<Bool>, subtitle: String? = nil) -> PreferencesRow {
        PreferencesRow(key, subtitle: subtitle) { title, subtitle in
            let row = actionRow(title, subtitle)
            let toggle = gtk_switch_new()!
            gtk_widget_set_valign(toggle, GTK_ALIGN_CENTER)
            adw_action_row_add_suffix(typed(row), toggle)
            adw_action_row_set_activatable_widget(typed(row), toggle)
            Defaults.bind(key, to: toggle, property: "active")
            return (row, toggle, .toggle)
        }
    }

    /// A spin button for an integer key, stepping by 1.
    ///
    /// Bounded by the key's range (by the type's when it has none), no wider than ±2³¹. A range
    /// wholly outside ±2³¹ makes a read-only row.
    ///
    /// A value the file holds outside the bounds shows clamped, and the file keeps it until the
    /// person changes it.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - subtitle: A line under the title.
    public static func row<Value: PropertyConvertibleInteger & Defaults.Serializable>(
        _ key: Defaults.Key<Value>,
        subtitle: String? = nil
    ) -> PreferencesRow {
        // Within ±2³¹: a range as wide as Int's (±9.2·10¹⁸, as a published schema gives it) is
        // past what a spin button's double holds exactly.
        let lower = key.range.map { Double($0.lowerBound) } ?? Double(Value.min)
        let upper = key.range.map { Double($0.upperBound) } ?? Double(Value.max)
        let bounds = (max(lower, Double(Int32.min)), min(upper, Double(Int32.max)))
        // A range wholly outside what a spin button holds: shown, not edited.
        guard bounds.0 <= bounds.1 else { return jsonRow(key, subtitle: subtitle) }
        return PreferencesRow(key, subtitle: subtitle) { title, subtitle in
            spinRow(title, subtitle, bounds: bounds, step: 1, digits: 0) {
                Defaults.bind(key, to: $0, property: "value")
            }
        }
    }

    /// A spin button for a floating-point key.
    ///
    /// Bounded by the key's range (±10⁹ when it has none), stepping by a round hundredth of the
    /// range and showing the digits that step needs (without a range: 0.1, with two digits). A
    /// range with a bound that is not finite makes a read-only row.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - subtitle: A line under the title.
    public static func row<Value: BinaryFloatingPoint & PropertyConvertible & Defaults.Serializable>(
        _ key: Defaults.Key<Value>,
        subtitle: String? = nil
    ) -> PreferencesRow {
        let bounds = key.range.map { (Double($0.lowerBound), Double($0.upperBound)) } ?? (-1e9, 1e9)
        // A range with an infinite or NaN bound: shown, not edited.
        guard bounds.0.isFinite, bounds.1.isFinite, bounds.0 <= bounds.1 else {
            return jsonRow(key, subtitle: subtitle)
        }
        let (step, digits) = floatingStep(key.range == nil ? nil : bounds.1 - bounds.0)
        return PreferencesRow(key, subtitle: subtitle) { title, subtitle in
            spinRow(title, subtitle, bounds: bounds, step: step, digits: digits) {
                Defaults.bind(key, to: $0, property: "value")
            }
        }
    }

    /// A combo row listing an enum's cases, in `allCases` order, by readable names: a case
    /// `highContrast` shows as "High contrast".
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - subtitle: A line under the title.
    public static func row<Value: CaseIterable & Equatable & Defaults.Serializable>(
        _ key: Defaults.Key<Value>,
        subtitle: String? = nil
    ) -> PreferencesRow {
        // NB: not a defaulted `name:` parameter: an overload that uses a default argument more
        // loses to the JSON row's, which would take every enum.
        row(key, subtitle: subtitle, names: { readableName(String(describing: $0)) })
    }

    /// A combo row listing an enum's cases, in `allCases` order, by the names `names` gives.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - subtitle: A line under the title.
    ///   - names: The name a case shows as.
    public static func row<Value: CaseIterable & Equatable & Defaults.Serializable>(
        _ key: Defaults.Key<Value>,
        subtitle: String? = nil,
        names name: @escaping @MainActor (Value) -> String
    ) -> PreferencesRow {
        PreferencesRow(key, subtitle: subtitle) { title, subtitle in
            comboRow(title, subtitle, names: Value.allCases.map(name)) {
                Defaults.bind(key, to: $0, property: "selected", mapping: .caseIndex)
            }
        }
    }

    /// A combo row for a text key limited to `choices` (as a published schema's `enum` lists
    /// them), each shown by its readable name (`compactList` as "Compact list") when every choice
    /// is an identifier that starts with a lowercase letter and no two names are alike, and as
    /// it is otherwise (`"a"` beside `"A"`, `"dark mode"`).
    ///
    /// A stored string that is none of the choices shows nothing selected, and is left as it is
    /// until the person picks one.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - choices: The strings it may hold, in the order to list them.
    ///   - subtitle: A line under the title.
    public static func row(_ key: Defaults.Key<String>, choices: [String], subtitle: String? = nil) -> PreferencesRow {
        let mapping = PropertyMapping<String>(
            toProperty: { value in .uint(UInt64(choices.firstIndex(of: value) ?? Int(GTK_INVALID_LIST_POSITION))) },
            fromProperty: { property in
                guard let index = property.integer(as: Int.self), choices.indices.contains(index) else { return nil }
                return choices[index]
            }
        )
        return PreferencesRow(key, subtitle: subtitle) { title, subtitle in
            comboRow(title, subtitle, names: choiceNames(choices)) {
                Defaults.bind(key, to: $0, property: "selected", mapping: mapping)
            }
        }
    }

    /// A read-only row showing the JSON stored under `name` in `suite`, for a value no key of
    /// this program describes (a setting of another program, or of a later version).
    ///
    /// - Parameters:
    ///   - name: The stored value's name.
    ///   - suite: The suite.
    ///   - title: The row's title; the name by default.
    ///   - subtitle: A line above the JSON, under the title.
    public static func json(
        named name: String,
        in suite: Defaults.Suite,
        title: String? = nil,
        subtitle: String? = nil
    ) -> PreferencesRow {
        PreferencesRow(named: name, in: suite, title: title, subtitle: subtitle)
    }

    /// An entry row for a text key.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - subtitle: Shown as the row's tooltip: an entry row has no line under its title.
    public static func row(_ key: Defaults.Key<String>, subtitle: String? = nil) -> PreferencesRow {
        PreferencesRow(key, subtitle: subtitle) { title, subtitle in
            let row = entryRow(title, subtitle)
            Defaults.bind(key, to: row, property: "text")
            return (row, row, .text)
        }
    }

    /// An entry row for an optional text key: an empty entry stores `nil` (the key is removed).
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - subtitle: Shown as the row's tooltip: an entry row has no line under its title.
    public static func row(_ key: Defaults.Key<String?>, subtitle: String? = nil) -> PreferencesRow {
        PreferencesRow(key, subtitle: subtitle) { title, subtitle in
            let row = entryRow(title, subtitle)
            Defaults.bind(key, to: row, property: "text")
            return (row, row, .text)
        }
    }

    /// A read-only row showing the value's JSON (its default's description while nothing is
    /// stored), for a key of a type no row edits: `defaults edit` or the program change it.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - subtitle: A line above the JSON, under the title.
    public static func row<Value: Defaults.Serializable>(_ key: Defaults.Key<Value>, subtitle: String? = nil)
        -> PreferencesRow
    {
        jsonRow(key, subtitle: subtitle)
    }

    /// The read-only JSON row of `key`, whatever its type.
    static func jsonRow<Value: Defaults.Serializable>(_ key: Defaults.Key<Value>, subtitle: String?) -> PreferencesRow {
        PreferencesRow(key, subtitle: subtitle, json: true) { title, _ in
            let row = actionRow(title, nil)
            adw_action_row_set_subtitle_lines(typed(row), 6)
            return (row, nil, .json)
        }
    }
}

/// A stored value that breaks its key's schema, as a row says it.
struct StoredProblem: Equatable {
    /// The stored value's JSON, cut after 80 characters, with characters that would hide or
    /// reorder text escaped.
    let stored: String
    /// Each rule it breaks, and where in the value.
    let rules: String
    /// What the program reads instead.
    let instead: String
    /// Where the value comes from when it is not the user's settings (a system file), which this
    /// editor does not write.
    var origin: String? = nil

    /// Whether a reset changes what the program reads: not for a system file's value.
    var canReset: Bool { origin == nil }

    /// The line under the row's title.
    var line: String {
        (["Stored: \(stored)"] + (origin.map { [$0] } ?? []) + ["Breaks the schema: \(rules)", instead])
            .joined(separator: "\n")
    }
}

/// What a schema page says of a key's stored value after a change.
struct StoredReport: Equatable {
    /// The rules the stored value breaks, shown in a row of its own in place of the key's row.
    var problem: StoredProblem?
    /// Why the row's editor cannot show the stored value exactly (a number past its control's
    /// range, text it cannot hold): the value is shown as JSON text instead.
    var cannotShow: String?
    /// What the check of the stored value could not apply (a pattern the matcher gave up on, a
    /// check past its budget): said by the row's status icon.
    var uncheckedNote: String?
}
