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
    /// The whole document, as a checker: a key's schema may refer to others in it.
    var checker = Defaults.JSONSchema(.object([:]))

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

    /// The schema published beside `location`'s file, or kept by its backend (etcd's); `nil`
    /// when there is none.
    ///
    /// - Throws: `.file` when the schema is there but cannot be read or is not JSON.
    static func published(for location: SuiteLocation) throws(ToolError) -> SuiteSchema? {
        guard let file = location.file else {
            guard let kept = try location.keptSchema() else { return nil }
            guard case .object(let document) = kept else {
                if kept == .bool(true) { return SuiteSchema(keys: [:], checker: Defaults.JSONSchema(.bool(true))) }
                throw .file(
                    "the schema of \(location.argument) is not a JSON object; values go unchecked until it is mended"
                )
            }
            return described(by: document)
        }
        let url = Defaults.Suite.schemaFileURL(forSettingsFile: file)
        guard let bytes = try readBytes(at: url.path) else { return nil }
        // `true` is a schema too (JSON Schema's "anything goes"): it describes no key.
        if (try? JSONValue(parsing: String(decoding: bytes, as: UTF8.self))) == .bool(true) {
            return SuiteSchema(keys: [:], checker: Defaults.JSONSchema(.bool(true)))
        }
        return described(
            by: try members(of: bytes, in: url.path, fix: "mend it, or delete it so values go unchecked")
        )
    }

    /// What the schema document `document` (an object) describes.
    private static func described(by document: [String: JSONValue]) -> SuiteSchema {
        var migrations: [[String: JSONValue]] = []
        if case .array(let entries)? = document["x-migrations"] {
            for case .object(let entry) in entries { migrations.append(entry) }
        }
        guard case .object(let properties)? = document["properties"] else {
            return SuiteSchema(keys: [:], migrations: migrations, checker: Defaults.JSONSchema(.object(document)))
        }
        var keys: [String: [String: JSONValue]] = [:]
        for (name, property) in properties where name != "$schema" {
            if case .object(let members) = property { keys[name] = members }
        }
        return SuiteSchema(keys: keys, migrations: migrations, checker: Defaults.JSONSchema(.object(document)))
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
        guard let outcome = checker.check(value, forKey: name) else { return nil }
        warnUnchecked(outcome.uncheckedKeywords)
        guard !outcome.isValid else { return nil }
        // One line a person reads: the first ten, and how many more.
        var problems = outcome.violations.prefix(10).map(\.description).joined(separator: "; ")
        if outcome.violations.count > 10 { problems += "; and \(outcome.violations.count - 10) more" }
        guard let property = keys[name], case .string(let type)? = property["x-swift-type"] else { return problems }
        return problems + " (the key is \(type)" + (Self.range(property).map { " in " + $0 } ?? "") + ")"
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

    /// Whether `value` fits the schema of the key `name`: `true` when it does, or when the schema
    /// does not describe `name`.
    func fits(_ value: JSONValue, forKey name: String) -> Bool {
        checker.check(value, forKey: name)?.isValid ?? true
    }

    /// The keywords of the document's root a check of values key by key cannot apply.
    private static let rootAnnotations: Set<String> = [
        "$schema", "$id", "$anchor", "$comment", "$defs", "definitions", "title", "description", "type",
        "properties", "default", "examples", "readOnly", "writeOnly", "deprecated",
    ]

    /// Says on standard error what of the document's root a check of values, made key by key
    /// against `properties`, does not apply (a `required` or `additionalProperties` of the whole
    /// file, `properties` that is not an object).
    func warnAboutRoot() {
        guard case .object(let document) = checker.document else { return }
        if let properties = document["properties"], case .object = properties {
        } else if document["properties"] != nil {
            printError("defaults: warning: the schema's \"properties\" is not an object: no key is checked")
        }
        for keyword in document.keys.sorted(by: utf8Precedes)
        where !Self.rootAnnotations.contains(keyword) && !keyword.hasPrefix("x-") {
            printError(
                "defaults: warning: the schema's \"\(keyword)\" at its root is not checked: values are checked key by key, against \"properties\""
            )
        }
    }

    /// Says on standard error, once each, the keywords of the key's schema the checker met and
    /// does not check, so a value they would refuse is not passed in silence.
    private func warnUnchecked(_ keywords: [Defaults.JSONSchema.UncheckedKeyword]) {
        for keyword in keywords {
            printError("defaults: warning: the schema's \(keyword)")
        }
    }
}
