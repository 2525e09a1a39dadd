import Defaults
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs one parsed command.
func run(_ arguments: ParsedArguments) throws(ToolError) {
    switch arguments.command {
    case "suites": try listSuites()
    case "path": printLine(try SuiteLocation(arguments.value("suite")!).place)
    case "keys": try listKeys(SuiteLocation(arguments.value("suite")!), described: arguments.has("described"))
    case "describe": try describe(arguments)
    case "migrate": try migrate(arguments)
    case "reset": try reset(arguments)
    case "read": try read(arguments)
    case "write": try write(arguments)
    case "delete": try delete(arguments)
    case "watch": try watch(arguments)
    case "edit": try edit(SuiteLocation(arguments.value("suite")!))
    case "export": try export(SuiteLocation(arguments.value("suite")!), to: arguments.value("file"))
    case "import": try importFile(arguments)
    default: throw .usage("unknown command \"\(arguments.command)\"", command: nil)
    }
}

// MARK: - Reading

private func listSuites() throws(ToolError) {
    let directory = Defaults.Suite.configurationDirectory
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    for name in names.sorted() {
        guard let file = try? Defaults.Suite.fileURL(forSuiteNamed: name).path else { continue }
        var info = stat()
        if stat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG { printLine(name) }
    }
}

private func listKeys(_ location: SuiteLocation, described: Bool) throws(ToolError) {
    var names = Set<String>()
    if described, let schema = try SuiteSchema.published(for: location) {
        names.formUnion(schema.keys.keys)
        names.formUnion(try location.read()?.keys ?? [:].keys)
        // The file's reference to its schema is for editors, not a setting to offer.
        names.remove("$schema")
    } else {
        names.formUnion(try location.readExisting().keys)
    }
    // The record of the migrations run is no setting.
    names.remove("")
    // One a line: a name that holds a line feed or a tab is printed as a JSON string.
    for name in names.sorted(by: utf8Precedes) {
        printLine(name.unicodeScalars.contains { $0 == "\n" || $0 == "\t" } ? JSONValue.string(name).description : name)
    }
}

private func read(_ arguments: ParsedArguments) throws(ToolError) {
    let location = try SuiteLocation(arguments.value("suite")!)
    let key = arguments.value("key")
    // The empty name is the file's record of migrations, no key's.
    if let key { try validateKey(key) }
    let merged = arguments.has("merged")
    let origin = arguments.has("origin")
    // A secret's value is never shown, wherever it comes from.
    let secrets = try SuiteSchema.secretNames(for: location)
    guard key != nil || merged || origin else {
        printLine(render(.object(redacting(try location.readExisting(), secrets))))
        return
    }
    // Checked first, or opening the suite would move a broken file aside.
    _ = try location.read()
    let suite = location.open { error in printProblem(error) }
    guard let key else {
        let values = redacting(suite.storedValues(), secrets)
        guard origin else {
            printLine(render(.object(values)))
            return
        }
        for name in values.keys.sorted(by: utf8Precedes) {
            printLine("\(name): \(renderCompact(values[name]!))  # from \(suite.source(ofValueNamed: name))")
        }
        return
    }
    if secrets.contains(key) {
        printLine(render(SuiteSchema.secretPlaceholder))
        if origin { printLine("from: a secret file only the program reads; a secret is never stored") }
        return
    }
    guard let stored = suite.storedValue(named: key) else {
        if origin, case .locked = suite.source(ofValueNamed: key) {
            printLine("(unset)")
            printLine("from: \(suite.source(ofValueNamed: key))")
            return
        }
        throw .notFound("no key \"\(key)\" in suite \(location.argument)")
    }
    // Not a secret's own name: a secret's nested under it is shown as a placeholder.
    let value = secrets.masking(stored, storedUnder: key, with: SuiteSchema.secretPlaceholder) ?? stored
    printLine(render(value))
    if origin { printLine("from: \(suite.source(ofValueNamed: key))") }
}

private func export(_ location: SuiteLocation, to file: String?) throws(ToolError) {
    // A secret's name is left out, flat or nested: what is stored under it is not its value, and
    // an import refuses the name.
    let secrets = try SuiteSchema.secretNames(for: location)
    let existing = try location.readExisting()
    var values = secrets.masking(existing, with: nil)
    // The record of the migrations run travels with the values it describes: imported into
    // another install, they are not migrated again, and an older export's are.
    values[""] = existing[""]
    let text = render(.object(values)) + "\n"
    // `-` is standard output, as `import`'s `-` is standard input: never a file named "-".
    guard let file, file != "-" else {
        print(text, terminator: "")
        return
    }
    do {
        try Data(text.utf8).write(to: URL(fileURLWithPath: file), options: .atomic)
    } catch {
        throw .file("cannot write \(file): \(error.localizedDescription)")
    }
}

