import Defaults
import DefaultsObservation
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
    let observation = Defaults.observeStoredValues(of: suite) { changes in
        for change in changes where keys?.contains(change.name) ?? true {
            printLine(asJSON ? jsonLine(change, secrets) : textLine(change, secrets))
        }
    }
    // On standard error, so standard output holds only changes; scripts and tests wait for it.
    printError("defaults: watching \(location.place); Ctrl-C stops")
    withExtendedLifetime((suite, observation)) { dispatchMain() }
}

private func textLine(_ change: Defaults.StoredValueChange, _ secrets: SecretNames) -> String {
    let name = change.name
    let old = shown(change.old, name, secrets).map(renderCompact) ?? "(unset)"
    let new = shown(change.new, name, secrets).map(renderCompact) ?? "(unset)"
    // Equal values: a system file locked the key, or lifted its lock.
    let lock = change.old == change.new ? " (lock added or lifted)" : ""
    return "\(name): \(old) -> \(new)\(lock)"
}

private func jsonLine(_ change: Defaults.StoredValueChange, _ secrets: SecretNames) -> String {
    let name = change.name
    var object: [String: JSONValue] = ["key": .string(name)]
    object["old"] = shown(change.old, name, secrets)
    object["new"] = shown(change.new, name, secrets)
    // Equal values: a system file locked the key, or lifted its lock.
    if change.old == change.new { object["lockChanged"] = .bool(true) }
    return renderCompact(.object(object))
}

/// `value`, stored under `name`, as a change shows it: a secret's presence shows, flat or nested;
/// its value does not.
private func shown(_ value: JSONValue?, _ name: String, _ secrets: SecretNames) -> JSONValue? {
    value.flatMap { secrets.masking($0, storedUnder: name, with: SuiteSchema.secretPlaceholder) }
}

/// `values` with what each of `secrets` holds, under its name flat or nested, shown as `<secret>`.
func redacting(_ values: [String: JSONValue], _ secrets: SecretNames) -> [String: JSONValue] {
    var values = secrets.masking(values, with: SuiteSchema.secretPlaceholder)
    // The record of the migrations run (the member with the empty name) is no setting.
    values[""] = nil
    return values
}
