import Defaults
import Foundation

/// The schema a program published beside a suite's file: what each described key holds.
///
/// It is read, never trusted to be complete: keys it does not describe are written and read as
/// before, and a suite without one behaves as if schemas did not exist.
struct SuiteSchema {
    /// Each described key's property in the schema.
    let keys: [String: [String: JSONValue]]
    /// The suite's own migrations (`x-migrations`), oldest first: each one's `id`, and for a
    /// retirement the names it `removes`.
    var migrations: [[String: JSONValue]] = []

    /// The keys the schema marks secret (`"x-secret": true`): their values, under their names flat
    /// or nested, are shown as `<secret>` or left out, and never written.
    var secretNames: SecretNames {
        SecretNames(Set(keys.compactMap { name, property in property["x-secret"] == .bool(true) ? name : nil }))
    }

    /// What the command shows in place of a secret's value.
    static let secretPlaceholder = JSONValue.string("<secret>")

    /// The secret keys of the schema published beside `location`'s file; none when there is none.
    static func secretNames(for location: SuiteLocation) throws(ToolError) -> SecretNames {
        try published(for: location)?.secretNames ?? SecretNames([])
    }

    /// The schema published beside `location`'s file; `nil` when there is none (or it is a suite
    /// kept elsewhere).
    ///
    /// - Throws: `.file` when the schema is there but cannot be read or is not JSON.
    static func published(for location: SuiteLocation) throws(ToolError) -> SuiteSchema? {
        guard let file = location.file else { return nil }
        let url = Defaults.Suite.schemaFileURL(forSettingsFile: file)
        guard let bytes = try readBytes(at: url.path) else { return nil }
        let document = try members(of: bytes, in: url.path, fix: "mend it, or delete it so values go unchecked")
        var migrations: [[String: JSONValue]] = []
        if case .array(let entries)? = document["x-migrations"] {
            for case .object(let entry) in entries { migrations.append(entry) }
        }
        guard case .object(let properties)? = document["properties"] else {
            return SuiteSchema(keys: [:], migrations: migrations)
        }
        var keys: [String: [String: JSONValue]] = [:]
        for (name, property) in properties where name != "$schema" {
            if case .object(let members) = property { keys[name] = members }
        }
        return SuiteSchema(keys: keys, migrations: migrations)
    }

    /// Why a write of the secret `name` is refused; it names no value.
    static func secretRefusal(_ name: String) -> String {
        "\"\(name)\" is a secret: its program reads it from a file, and it is never stored"
    }

    /// Why `value` does not fit the key `name`, as one line: `nil` when it fits or the key is not described.
    ///
    /// A secret is refused whatever the value, which is never quoted; so is a value that nests one
    /// (`{"password": …}` for `database`, when `database.password` is a secret), before its type is
    /// looked at.
    func problem(with value: JSONValue, forKey name: String) -> String? {
        if let refusal = secretNames.refusal(ofWriting: value, under: name) { return refusal }
        guard let property = keys[name] else { return nil }
        guard !Self.fits(value, property) else { return nil }
        return "\"\(name)\" must be \(Self.expectedType(property)), not \(renderCompact(value))"
    }

    /// The problems of the members of `edited` that differ from `original`, one line each.
    func problems(in edited: [String: JSONValue], comparedWith original: [String: JSONValue]) -> [String] {
        edited.keys.sorted(by: utf8Precedes)
            .compactMap { name in
                original[name] == edited[name] ? nil : problem(with: edited[name]!, forKey: name)
            }
    }

    /// The key's type as a person reads it: the Swift type, its range, its cases.
    static func expectedType(_ property: [String: JSONValue]) -> String {
        var text: String
        if case .string(let type)? = property["x-swift-type"] {
            text = type
        } else if case .string(let type)? = property["type"] {
            text = "a JSON \(type)"
        } else {
            text = "a value of its schema"
        }
        if let range = range(property) { text += " in \(range)" }
        if let cases = cases(property) { text += " (one of \(cases))" }
        return text
    }

    /// `minimum...maximum`, when the property has both and they are narrower than its integer
    /// type's own bounds (`Int` in its whole width needs no range).
    static func range(_ property: [String: JSONValue]) -> String? {
        guard case .number(let least)? = property["minimum"], case .number(let greatest)? = property["maximum"] else {
            return nil
        }
        if case .string(let type)? = property["x-swift-type"], let width = integerBounds[type],
            width == (least, greatest)
        {
            return nil
        }
        return "\(least)...\(greatest)"
    }

    /// The bounds of each integer type, by its name, as a schema writes them.
    private static let integerBounds: [String: (String, String)] = [
        "Int": bounds(Int.self), "Int8": bounds(Int8.self), "Int16": bounds(Int16.self),
        "Int32": bounds(Int32.self), "Int64": bounds(Int64.self), "UInt": bounds(UInt.self),
        "UInt8": bounds(UInt8.self), "UInt16": bounds(UInt16.self), "UInt32": bounds(UInt32.self),
        "UInt64": bounds(UInt64.self),
    ]

