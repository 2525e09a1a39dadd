import Defaults
import DefaultsObservation
import Dispatch
import Synchronization

// MARK: - Watching

func watch(_ arguments: ParsedArguments) throws(ToolError) -> Never {
    let location = try SuiteLocation(arguments.value("suite")!)
    // Checked first, or opening the suite would move a broken file aside.
    _ = try location.read()
    let keys = arguments.values["key"].map(Set.init)
    let asJSON = arguments.has("json")
    let secrets = try SuiteSchema.secretNames(for: location)
    let suite = location.open { error in printProblem(error) }
    // The names a system file locks, as last seen: a change that locks or unlocks a key is
    // marked so, whether its value changed too or not.
    let locked = Mutex(Set(suite.storedValues().keys.filter { isLocked($0, in: suite) }))
    let observation = Defaults.observeStoredValues(of: suite) { changes in
        for change in changes where keys?.contains(change.name) ?? true {
            let isLocked = isLocked(change.name, in: suite)
            let lockChanged = locked.withLock { locked in
                isLocked ? locked.insert(change.name).inserted : locked.remove(change.name) != nil
            }
            printLine(
                asJSON
                    ? jsonLine(change, secrets, lockChanged: lockChanged)
                    : textLine(change, secrets, lockChanged: lockChanged)
            )
        }
    }
    // On standard error, so standard output holds only changes; scripts and tests wait for it.
    printError("defaults: watching \(location.place); Ctrl-C stops")
    withExtendedLifetime((suite, observation)) { dispatchMain() }
}

/// Whether a system file locks `name` in `suite`.
private func isLocked(_ name: String, in suite: Defaults.Suite) -> Bool {
    if case .locked = suite.source(ofValueNamed: name) { return true }
    return false
}

private func textLine(_ change: Defaults.StoredValueChange, _ secrets: SecretNames, lockChanged: Bool) -> String {
    let name = shownName(change.name)
    let old = shown(change.old, change.name, secrets).map(renderCompact) ?? "(unset)"
    let new = shown(change.new, change.name, secrets).map(renderCompact) ?? "(unset)"
    // Equal values: a system file locked the key, or lifted its lock.
    let lock = lockChanged || change.old == change.new ? " (lock added or lifted)" : ""
    return "\(name): \(old) -> \(new)\(lock)"
}

/// `name` as a line shows it: as it is, or as a JSON string (quoted, escaped) when it holds a
/// control character (a line break, an escape sequence a terminal would act on), begins with a
/// quote or a space, or holds the line's own separators, so one change is always one line that
/// says which key it is.
func shownName(_ name: String) -> String {
    let isPlain =
        !name.isEmpty && !name.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
        && !name.hasPrefix("\"") && !name.hasPrefix(" ") && !name.hasSuffix(" ")
        && !name.contains(": ") && !name.contains(" -> ")
    return isPlain ? name : renderCompact(.string(name))
}

private func jsonLine(_ change: Defaults.StoredValueChange, _ secrets: SecretNames, lockChanged: Bool) -> String {
    let name = change.name
    var object: [String: JSONValue] = ["key": .string(name)]
    object["old"] = shown(change.old, name, secrets)
    object["new"] = shown(change.new, name, secrets)
    // Equal values: a system file locked the key, or lifted its lock.
    if lockChanged || change.old == change.new { object["lockChanged"] = .bool(true) }
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
