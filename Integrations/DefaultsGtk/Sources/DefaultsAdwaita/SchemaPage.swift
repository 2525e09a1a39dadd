import CAdw
import DefaultsGtk
import DefaultsObservation
import Foundation

extension PreferencesPage {
    /// A page made from the schema a program published beside its settings file
    /// (`settings.schema.json`, see `Defaults.Suite.publishSchema(for:migrations:version:)`): the window
    /// `defaults-editor` shows for a program this one knows nothing of.
    ///
    /// Each described key gets the row its schema type needs, as a key of that type would: a
    /// boolean a switch; an integer or a number a spin button bounded by its `minimum` and
    /// `maximum`; a string with an `enum` a combo row; a string an entry row; a scalar or null
    /// its editor and a switch that says whether it is set; an array of scalars an expander with
    /// a row per element (moved, removed, added); an object with `properties` an expander with a
    /// row per property; anything else an entry row of its JSON. A row is titled with the key's
    /// `description` (its name when there is none), with the name under it. Secrets are left out;
    /// a key marked `readOnly` is shown, not edited. Values in the file the schema does not
    /// describe follow in a group of their own, as JSON; so do those stored under new names
    /// while the page is shown (never `$schema`, the file's reference to its schema). A key the
    /// schema gives no default shows its type's zero, empty string, `false` or first choice while
    /// unset.
    ///
    /// Values are checked against the whole schema (`Defaults.JSONSchema`): one that breaks it
    /// is not written, and the row says why; a stored one that breaks it is shown as stored, with
    /// the rule and what the program reads instead, in a row of its own with a Reset button. A
    /// stored value the row's control cannot hold (a number past its range or with more decimals
    /// than it shows, text with a NUL character) is shown as JSON text in a row in its place
    /// (``PreferencesRowWidgets/alternateRow``), and so is a schema default that breaks its own
    /// schema. Choices are listed by readable names only when each is an identifier and no two
    /// names are alike. A key with a `true` or `false` schema is edited as JSON text; a `$ref`
    /// within the document gives the row its target's type and default.
    ///
    /// For another program's suite: the keys it makes are of the schema's JSON types (`Int`,
    /// `Double`, `String`), and in a program that reads the same names as other types, they
    /// would widen what the suite accepts for them.
    ///
    /// - Parameters:
    ///   - schema: The published schema, as read from its file.
    ///   - suite: The suite the schema describes.
    ///   - title: The page's title.
    public convenience init(schema: Defaults.JSONValue?, suite: Defaults.Suite, title: String = "Settings") {
        let document = schema ?? .object([:])
        var properties: [String: [String: Defaults.JSONValue]] = [:]
        if case .object(let root) = document, case .object(let described)? = root["properties"] {
            // The empty name is no key's (the file's own record).
            for (name, property) in described where isSetting(name) {
                switch property {
                case .object(let members): properties[name] = resolved(members, in: document)
                // `true` allows any value, `false` none: either is edited as JSON text, checked.
                case .bool: properties[name] = [:]
                default: break
                }
            }
        }
        let checker = Defaults.JSONSchema(document)
        let schema = PageSchema(checker: checker, shapes: Defaults.JSONSchema(shapeOnly(document)))
        let described = properties.keys.sorted()
            .compactMap { name -> PreferencesRow? in
                let property = properties[name]!
                guard let (row, cannotShow) = schemaRow(name, property, suite: suite, schema: schema) else {
                    return nil
                }
                var shown = row
                shown.storedReport = {
                    storedReport(named: name, in: suite, schema: schema, property: property, cannotShow: cannotShow)
                }
                if cannotShow != nil, property["readOnly"] != .bool(true) {
                    shown.alternate = { reason in
                        let value = SchemaValue(name: name, suite: suite, checker: checker, property: property)
                        let titles = rowTitles(name, property)
                        let line = [titles.subtitle, "Shown as JSON: \(reason)"].compactMap { $0 }
                        return jsonTextRow(value, title: titles.title, subtitle: line.joined(separator: "\n"))
                    }
                }
                return shown
            }
        let secrets = properties.compactMap { name, property in property["x-secret"] == .bool(true) ? name : nil }
        let others = suite.userStoredValues().keys.filter { properties[$0] == nil && isSetting($0) }.sorted()
            .map { undescribedRow($0, in: suite, secrets: secrets) }
        var groups: [PreferencesGroup] = []
        if !described.isEmpty { groups.append(PreferencesGroup("Described by the program", described)) }
        if !others.isEmpty { groups.append(undescribedGroup(others)) }
        self.init(title: title, groups: groups)
        // Values stored later under names the schema does not describe get rows too.
        kept.append(
            UndescribedRows(
                page: self,
                suite: suite,
                secrets: secrets,
                shown: Set(properties.keys).union(others.map(\.keyName)),
                group: others.isEmpty ? nil : groups.count - 1
            )
        )
    }
}

