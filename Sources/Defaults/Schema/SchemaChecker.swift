import Foundation

/// Where a value sits inside the value checked, written as a person reads it: `window.width`,
/// `recentFiles[2]`, `servers["eu.west"]`.
struct SchemaPath: Sendable {
    private(set) var text = ""

    /// The path of the member `name`; `top` for a setting's own name, written bare.
    func member(_ name: String, top: Bool = false) -> SchemaPath {
        var path = self
        if top && text.isEmpty {
            // A setting's name as it is, unless it would break the line or the terminal: a
            // control character, a quote or a backslash makes it a JSON string.
            let plain =
                !name.isEmpty
                && !name.unicodeScalars.contains {
                    $0.properties.generalCategory == .control || $0 == "\"" || $0 == "\\"
                }
            path.text = plain ? name : String(decoding: JSONWriter.compactBytes(.string(name)), as: UTF8.self)
        } else if let first = name.unicodeScalars.first, first == "_" || first.properties.isAlphabetic,
            name.unicodeScalars.allSatisfy({
                $0 == "_" || $0 == "-" || $0.properties.isAlphabetic || ("0"..."9").contains($0)
            })
        {
            path.text += text.isEmpty ? name : "." + name
        } else {
            path.text += "[" + String(decoding: JSONWriter.compactBytes(.string(name)), as: UTF8.self) + "]"
        }
        return path
    }

    /// The path of the element at `index`.
    func element(_ index: Int) -> SchemaPath {
        var path = self
        path.text += "[\(index)]"
        return path
    }
}

/// What checking a value against one schema found: the rules it breaks, and the members and
/// elements the schema evaluated (for `unevaluatedProperties` and `unevaluatedItems`), kept only
/// while the value fits.
struct SchemaResult {
    var violations: [Defaults.JSONSchema.Violation] = []
    var evaluatedMembers: Set<String> = []
    var evaluatedElements: Set<Int> = []

    var isValid: Bool { violations.isEmpty }

    /// Takes in what a subschema applied to the same value found: its violations, and, when it
    /// fits, what it evaluated.
    mutating func absorb(_ other: SchemaResult) {
        violations += other.violations
        if other.isValid {
            evaluatedMembers.formUnion(other.evaluatedMembers)
            evaluatedElements.formUnion(other.evaluatedElements)
        }
    }

    /// Takes in what it evaluated only (a branch of `anyOf`, an `if`).
    mutating func absorbEvaluated(_ other: SchemaResult) {
        guard other.isValid else { return }
        evaluatedMembers.formUnion(other.evaluatedMembers)
        evaluatedElements.formUnion(other.evaluatedElements)
    }

    mutating func fail(_ path: SchemaPath, _ keyword: String, _ message: String) {
        violations.append(.init(path: path.text, keyword: keyword, message: message))
    }
}

/// One check of a value against a schema document.
struct SchemaChecker {
    let index: SchemaIndex
    /// The keywords met and not checked, in the order met.
    private(set) var unchecked: [Defaults.JSONSchema.UncheckedKeyword] = []
    /// Regular expressions made so far, by pattern (`nil`: not one this checker reads).
    var expressions: [String: NSRegularExpression?] = [:]
    /// The references being followed: each schema reached, for which part of the value.
    private var activeReferences: Set<ReferenceVisit> = []
    /// How many references deep a check may go (each a frame of the stack): four times a value's
    /// deepest nesting.
    static let referenceLimit = 2_048

    /// A schema a reference reached, and the part of the value it checks there.
    struct ReferenceVisit: Hashable {
        let target: String
        let base: String
        let path: String
    }
    /// How many schemas the check has applied; past ``stepLimit`` it stops, and says so.
    private var steps = 0
    /// Where the check stops: 100,000 applications of a schema, and 16 more for each part of the
    /// value.
    ///
    /// A long array checked element by element is not cut short. The limit is reached by a
    /// schema that applies itself again and again (an `allOf` of two references, nested), whose
    /// work doubles with each level whatever the value.
    private var stepLimit = 100_000