// MARK: - Changing

/// Writes what `makeWrites` computes (`nil` removes) in a cross-process transaction.
///
/// It runs under the file's lock, on the file as it is now, and what it writes is in the file
/// before this returns. A file that is not valid JSON is refused untouched; so are writes to keys a
/// system file locks, all of them (exit 4), and a value for a secret, under its name or nested
/// (exit 2): nothing is written then.
///
/// - Parameter keepingSecrets: Whether what the file holds at a secret's nested name in a value
///   written over is put back into the new value (for an edit, which never showed it).
func change(
    _ location: SuiteLocation,
    replacingBrokenFile: Bool = false,
    keepingSecrets: Bool = false,
    _ makeWrites: (Defaults.Suite) throws(ToolError) -> [String: JSONValue?]
) throws(ToolError) {
    // Checked first, or opening the suite would move a broken file aside.
    if !replacingBrokenFile { _ = try location.read() }
    let secrets = try SuiteSchema.secretNames(for: location)
    let suite = location.open { error in printProblem(error) }
    var failure: ToolError?
    // A process stopped while it holds the lock holds it until it goes on: said once, after a
    // moment, so a person does not wait on silence (the wait goes on; Ctrl-C stops it).
    let notice = DispatchWorkItem {
        printError("defaults: waiting for another process to release the lock on \(location.place) (Ctrl-C stops)")
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(1), execute: notice)
    defer { notice.cancel() }
    do {
        try suite.exclusiveTransaction {
            notice.cancel()
            do throws(ToolError) {
                var writes = try makeWrites(suite)
                // What the suite would refuse (and only report) is refused here, with exit 2.
                for (name, value) in writes.sorted(by: { utf8Precedes($0.key, $1.key) }) {
                    guard let value else { continue }
                    if name.isEmpty {
                        throw ToolError.invalid("\"\" is the file's reserved member, not a key; nothing was written")
                    }
                    if value.isNested(deeperThan: JSONValue.maximumStoredDepth) {
                        throw ToolError.invalid("the value for \"\(name)\" is nested too deeply; nothing was written")
                    }
                    if let refusal = secrets.refusal(ofWriting: value, under: name) {
                        throw ToolError.invalid(refusal + "; nothing was written")
                    }
                }
                if keepingSecrets {
                    let stored = suite.userStoredValues()
                    for case (let name, let value?) in writes {
                        writes[name] = secrets.keepingSecrets(of: stored[name], in: value, under: name)
                    }
                }
                let locked = writes.keys.sorted(by: utf8Precedes)
                    .compactMap { name in
                        lockingFile(of: name, in: suite).map { "\"\(name)\" is locked by \($0)" }
                    }
                guard locked.isEmpty else {
                    throw ToolError.locked(locked.joined(separator: "; ") + "; nothing was written")
                }
                suite.setStoredValues(writes)
            } catch {
                failure = error
                throw error
            }
        }
    } catch {
        throw failure ?? .reported(status: 3)
    }
}

/// The path of the system file that locks `name` in `suite`, if one does.
private func lockingFile(of name: String, in suite: Defaults.Suite) -> String? {
    guard case .locked(let file, _) = suite.source(ofValueNamed: name) else { return nil }
    return file.path
}

private func write(_ arguments: ParsedArguments) throws(ToolError) {
    let location = try SuiteLocation(arguments.value("suite")!)
    let key = arguments.value("key")!
    try validateKey(key)
    let schema = try SuiteSchema.published(for: location)
    // First: a value typed for a secret is never parsed, checked or quoted back.
    if schema?.secretNames.contains(key) == true {
        throw .invalid(
            SuiteSchema.secretRefusal(key) + "; nothing was written"
                + (arguments.has("force") ? " (--force does not write a secret either)" : "")
        )
    }
    let value: JSONValue
    if let text = arguments.options["string"] {
        value = .string(text)
    } else {
        value = try parseValue(arguments.value("json")!, forKey: key)
    }
    // Before the type check, which quotes the value: one that nests a secret is never quoted back.
    if let refusal = schema?.secretNames.refusal(ofWriting: value, under: key) {
        throw .invalid(
            refusal + "; nothing was written"
                + (arguments.has("force") ? " (--force does not write a secret either)" : "")
        )
    }
    schema?.warnAboutRoot()
    if !arguments.has("force"), let problem = schema?.problem(with: value, forKey: key) {
        throw .invalid(problem + "; nothing was written (--force writes it anyway)")
    }
    try change(location) { _ in [key: value] }
}

