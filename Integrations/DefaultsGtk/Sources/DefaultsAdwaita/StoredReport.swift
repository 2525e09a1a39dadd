import DefaultsObservation
import Foundation

// What a schema page says of a key's stored value: the rules it breaks, whether the program can
// read it, why a row cannot show it; and the pieces of a schema that decide those.

/// A page's schema: the whole of it, and its shapes alone (see ``shapeOnly(_:)``).
struct PageSchema {
    let checker: Defaults.JSONSchema
    let shapes: Defaults.JSONSchema
}

/// What the schema says of the value stored under `name`: the rules it breaks, why the row
/// cannot show it (`cannotShow`), what the check could not apply.
@MainActor
func storedReport(
    named name: String,
    in suite: Defaults.Suite,
    schema: PageSchema,
    property: [String: Defaults.JSONValue],
    cannotShow: ((Defaults.JSONValue) -> String?)?
) -> StoredReport {
    guard let stored = suite.storedValue(named: name), let outcome = schema.checker.check(stored, forKey: name)
    else { return StoredReport() }
    var report = StoredReport()
    // What this value's check met, said on its row too (what the schema holds was said once
    // when the window opened).
    let unchecked = outcome.uncheckedKeywords.map(\.description)
    if !unchecked.isEmpty {
        report.uncheckedNote = "Not checked: " + unchecked.joined(separator: "; ")
    }
    guard outcome.isValid else {
        var text = stored.description
        if text.count > 80 { text = String(text.prefix(77)) + "..." }
        let defaultValue =
            property["default"].map { "its default, \(printable($0.description))," }
            ?? "its own default (the schema gives none)"
        // Read as stored when only a limit is broken: what decides is whether the value has the
        // shape the program reads, however the schema spells it (`type: [x, null]` or `anyOf`).
        let readable = schema.shapes.check(stored, forKey: name)?.isValid ?? true
        var origin: String?
        switch suite.source(ofValueNamed: name) {
        case .locked(let file, let valueFrom):
            let from = valueFrom.map { ", from \(printable($0.path))" } ?? ""
            origin = "Locked by \(printable(file.path))\(from), which this editor does not write"
        case .systemFile(let file):
            origin = "From the system file \(printable(file.path)), which this editor does not write"
        default:
            break
        }
        report.problem = StoredProblem(
            stored: printable(text),
            rules: cut(printable(outcome.violations.map(\.description).joined(separator: "; ")), to: 600),
            instead: readable
                ? "The program reads it as stored: limits are checked when a value is written, not when it is read."
                : "The program cannot read it, and reads \(defaultValue) instead.",
            origin: origin
        )
        return report
    }
    report.cannotShow = cannotShow?(stored)
    return report
}

/// `schema` with only what decides a value's shape: without the limits a program checks when a
/// value is written, not when it reads one (ranges, lengths, patterns, counts, uniqueness).
///
/// Followed only where a keyword holds schemas, so a property named `minimum` stays.
func shapeOnly(_ schema: Defaults.JSONValue) -> Defaults.JSONValue {
    guard case .object(var members) = schema else { return schema }
    for limit in limitKeywords { members[limit] = nil }
    for (keyword, value) in members {
        switch (keyword, value) {
        case ("items", _), ("additionalProperties", _), ("unevaluatedItems", _), ("unevaluatedProperties", _),
            ("not", _), ("if", _), ("then", _), ("else", _):
            members[keyword] = shapeOnly(value)
        case ("allOf", .array(let schemas)), ("anyOf", .array(let schemas)), ("oneOf", .array(let schemas)),
            ("prefixItems", .array(let schemas)):
            members[keyword] = .array(schemas.map(shapeOnly))
        case ("properties", .object(let named)), ("patternProperties", .object(let named)),
            ("$defs", .object(let named)), ("definitions", .object(let named)),
            ("dependentSchemas", .object(let named)):
            members[keyword] = .object(named.mapValues(shapeOnly))
        default: break
        }
    }
    return .object(members)
}

/// The keywords of limits, which a program checks when a value is written, not when it reads it.
private let limitKeywords = [
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
    "pattern", "format", "minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains",
    "minProperties", "maxProperties", "propertyNames",
]

/// `text` with what would hide or reorder it on screen escaped as `\u{…}`: control characters,
/// and the marks that change the direction of text (U+202E would show `x\u{202E}live` as
/// `xevil`).
func printable(_ text: String) -> String {
    escaped(text) { scalar in
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }
}

/// ``printable(_:)``, with every space but U+0020 escaped too (a no-break space, an ideographic
/// one): for text shown beside text it must be told from (the choices of a list).
func visible(_ text: String) -> String {
    escaped(text) { scalar in
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        case .spaceSeparator: scalar != " "
        default: false
        }
    }
}

/// `text` with each scalar `escapes` picks written `\u{…}`.
private func escaped(_ text: String, _ escapes: (Unicode.Scalar) -> Bool) -> String {
    guard text.unicodeScalars.contains(where: escapes) else { return text }
    var result = ""
    for scalar in text.unicodeScalars {
        if escapes(scalar) {
            result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
        } else {
            result.unicodeScalars.append(scalar)
        }
    }
    return result
}

/// A value's JSON text with what ``printable(_:)`` escapes written as JSON escapes (`\u202E`),
/// so the text shown reads back as the same value and hides nothing.
func escapedJSON(_ value: Defaults.JSONValue) -> String {
    let text = value.description
    var result = ""
    var changed = false
    for scalar in text.unicodeScalars {
        if visible(String(scalar)) != String(scalar) {
            changed = true
            for unit in String(scalar).utf16 { result += String(format: "\\u%04X", unit) }
        } else {
            result.unicodeScalars.append(scalar)
        }
    }
    return changed ? result : text
}

/// `property` with the schema its `$ref` points to within `document` (`#/$defs/port`) beneath
/// its own members: so a row shows the type and the default a reference gives.
func resolved(_ property: [String: Defaults.JSONValue], in document: Defaults.JSONValue) -> [String: Defaults.JSONValue]
{
    var result = property
    var seen: Set<String> = []
    while case .string(let reference)? = result["$ref"], reference.hasPrefix("#/"), seen.insert(reference).inserted {
        result["$ref"] = nil
        guard case .object(let target)? = pointee(of: String(reference.dropFirst()), in: document) else { break }
        result.merge(target) { own, _ in own }
    }
    return result
}

/// What the JSON pointer `pointer` (`/$defs/port`, escaped as RFC 6901 and a URI fragment say)
/// names in `document`.
private func pointee(of pointer: String, in document: Defaults.JSONValue) -> Defaults.JSONValue? {
    var current = document
    for part in pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
        let token = (String(part).removingPercentEncoding ?? String(part))
            .replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
        switch current {
        case .object(let members):
            guard let next = members[token] else { return nil }
            current = next
        case .array(let elements):
            guard let index = Int(token), elements.indices.contains(index) else { return nil }
            current = elements[index]
        default: return nil
        }
    }
    return current
}