    init(index: SchemaIndex, checking value: JSONValue) {
        self.index = index
        stepLimit += 16 * Self.parts(of: value)
    }

    /// How many values `value` is made of, itself included.
    private static func parts(of value: JSONValue) -> Int {
        switch value {
        case .array(let elements): 1 + elements.reduce(0) { $0 + parts(of: $1) }
        case .object(let members): 1 + members.values.reduce(0) { $0 + parts(of: $1) }
        default: 1
        }
    }

    /// Keywords that only annotate, or that other keywords read: never a rule of their own here.
    static let annotations: Set<String> = [
        "$schema", "$id", "$anchor", "$dynamicAnchor", "$comment", "$defs", "definitions", "$vocabulary",
        "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "format",
        "contentEncoding", "contentMediaType", "contentSchema", "then", "else", "minContains", "maxContains",
    ]

    /// Why known keywords are not checked.
    static let unsupported: [String: String] = [
        "$dynamicRef": "a dynamic reference, resolved by where the check came from, is not followed",
        "$recursiveRef": "draft 2019-09's recursive reference is not followed",
        "dependencies": "it is the keyword of drafts before 2019-09; write dependentRequired or dependentSchemas",
        "additionalItems": "it is the keyword of drafts before 2020-12; write prefixItems and items",
    ]

    /// The keywords checked, in the order they are.
    static let checked: [String] = [
        "$ref", "type", "enum", "const",
        "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf",
        "minLength", "maxLength", "pattern",
        "prefixItems", "items", "contains", "minItems", "maxItems", "uniqueItems",
        "required", "properties", "patternProperties", "additionalProperties", "propertyNames",
        "minProperties", "maxProperties", "dependentRequired", "dependentSchemas",
        "allOf", "anyOf", "oneOf", "not", "if",
        "unevaluatedItems", "unevaluatedProperties",
    ]
    private static let checkedSet = Set(checked)

    mutating func note(_ keyword: String, at node: SchemaNode, _ reason: String) {
        let record = Defaults.JSONSchema.UncheckedKeyword(keyword: keyword, location: node.pointer, reason: reason)
        if !unchecked.contains(record) { unchecked.append(record) }
    }

    /// Notes each keyword of `members` (the schema at `node`) that is neither checked nor an
    /// annotation, in order.
    private mutating func noteUnknownKeywords(of members: [String: JSONValue], at node: SchemaNode) {
        for keyword in members.keys.sorted() where !Self.checkedSet.contains(keyword) {
            guard !Self.annotations.contains(keyword), !keyword.hasPrefix("x-") else { continue }
            note(keyword, at: node, Self.unsupported[keyword] ?? "this checker does not know the keyword")
        }
    }

    /// The schema `reference` (the `$ref` of the schema at `node`) leads to; `nil`, noted as not
    /// checked, when it leads to another document or nowhere.
    private mutating func target(of reference: String, at node: SchemaNode) -> SchemaNode? {
        switch index.resolve(reference, from: node.base) {
        case .failure(.outside(let document)):
            note("$ref", at: node, "it refers to another document (\(document)), which is never fetched")
            return nil
        case .failure(.nowhere(let target)):
            note("$ref", at: node, "\(target) is nowhere in the document")
            return nil
        case .success(let target):
            return target
        }
    }

    /// Notes what in the schema at `node` no check of any value could apply: keywords it does not
    /// know, references that lead nowhere, patterns that are not regular expressions.
    mutating func survey(_ node: SchemaNode) {
        guard let members = node.members else {
            if case .bool = node.value { return }
            return note("(schema)", at: node, "a schema is an object or a Boolean, not \(quoted(node.value))")
        }
        noteUnknownKeywords(of: members, at: node)
        if case .string(let reference)? = members["$ref"] { _ = target(of: reference, at: node) }
        if let type = members["type"] { _ = typeNames(type, at: node) }
        if case .string(let pattern)? = members["pattern"] { _ = matches("", pattern, at: node, "pattern") }
        if case .object(let patterns)? = members["patternProperties"] {
            for pattern in patterns.keys.sorted() { _ = matches("", pattern, at: node, "patternProperties") }
        }
    }