/// The read-only JSON row of the value stored under `name`, which the schema does not describe;
/// a secret nested in it (`database.password` in the object under `database`) shown as
/// `"<secret>"`.
@MainActor
private func undescribedRow(_ name: String, in suite: Defaults.Suite, secrets: [String]) -> PreferencesRow {
    var row = PreferencesRow.json(named: name, in: suite, title: shownName(name))
    let nested = secrets.filter { $0.hasPrefix(name + ".") }
        .map { $0.dropFirst(name.count + 1).split(separator: ".").map(String.init) }
    guard !nested.isEmpty else { return row }
    row.shownJSON = { @MainActor @Sendable in
        guard let stored = suite.storedValue(named: name) else { return "(none)" }
        return shownText(nested.reduce(stored) { masking($0, $1[...]) })
    }
    return row
}

/// `value` with the member at `path` (`["password"]`) replaced by `"<secret>"`.
private func masking(_ value: Defaults.JSONValue, _ path: ArraySlice<String>) -> Defaults.JSONValue {
    guard let first = path.first, case .object(var members) = value, let member = members[first] else { return value }
    members[first] = path.count == 1 ? .string("<secret>") : masking(member, path.dropFirst())
    return .object(members)
}

/// The group of the values the schema does not describe.
@MainActor
private func undescribedGroup(_ rows: [PreferencesRow]) -> PreferencesGroup {
    PreferencesGroup("Not described", description: "Stored, but not in the program's schema", rows)
}

/// Adds a JSON row for each value stored under a name no row shows yet (a program or a person
/// adding a key while the editor is open), in that page's "Not described" group, made when first
/// needed.
@MainActor
private final class UndescribedRows {
    private weak var page: PreferencesPage?
    private let suite: Defaults.Suite
    private let secrets: [String]
    private var shown: Set<String>
    private var group: Int?
    private var observation: Defaults.Observation?

    init(page: PreferencesPage, suite: Defaults.Suite, secrets: [String], shown: Set<String>, group: Int?) {
        self.page = page
        self.suite = suite
        self.secrets = secrets
        self.shown = shown
        self.group = group
        observation = Defaults.observe(suite: suite, options: []) { [weak self] in
            GLibMainLoop.deliver { self?.addNew() }
        }
    }

    isolated deinit {
        observation?.invalidate()
    }

    private func addNew() {
        guard let page else { return }
        let new = suite.userStoredValues().keys.filter { !shown.contains($0) && isSetting($0) }.sorted()
        guard !new.isEmpty else { return }
        shown.formUnion(new)
        let rows = new.map { undescribedRow($0, in: suite, secrets: secrets) }
        guard let group else {
            group = page.append(undescribedGroup(rows))
            return
        }
        for row in rows { page.append(row, toGroupAt: group) }
    }
}

/// Whether a stored name is a setting to show: not the file's own record (the empty name), nor
/// `$schema`, the reference to its schema the file keeps for editors.
private func isSetting(_ name: String) -> Bool {
    !name.isEmpty && name != "$schema"
}

/// A row's title (the description, or the name) and the name under it when the title is the
/// description; each cut to 200 characters, so a long one does not take the window's width.
private func rowTitles(_ name: String, _ property: [String: Defaults.JSONValue]) -> (title: String, subtitle: String?) {
    guard case .string(let summary)? = property["description"], !isBlank(summary) else {
        return (shownName(name), nil)
    }
    return (cut(printable(summary), to: 200), shownName(name))
}

/// A name as a row shows it: cut to 200 characters, what would hide or reorder it escaped, and
/// quoted when it is blank (`" "`), so it is seen.
func shownName(_ name: String) -> String {
    isBlank(name) ? Defaults.JSONValue.string(name).description : cut(printable(name), to: 200)
}

private func isBlank(_ text: String) -> Bool {
    text.unicodeScalars.allSatisfy { $0.properties.isWhitespace }
}

