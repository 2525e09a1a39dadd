import Foundation

// The checks of scalars: types, numbers and strings (patterns by ICU, with ECMA-262's classes).
extension SchemaChecker {
    // MARK: - Types and numbers

    mutating func applyType(
        _ argument: JSONValue,
        of node: SchemaNode,
        to value: JSONValue,
        path: SchemaPath,
        into result: inout SchemaResult
    ) {
        guard let names = typeNames(argument, at: node) else { return }
        guard !names.contains(where: { isOfType(value, $0) }) else { return }
        guard !names.isEmpty else {
            return result.fail(
                path,
                "type",
                "no type is allowed here (its list of types is empty), not \(quoted(value))"
            )
        }
        let wanted = names.map { article($0) }
        let list =
            wanted.count <= 1 ? wanted.joined() : wanted.dropLast().joined(separator: ", ") + " or " + wanted.last!
        result.fail(path, "type", "must be \(list), not \(quoted(value))")
    }

    /// The type names `argument` (a `type` keyword's) lists; `nil`, noted as not checked, when it
    /// lists anything but JSON Schema's type names.
    mutating func typeNames(_ argument: JSONValue, at node: SchemaNode) -> [String]? {
        var names: [String] = []
        switch argument {
        case .string(let name): names = [name]
        case .array(let list):
            for case .string(let name) in list { names.append(name) }
            if names.count != list.count {
                note("type", at: node, "it lists something other than type names")
                return nil
            }
        default:
            note("type", at: node, "it is neither a type name nor a list of them")
            return nil
        }
        let known = ["null", "boolean", "object", "array", "number", "integer", "string"]
        if let unknown = names.first(where: { !known.contains($0) }) {
            note("type", at: node, "\"\(unknown)\" is not a JSON Schema type")
            return nil
        }
        return names
    }

    func article(_ type: String) -> String {
        switch type {
        case "null": "null"
        case "integer", "array", "object": "an \(type == "integer" ? "integer" : type)"
        default: "a \(type)"
        }
    }