private func reset(_ arguments: ParsedArguments) throws(ToolError) {
    let location = try SuiteLocation(arguments.value("suite")!)
    let keys = arguments.values["key"] ?? []
    for key in keys { try validateKey(key) }
    try change(location) { _ in Dictionary(keys.map { ($0, nil) }, uniquingKeysWith: { $1 }) }
}

private func delete(_ arguments: ParsedArguments) throws(ToolError) {
    let location = try SuiteLocation(arguments.value("suite")!)
    _ = try location.readExisting()
    let keys = arguments.values["key"] ?? []
    var kept: [String] = []
    try change(location) { suite throws(ToolError) in
        let stored = suite.userStoredValues()
        if arguments.has("all") {
            kept = stored.keys.filter { lockingFile(of: $0, in: suite) != nil }
                .sorted(by: utf8Precedes)
                .map { "kept \"\($0)\": it is locked by \(lockingFile(of: $0, in: suite)!)" }
            return Dictionary(
                uniqueKeysWithValues: stored.keys.filter { lockingFile(of: $0, in: suite) == nil }.map { ($0, nil) }
            )
        }
        let missing = keys.filter { stored[$0] == nil }
        guard missing.isEmpty else {
            let names = missing.map { "\"\($0)\"" }.joined(separator: ", ")
            throw .notFound("no key \(names) in suite \(location.argument); nothing was deleted")
        }
        return Dictionary(keys.map { ($0, nil) }, uniquingKeysWith: { $1 })
    }
    guard kept.isEmpty else { throw .locked(kept.joined(separator: "; ")) }
}

private func importFile(_ arguments: ParsedArguments) throws(ToolError) {
    let location = try SuiteLocation(arguments.value("suite")!)
    let path = arguments.value("file")!
    let bytes: [UInt8]
    if path == "-" {
        bytes = Array(FileHandle.standardInput.readDataToEndOfFile())
    } else {
        guard let read = try readBytes(at: path) else { throw .file("cannot read \(path): no such file") }
        bytes = read
    }
    var imported: [String: JSONValue]
    let source = path == "-" ? "standard input" : path
    do {
        imported = try members(of: bytes, in: source, fix: "nothing was imported")
    } catch .file(let message) {
        throw .invalid(message)
    }
    // The migrations the imported values have been through (an export carries them).
    let importedRecord = imported.removeValue(forKey: "")
    guard let importedIDs = migrationIDs(in: importedRecord) else {
        throw .invalid(
            "\"\" is the file's reserved member, not a key: the record of the migrations run, which in \(source) it is not; nothing was imported"
        )
    }
    if !arguments.has("force"), let schema = try SuiteSchema.published(for: location) {
        schema.warnAboutRoot()
        let problems = schema.problems(in: imported, comparedWith: [:])
        if !problems.isEmpty {
            throw .invalid(
                problems.joined(separator: "\ndefaults: ") + "; nothing was imported (--force imports it anyway)"
            )
        }
    }
    let replacing = arguments.has("replace")
    try change(location) { suite throws(ToolError) in
        var writes: [String: JSONValue?] = [:]
        let existing = suite.userStoredValues()
        if replacing {
            for name in existing.keys where lockingFile(of: name, in: suite) == nil {
                writes[name] = .some(nil)
            }
        }
        for (name, value) in imported { writes[name] = value }
        let recorded = suite.appliedMigrations
        if replacing || existing.isEmpty {
            // The suite holds what was imported: the record says what it has been through, and
            // the program runs the rest the next time it opens the suite.
            if recorded != importedIDs { suite.setAppliedMigrations(importedIDs) }
        } else if Set(recorded) != Set(importedIDs) {
            // Values of two shapes would be mixed, and one record cannot say what both have been
            // through: a migration run over them all would run twice over some, or never over others.
            let missing = recorded.filter { !importedIDs.contains($0) }
            let extra = importedIDs.filter { !recorded.contains($0) }
            let difference =
                missing.isEmpty
                ? "from after migrations the values of \(location.argument) have not been through (\(extra.joined(separator: ", ")))"
                : "from before migrations \(location.argument) records as run (\(missing.joined(separator: ", ")))"
            throw .invalid(
                "\(source) holds values \(difference); merged, some would never be migrated or be migrated twice. Import it with --replace (the program migrates it the next time it opens the suite), or into a suite with no values; nothing was imported"
            )
        }
        return writes
    }
}

/// The ids a record of migrations lists (`[]` for none); `nil` when `record` is not a record.
private func migrationIDs(in record: JSONValue?) -> [String]? {
    guard let record else { return [] }
    guard case .object(let members) = record, case .array(let ids)? = members["migrations"] else { return nil }
    var result: [String] = []
    for id in ids {
        guard case .string(let text) = id else { return nil }
        result.append(text)
    }
    return result
}