/// `text`, cut to `limit` characters with an ellipsis when it is longer.
func cut(_ text: String, to limit: Int) -> String {
    text.count > limit ? String(text.prefix(limit - 1)) + "…" : text
}

/// The row a key's schema property asks for, and what tells why it cannot show a stored value
/// exactly; `nil` for a secret.
@MainActor
private func schemaRow(
    _ name: String,
    _ property: [String: Defaults.JSONValue],
    suite: Defaults.Suite,
    schema: PageSchema
) -> (PreferencesRow, ((Defaults.JSONValue) -> String?)?)? {
    if property["x-secret"] == .bool(true) { return nil }
    let (title, subtitle) = rowTitles(name, property)
    // Shown, not edited: what the program marks read-only.
    if property["readOnly"] == .bool(true) {
        var row = PreferencesRow(
            named: name,
            in: suite,
            title: title,
            subtitle: subtitle,
            defaultValue: property["default"]
        )
        row.canReset = false
        return (row, nil)
    }
    let value = SchemaValue(name: name, suite: suite, checker: schema.checker, property: property)
    // The row's title, as the summary of a key of the editor's own (a key's row is titled with
    // its summary, or its whole name).
    let summary = title
    let made = typedRow(name, property, suite: suite, summary: summary, subtitle: subtitle, value: value)
    guard let (row, cannotShow) = made else { return (jsonTextRow(value, title: title, subtitle: subtitle), nil) }
    // A default the row cannot show, or that breaks the schema, is shown as JSON text as it is,
    // and the row says what is wrong with it.
    if let given = property["default"] {
        var problem = cannotShow?(given)
        if let outcome = schema.checker.check(given, forKey: name), !outcome.isValid {
            problem = "it breaks the schema: " + outcome.violations.map(\.description).joined(separator: "; ")
        }
        if let problem {
            let line = "The schema's default, \(printable(given.description)), is shown as JSON: \(printable(problem))"
            return (
                jsonTextRow(value, title: title, subtitle: [subtitle, line].compactMap { $0 }.joined(separator: "\n")),
                nil
            )
        }
    }
    return (row, cannotShow)
}