    /// Checks `value`, which sits at `path`, against the schema at `node`.
    mutating func evaluate(_ node: SchemaNode, _ value: JSONValue, path: SchemaPath) -> SchemaResult {
        var result = SchemaResult()
        steps += 1
        if steps > stepLimit {
            if steps == stepLimit + 1 {
                note(
                    "(schema)",
                    at: node,
                    "the check stopped after applying \(stepLimit) schemas; the rest is not checked"
                )
            }
            return result
        }
        switch node.value {
        case .bool(true):
            return result
        case .bool(false):
            result.fail(path, "false", "no value is allowed here (its schema is `false`), not \(quoted(value))")
            return result
        case .object(let members):
            noteUnknownKeywords(of: members, at: node)
            for keyword in Self.checked {
                guard let argument = members[keyword] else { continue }
                apply(keyword, argument, of: node, members, to: value, path: path, into: &result)
            }
            return result
        default:
            note("(schema)", at: node, "a schema is an object or a Boolean, not \(quoted(node.value))")
            return result
        }
    }

    /// The subschema of `node` under `keyword` (and then `name`, for a map or an array of them).
    func sub(_ node: SchemaNode, _ keyword: String, _ name: String? = nil) -> SchemaNode? {
        guard let holder = node.child(keyword) else { return nil }
        guard let name else { return holder }
        return holder.child(name)
    }

    /// Applies one keyword.
    private mutating func apply(
        _ keyword: String,
        _ argument: JSONValue,
        of node: SchemaNode,
        _ members: [String: JSONValue],
        to value: JSONValue,
        path: SchemaPath,
        into result: inout SchemaResult
    ) {
        switch keyword {
        case "$ref": applyReference(argument, of: node, to: value, path: path, into: &result)
        case "type": applyType(argument, of: node, to: value, path: path, into: &result)
        case "enum":
            guard case .array(let allowed) = argument else { return note(keyword, at: node, "it is not an array") }
            if !allowed.contains(where: { sameJSON(value, $0) }) {
                // A long list is cut: the message is one line a person reads.
                var cases = allowed.prefix(10).map { quoted($0) }.joined(separator: ", ")
                if cases.count > 200 || allowed.count > 10 {
                    cases = String(cases.prefix(200)) + "... (\(allowed.count) values in all)"
                }
                result.fail(path, keyword, "\(quoted(value)) is not one of \(cases)")
            }
        case "const":
            if !sameJSON(value, argument) {
                result.fail(path, keyword, "must be \(quoted(argument)), not \(quoted(value))")
            }
        case "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf":
            applyNumeric(keyword, argument, of: node, to: value, path: path, into: &result)
        case "minLength", "maxLength", "pattern":
            applyText(keyword, argument, of: node, to: value, path: path, into: &result)
        case "prefixItems", "items", "contains", "minItems", "maxItems", "uniqueItems":
            applyArray(keyword, argument, of: node, members, to: value, path: path, into: &result)
        case "unevaluatedItems":
            guard case .array(let elements) = value, let schema = sub(node, keyword) else { return }
            for (position, element) in elements.enumerated() where !result.evaluatedElements.contains(position) {
                let inner = evaluate(schema, element, path: path.element(position))
                result.violations += inner.violations.map { violation in
                    guard violation.keyword == "false" else { return violation }
                    let message = "the element \(quoted(element)) is not allowed (unevaluatedItems)"
                    return .init(path: violation.path, keyword: keyword, message: message)
                }
                result.evaluatedElements.insert(position)
            }
        case "unevaluatedProperties":
            guard case .object(let object) = value, let schema = sub(node, keyword) else { return }
            for name in object.keys.sorted() where !result.evaluatedMembers.contains(name) {
                let inner = evaluate(schema, object[name]!, path: path.member(name))
                result.violations += inner.violations.map { reworded($0, keyword, name) }
                result.evaluatedMembers.insert(name)
            }
        case "allOf", "anyOf", "oneOf", "not", "if":
            applyCombination(keyword, argument, of: node, members, to: value, path: path, into: &result)
        default:
            applyObject(keyword, argument, of: node, members, to: value, path: path, into: &result)
        }
    }