    private func isOfType(_ value: JSONValue, _ type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object),
            ("number", .number):
            true
        case ("integer", .number(let text)): SchemaNumber(text)?.isInteger ?? false
        default: false
        }
    }

    mutating func applyNumeric(
        _ keyword: String,
        _ argument: JSONValue,
        of node: SchemaNode,
        to value: JSONValue,
        path: SchemaPath,
        into result: inout SchemaResult
    ) {
        guard case .number(let limitText) = argument, let limit = SchemaNumber(limitText) else {
            return note(keyword, at: node, "it is not a number")
        }
        guard case .number(let text) = value, let number = SchemaNumber(text) else { return }
        switch keyword {
        case "minimum" where number < limit:
            result.fail(path, keyword, "\(text) is less than the minimum \(limitText)")
        case "exclusiveMinimum" where number <= limit:
            result.fail(path, keyword, "\(text) is not greater than the exclusive minimum \(limitText)")
        case "maximum" where number > limit:
            result.fail(path, keyword, "\(text) is greater than the maximum \(limitText)")
        case "exclusiveMaximum" where number >= limit:
            result.fail(path, keyword, "\(text) is not less than the exclusive maximum \(limitText)")
        case "multipleOf":
            guard !limit.isNegative, !limit.digits.isEmpty else {
                return note(keyword, at: node, "\(limitText) is not above zero")
            }
            if !number.isMultiple(of: limit) { result.fail(path, keyword, "\(text) is not a multiple of \(limitText)") }
        default:
            return
        }
    }

    // MARK: - Strings

    mutating func applyText(
        _ keyword: String,
        _ argument: JSONValue,
        of node: SchemaNode,
        to value: JSONValue,
        path: SchemaPath,
        into result: inout SchemaResult
    ) {
        if keyword == "pattern" {
            guard case .string(let pattern) = argument else { return note(keyword, at: node, "it is not a string") }
            guard case .string(let text) = value else { return }
            if matches(text, pattern, at: node, keyword) == false {
                result.fail(path, keyword, "\(quoted(value)) does not match the pattern \(pattern)")
            }
            return
        }
        guard let limit = count(argument) else { return note(keyword, at: node, "it is not a count") }
        guard case .string(let text) = value else { return }
        // A length counts characters as JSON does: Unicode code points.
        let length = text.unicodeScalars.count
        let characters = length == 1 ? "1 character" : "\(length) characters"
        if keyword == "minLength", length < limit {
            result.fail(path, keyword, "\(quoted(value)) has \(characters), fewer than the minimum length \(limit)")
        } else if keyword == "maxLength", length > limit {
            result.fail(path, keyword, "\(quoted(value)) has \(characters), more than the maximum length \(limit)")
        }
    }

    /// Whether `text` holds a match of `pattern` (unanchored, as JSON Schema reads it); `nil`,
    /// noted as `keyword` of `node` not checked, when `pattern` is not a regular expression or
    /// the matcher gave up (its backtracking outgrew its memory, on a long text).
    mutating func matches(_ text: String, _ pattern: String, at node: SchemaNode, _ keyword: String) -> Bool? {
        if expressions[pattern] == nil {
            expressions[pattern] = try? NSRegularExpression(pattern: Self.ecmaScriptClasses(in: pattern))
        }
        guard let expression = expressions[pattern] ?? nil else {
            note(keyword, at: node, "\(quoted(.string(pattern))) is not a regular expression this checker reads")
            return nil
        }
        var found = false
        var failed = false
        var progress = 0
        var tooLong = false
        // NB: not firstMatch, which answers "no match" when the matcher fails, or when it gives up
        // after its own limit of steps. The matcher reports progress every few thousand steps:
        // it is stopped well before that limit (where a match that backtracks without end would
        // be taken for "no match"), after about ten megabytes' worth of plain matching.
        expression.enumerateMatches(
            in: text,
            options: [.reportCompletion, .reportProgress],
            range: NSRange(text.startIndex..., in: text)
        ) { match, flags, stop in
            if match != nil {
                found = true
                stop.pointee = true
            }
            if flags.contains(.internalError) { failed = true }
            if flags.contains(.progress) {
                progress += 1
                if progress > Self.progressLimit {
                    tooLong = true
                    stop.pointee = true
                }
            }
        }
        if found { return true }
        if tooLong {
            note(keyword, at: node, "matching \(quoted(.string(pattern))) took too long (it backtracks without end?)")
            return nil
        }
        if failed {
            note(keyword, at: node, "matching \(quoted(.string(pattern))) against a text this long failed")
            return nil
        }
        return false
    }

    /// How many reports of progress a match may take: the matcher gives one every few thousand
    /// steps (about 100 over a megabyte matched plainly), and gives up on its own after about
    /// 3,800 (measured: a pattern that backtracks without end).
    static let progressLimit = 1_000

    /// `pattern` with the shorthand classes as ECMA-262 (JSON Schema's dialect) means them,
    /// where ICU's differ: `\d` and `\w` are ASCII only, `\s` takes in U+FEFF too.
    static func ecmaScriptClasses(in pattern: String) -> String {
        guard pattern.contains("\\") else { return pattern }
        let classes: [Character: String] = [
            "d": "[0-9]", "D": "[^0-9]", "w": "[A-Za-z0-9_]", "W": "[^A-Za-z0-9_]",
            "s": "[\\s\\x{FEFF}]", "S": "[^\\s\\x{FEFF}]",
        ]
        var result = ""
        var escaped = false
        for character in pattern {
            if escaped {
                result += classes[character] ?? "\\" + String(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        return escaped ? result + "\\" : result
    }

    /// A keyword's count argument: a non-negative integer (`2.0` is `2`).
    func count(_ argument: JSONValue) -> Int? {
        guard case .number(let text) = argument, let number = SchemaNumber(text), number.isInteger,
            !number.isNegative
        else { return nil }
        return Int(exactly: number.doubleValue) ?? Int.max
    }
}