/// The row of the scalar or composite type `property` describes; `nil` for anything a JSON text
/// row edits.
@MainActor
private func typedRow(
    _ name: String,
    _ property: [String: Defaults.JSONValue],
    suite: Defaults.Suite,
    summary: String?,
    subtitle: String?,
    value: SchemaValue
) -> (PreferencesRow, ((Defaults.JSONValue) -> String?)?)? {
    let title = summary ?? name
    if case .array(let values)? = property["enum"] {
        let choices = values.compactMap { value -> String? in
            if case .string(let text) = value { return text }
            return nil
        }
        guard choices.count == values.count, !choices.isEmpty else { return nil }
        let initial = text(property["default"]) ?? choices[0]
        return (.row(key(name, initial, suite, summary), choices: choices, subtitle: subtitle), nil)
    }
    switch (kind(of: property), property["default"]) {
    case ("boolean", let initial):
        var value = false
        if case .bool(let given)? = initial { value = given }
        return (.row(key(name, value, suite, summary), subtitle: subtitle), nil)
    case ("integer", let initial):
        let value = integer(initial) ?? 0
        // Each bound on its own: UInt64's maximum does not fit an Int, its minimum of 0 does.
        let lower = integer(property["minimum"])
        let upper = integer(property["maximum"])
        // What the row's spin button holds (see `PreferencesRow.row(_:subtitle:)` for integers).
        let shape = ScalarShape.integer(
            lower: max(Double(lower ?? .min), Double(Int32.min)),
            upper: min(Double(upper ?? .max), Double(Int32.max))
        )
        if lower != nil || upper != nil, (lower ?? .min) <= (upper ?? .max) {
            let range = (lower ?? .min)...(upper ?? .max)
            let key = Defaults.Key<Int>(name, default: value, suite: suite, summary: summary, range: range)
            return (.row(key, subtitle: subtitle), shape.cannotShow)
        }
        return (.row(key(name, value, suite, summary), subtitle: subtitle), shape.cannotShow)
    case ("number", let initial):
        let value = number(initial) ?? 0
        let bounded = numberOption(of: property) ?? property
        // A range is the key's own when it is one a person sets (not Float's ±3.4·10³⁸).
        if let lower = number(bounded["minimum"]), let upper = number(bounded["maximum"]), lower <= upper,
            abs(lower) <= 1e15, abs(upper) <= 1e15
        {
            let key = Defaults.Key<Double>(name, default: value, suite: suite, summary: summary, range: lower...upper)
            return (.row(key, subtitle: subtitle), ScalarShape.number(lower: lower, upper: upper).cannotShow)
        }
        // What the row's spin button holds without a range (see `PreferencesRow.row(_:subtitle:)`).
        return (
            .row(key(name, value, suite, summary), subtitle: subtitle),
            ScalarShape.number(lower: -1e9, upper: 1e9).cannotShow
        )
    case ("string", let initial):
        return (.row(key(name, text(initial) ?? "", suite, summary), subtitle: subtitle), ScalarShape.string.cannotShow)
    case ("array", _):
        guard case .object(let items)? = property["items"], property["prefixItems"] == nil,
            let shape = ScalarShape(items)
        else { return nil }
        let row = listRow(value, items: shape, itemDefault: items["default"], title: title, subtitle: subtitle)
        return (
            row,
            { stored in
                guard case .array(let elements) = stored else { return nil }
                guard elements.count <= listedElementLimit else {
                    return "it has \(elements.count) elements, more than a list of rows shows (\(listedElementLimit))"
                }
                return elements.lazy.compactMap(shape.cannotShow).first.map { "an element: " + $0 }
            }
        )
    case ("object", _):
        guard case .object(let described)? = property["properties"], !described.isEmpty else { return nil }
        let members = described.keys.sorted()
            .compactMap { member -> (String, [String: Defaults.JSONValue])? in
                guard case .object(let memberProperty)? = described[member] else { return nil }
                return (member, memberProperty)
            }
        let row = objectRow(value, members: members, title: title, subtitle: subtitle)
        return (
            row,
            { stored in
                guard case .object(let values) = stored else { return nil }
                for (member, memberProperty) in members {
                    guard let shape = ScalarShape(memberProperty), let shown = values[member] else { continue }
                    if let reason = shape.cannotShow(shown) { return "\(printable(member)): \(reason)" }
                }
                return nil
            }
        )
    default:
        guard let nullable = nullableShape(property) else { return nil }
        let row = optionalRow(value, shape: nullable.shape, title: title, subtitle: subtitle)
        return (row, { $0 == .null ? nil : nullable.shape.cannotShow($0) })
    }
}

/// A key made for the editor, with the summary when the schema gives one.
private func key<Value: Defaults.Serializable>(
    _ name: String,
    _ value: Value,
    _ suite: Defaults.Suite,
    _ summary: String?
) -> Defaults.Key<Value> {
    guard let summary else { return Defaults.Key(name, default: value, suite: suite) }
    return Defaults.Key(name, default: value, suite: suite, summary: summary)
}

/// A property's JSON type: its `type`; "number" for `anyOf` a number and the strings that stand
/// for NaN and the infinities (how a `Double` or `Float` without a range is published).
private func kind(of property: [String: Defaults.JSONValue]) -> String? {
    if case .string(let type)? = property["type"] { return type }
    if numberOption(of: property) != nil { return "number" }
    return nil
}

/// The number's own schema in `anyOf` a number and the strings for NaN and the infinities (with
/// `Float`'s bounds, for a `Float`); `nil` for another property.
private func numberOption(of property: [String: Defaults.JSONValue]) -> [String: Defaults.JSONValue]? {
    guard case .array(let options)? = property["anyOf"], options.count == 2 else { return nil }
    var number: [String: Defaults.JSONValue]?
    var hasEnum = false
    for case .object(let members) in options {
        if members["type"] == .string("number") { number = members }
        if members.keys.sorted() == ["enum"] { hasEnum = true }
    }
    return hasEnum ? number : nil
}

/// An integer's text as an `Int`; beyond `Int`'s range, its nearest end; `nil` for no number.
private func integer(_ value: Defaults.JSONValue?) -> Int? {
    guard case .number(let text)? = value else { return nil }
    if let exact = Int(text) { return exact }
    guard let approximate = Double(text) else { return nil }
    return approximate < 0 ? .min : .max
}

private func number(_ value: Defaults.JSONValue?) -> Double? {
    if case .number(let text)? = value { return Double(text) }
    return nil
}

private func text(_ value: Defaults.JSONValue?) -> String? {
    if case .string(let text)? = value { return text }
    return nil
}
