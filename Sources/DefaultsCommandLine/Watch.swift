import Defaults
import Dispatch

// MARK: - Watching

func watch(_ arguments: ParsedArguments) throws(ToolError) -> Never {
    let location = try SuiteLocation(arguments.value("suite")!)
    // Checked first, or opening the suite would move a broken file aside.
    _ = try location.read()
    let keys = arguments.values["key"].map(Set.init)
    let asJSON = arguments.has("json")
    let secrets = try SuiteSchema.secretNames(for: location)
    let suite = location.open { error in printError(error.description) }
    Defaults.addChangeSink(
        Defaults.ChangeSink { event in
            guard event.suite == suite else { return }
            for name in event.changes.keys.sorted(by: utf8Precedes) {
                guard keys?.contains(name) ?? true, let change = event.changes[name] else { continue }
                let isSecret = secrets.contains(name)
                printLine(asJSON ? jsonLine(name, change, isSecret) : textLine(name, change, isSecret))
            }
        }
    )
    // On standard error, so standard output holds only changes; scripts and tests wait for it.
    printError("defaults: watching \(location.place); Ctrl-C stops")
    withExtendedLifetime(suite) { dispatchMain() }
}

private func textLine(_ name: String, _ change: Defaults.StoredChange, _ isSecret: Bool) -> String {
    // A secret's presence shows; its value does not.
    let shown = { (value: JSONValue?) in isSecret ? value.map { _ in SuiteSchema.secretPlaceholder } : value }
    let old = shown(change.old).map(renderCompact) ?? "(unset)"
    let new = shown(change.new).map(renderCompact) ?? "(unset)"
    // Equal values: a system file locked the key, or lifted its lock.
    let lock = change.old == change.new ? " (lock added or lifted)" : ""
    return "\(name): \(old) -> \(new)\(lock)"
}

private func jsonLine(_ name: String, _ change: Defaults.StoredChange, _ isSecret: Bool) -> String {
    var object: [String: JSONValue] = ["key": .string(name)]
    object["old"] = change.old.map { isSecret ? SuiteSchema.secretPlaceholder : $0 }
    object["new"] = change.new.map { isSecret ? SuiteSchema.secretPlaceholder : $0 }
    // Equal values: a system file locked the key, or lifted its lock.
    if change.old == change.new { object["lockChanged"] = .bool(true) }
    return renderCompact(.object(object))
}

/// `values` with the value of each of `secrets` shown as `<secret>`.
func redacting(_ values: [String: JSONValue], _ secrets: Set<String>) -> [String: JSONValue] {
    var values = values
    // The record of the migrations run (the member with the empty name) is no setting.
    values[""] = nil
    for name in secrets where values[name] != nil { values[name] = SuiteSchema.secretPlaceholder }
    return values
}