    /// A `false` schema's refusal of a member, said as the keyword that applied it.
    func reworded(
        _ violation: Defaults.JSONSchema.Violation,
        _ keyword: String,
        _ name: String
    ) -> Defaults.JSONSchema.Violation {
        guard violation.keyword == "false" else { return violation }
        return .init(
            path: violation.path,
            keyword: keyword,
            message: "the member \(quoted(.string(name))) is not allowed (\(keyword))"
        )
    }

    // MARK: - References

    private mutating func applyReference(
        _ argument: JSONValue,
        of node: SchemaNode,
        to value: JSONValue,
        path: SchemaPath,
        into result: inout SchemaResult
    ) {
        guard case .string(let reference) = argument else { return note("$ref", at: node, "it is not a string") }
        guard let target = target(of: reference, at: node) else { return }
        // A loop: the same schema reached again for the same part of the value, which would be
        // checked there for ever.
        let visit = ReferenceVisit(target: target.pointer, base: target.base, path: path.text)
        guard !activeReferences.contains(visit) else {
            return note(
                "$ref",
                at: node,
                "its references lead back to \(target.pointer.isEmpty ? "the root" : target.pointer) for the same value (a loop)"
            )
        }
        guard activeReferences.count < Self.referenceLimit else {
            return note("$ref", at: node, "references lead more than \(Self.referenceLimit) deep")
        }
        activeReferences.insert(visit)
        result.absorb(evaluate(target, value, path: path))
        activeReferences.remove(visit)
    }
}

/// Whether two JSON values are equal as JSON Schema compares them: numbers by value, arrays
/// element by element, objects member by member in any order, everything else exactly.
func sameJSON(_ value: JSONValue, _ other: JSONValue) -> Bool {
    switch (value, other) {
    case (.number(let a), .number(let b)):
        guard let a = SchemaNumber(a), let b = SchemaNumber(b) else { return a == b }
        return a == b
    case (.array(let a), .array(let b)):
        return a.count == b.count && zip(a, b).allSatisfy { sameJSON($0, $1) }
    case (.object(let a), .object(let b)):
        return a.count == b.count && a.allSatisfy { name, member in b[name].map { sameJSON(member, $0) } ?? false }
    default:
        return value == other
    }
}

/// The text of `value` that two values share exactly when ``sameJSON(_:_:)`` says they are equal:
/// numbers by their exact decimal value, objects' members in order of their names.
func canonicalJSON(_ value: JSONValue) -> String {
    switch value {
    case .number(let text):
        guard let number = SchemaNumber(text) else { return "n" + text }
        return "n" + (number.isNegative ? "-" : "") + number.digits.map(String.init).joined() + "e\(number.exponent)"
    case .array(let elements):
        return "[" + elements.map(canonicalJSON).joined(separator: ",") + "]"
    case .object(let members):
        return "{"
            + members.keys.sorted().map { quoted(.string($0), whole: true) + ":" + canonicalJSON(members[$0]!) }
            .joined(separator: ",") + "}"
    default:
        return quoted(value, whole: true)
    }
}

/// A value as the checker's messages quote it: compact JSON, cut after 80 characters.
func quoted(_ value: JSONValue, whole: Bool = false) -> String {
    let text = String(decoding: JSONWriter.compactBytes(value), as: UTF8.self)
    return text.count > 80 && !whole ? String(text.prefix(77)) + "..." : text
}
