import Defaults

/// `defaults describe <suite> [<key>]`: each described key's summary, type, range or cases,
/// default, current value and where that value comes from.
func describe(_ arguments: ParsedArguments) throws(ToolError) {
    let location = try SuiteLocation(arguments.value("suite")!)
    guard let schema = try SuiteSchema.published(for: location) else {
        let place = location.file.map { " at \(Defaults.Suite.schemaFileURL(forSettingsFile: $0).path)" } ?? ""
        throw .notFound("suite \(location.argument) has no published schema\(place); its program publishes one")
    }
    var names = schema.keys.keys.sorted(by: utf8Precedes)
    if let key = arguments.value("key") {
        guard schema.keys[key] != nil else {
            throw .notFound("the schema of suite \(location.argument) does not describe \"\(key)\"")
        }
        names = [key]
    }
    // Checked first, or opening the suite would move a broken file aside.
    _ = try location.read()
    let suite = location.open { error in printProblem(error) }
    let recorded = Set(suite.appliedMigrations)
    var blocks: [String] = []
    for name in names {
        let property = schema.keys[name]!
        var lines = [name + (property.string("description").map { ": " + $0 } ?? "")]
        lines.append("  type:    " + (property.string("x-swift-type") ?? SuiteSchema.expectedType(property)))
        if let range = SuiteSchema.range(property) { lines.append("  range:   " + range) }
        if let cases = SuiteSchema.cases(property) { lines.append("  cases:   " + cases) }
        if case .array(let former)? = property["x-formerly"] {
            lines.append(
                "  formerly: "
                    + former.map { if case .string(let name) = $0 { name } else { "\($0)" } }.joined(separator: ", ")
            )
        }
        if let id = property.string("x-migration") {
            lines.append("  migration: \(id) (" + (recorded.contains(id) ? "run" : "not run yet") + ")")
        }
        if property["x-secret"] == .bool(true) {
            lines.append("  secret:  read by the program from a file, never stored")
            lines.append("  value:   " + renderCompact(SuiteSchema.secretPlaceholder))
            blocks.append(lines.joined(separator: "\n"))
            continue
        }
        lines.append("  default: " + (property["default"].map(renderCompact) ?? "(computed by the program)"))
        let source = suite.source(ofValueNamed: name)
        if let stored = suite.storedValue(named: name) {
            let fits = schema.fits(stored, forKey: name)
            // A secret nested in it is shown as a placeholder.
            let value =
                schema.secretNames.masking(stored, storedUnder: name, with: SuiteSchema.secretPlaceholder) ?? stored
            lines.append("  value:   " + renderCompact(value) + (fits ? "" : "  (does not fit: reads the default)"))
        } else {
            lines.append("  value:   (default)")
        }
        lines.append("  from:    \(source)")
        blocks.append(lines.joined(separator: "\n"))
    }
    printLine(blocks.joined(separator: "\n\n"))
}

extension [String: JSONValue] {
    /// The member `name` when it is a string.
    fileprivate func string(_ name: String) -> String? {
        guard case .string(let text)? = self[name] else { return nil }
        return text
    }
}