    private static func bounds<T: FixedWidthInteger>(_ type: T.Type) -> (String, String) {
        (String(T.min), String(T.max))
    }

    /// The values an enum allows, as JSON, comma-separated.
    static func cases(_ property: [String: JSONValue]) -> String? {
        guard case .array(let cases)? = property["enum"] else { return nil }
        return cases.map(renderCompact).joined(separator: ", ")
    }

    // MARK: - Checking

    /// Whether `value` fits `schema`: the keywords a published schema uses (`type`, `enum`,
    /// `minimum`, `maximum`, `anyOf`, `items`, `prefixItems`, `minItems`, `maxItems`,
    /// `properties`, `required`, `additionalProperties`, `propertyNames`, `pattern`); others are
    /// ignored.
    static func fits(_ value: JSONValue, _ schema: [String: JSONValue]) -> Bool {
        if case .array(let allowed)? = schema["enum"], !allowed.contains(where: { same(value, $0) }) { return false }
        if case .string(let type)? = schema["type"], !isOfType(value, type) { return false }
        if case .array(let options)? = schema["anyOf"] {
            let fitsOne = options.contains { option in
                guard case .object(let option) = option else { return true }
                return fits(value, option)
            }
            if !fitsOne { return false }
        }
        switch value {
        case .number(let text):
            return fitsBounds(text, schema)
        case .string(let text):
            guard case .string(let pattern)? = schema["pattern"] else { return true }
            return matches(text, pattern)
        case .array(let elements):
            return fitsArray(elements, schema)
        case .object(let members):
            return fitsObject(members, schema)
        case .null, .bool:
            return true
        }
    }

    /// Equal as JSON: numbers by value (`1.0` is `1`), everything else exactly.
    private static func same(_ value: JSONValue, _ other: JSONValue) -> Bool {
        if case .number(let a) = value, case .number(let b) = other { return Decimal(string: a) == Decimal(string: b) }
        return value == other
    }

    private static func isOfType(_ value: JSONValue, _ type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object),
            ("number", .number):
            return true
        case ("integer", .number(let text)):
            // Decimal holds every integer width exactly; beyond its range, Double says.
            guard let number = Decimal(string: text) else {
                return Double(text).map { $0.rounded() == $0 } ?? false
            }
            var whole = number
            var rounded = Decimal()
            NSDecimalRound(&rounded, &whole, 0, .plain)
            return rounded == number
        default:
            return false
        }
    }

    private static func fitsBounds(_ text: String, _ schema: [String: JSONValue]) -> Bool {
        if case .number(let least)? = schema["minimum"], compare(text, least) == .orderedAscending { return false }
        if case .number(let greatest)? = schema["maximum"], compare(text, greatest) == .orderedDescending {
            return false
        }
        return true
    }

    /// Two JSON numbers compared: exactly within Decimal's range, through Double beyond it.
    private static func compare(_ text: String, _ other: String) -> ComparisonResult {
        if let a = Decimal(string: text), let b = Decimal(string: other) {
            return a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
        }
        let a = Double(text) ?? .nan
        let b = Double(other) ?? .nan
        return a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
    }

    private static func fitsArray(_ elements: [JSONValue], _ schema: [String: JSONValue]) -> Bool {
        if case .number(let least)? = schema["minItems"], let least = Int(least), elements.count < least {
            return false
        }
        if case .number(let most)? = schema["maxItems"], let most = Int(most), elements.count > most { return false }
        var rest = elements[...]
        if case .array(let prefix)? = schema["prefixItems"] {
            for (element, item) in zip(elements, prefix) {
                if case .object(let item) = item, !fits(element, item) { return false }
            }
            rest = elements.dropFirst(prefix.count)
        }
        if case .object(let items)? = schema["items"], !rest.allSatisfy({ fits($0, items) }) { return false }
        return true
    }

    private static func fitsObject(_ members: [String: JSONValue], _ schema: [String: JSONValue]) -> Bool {
        if case .array(let required)? = schema["required"],
            required.contains(where: { if case .string(let name) = $0 { members[name] == nil } else { false } })
        {
            return false
        }
        var properties: [String: JSONValue] = [:]
        if case .object(let declared)? = schema["properties"] { properties = declared }
        for (name, member) in members {
            if case .object(let nameSchema)? = schema["propertyNames"], !fits(.string(name), nameSchema) {
                return false
            }
            if let property = properties[name] {
                if case .object(let property) = property, !fits(member, property) { return false }
            } else if case .object(let additional)? = schema["additionalProperties"], !fits(member, additional) {
                return false
            }
        }
        return true
    }

    private static func matches(_ text: String, _ pattern: String) -> Bool {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return true }
        let range = NSRange(text.startIndex..., in: text)
        return expression.firstMatch(in: text, range: range) != nil
    }
}
