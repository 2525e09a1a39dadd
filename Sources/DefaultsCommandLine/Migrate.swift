import Defaults

/// `defaults migrate <suite> [--dry-run]`: the migrations the program's published schema declares,
/// which of them the file records as run, and the ones the command can run itself (renames and
/// retirements), run or shown.
func migrate(_ arguments: ParsedArguments) throws(ToolError) {
    let location = try SuiteLocation(arguments.value("suite")!)
    guard let schema = try SuiteSchema.published(for: location) else {
        let place = location.file.map { " at \(Defaults.Suite.schemaFileURL(forSettingsFile: $0).path)" } ?? ""
        throw .notFound("suite \(location.argument) has no published schema\(place); its program publishes one")
    }
    let dryRun = arguments.has("dry-run")
    // Checked first, or opening the suite would move a broken file aside.
    _ = try location.read()
    // A migration that cannot run is said below, as the command's own line.
    let suite = location.open { error in
        if case .migrationFailed = error { return }
        printProblem(error)
    }
    let recorded = Set(suite.appliedMigrations)
    let (runnable, needProgram) = schema.declaredMigrations(recorded: recorded)
    var lines: [String] = []
    for (id, reason) in needProgram { lines.append("left for the program: \(id) (\(reason))") }
    let report: Defaults.MigrationReport
    do {
        report = try suite.migrate(runnable, dryRun: dryRun)
        if !dryRun { try suite.synchronize() }
    } catch Defaults.StorageError.migrationFailed(let migration, let reason) {
        // A stored value the migration cannot take: an invalid value, as for `write`.
        if !lines.isEmpty { printLine(lines.joined(separator: "\n")) }
        throw .invalid(
            dryRun
                ? "\(migration) would fail: \(reason); nothing was changed"
                : "\(migration) cannot run: \(reason); nothing was changed"
        )
    } catch {
        // Printed by the error handler.
        throw .reported(status: 3)
    }
    for id in report.applied { lines.append((dryRun ? "would run: " : "ran: ") + id) }
    for name in report.changes.keys.sorted(by: utf8Precedes) {
        let value = report.changes[name]!
        lines.append("  \(name): " + (value.map(renderCompact) ?? "(removed)"))
    }
    for id in report.deferred {
        lines.append("left for later: \(id) (it writes a locked key, or the file is read-only)")
    }
    if lines.isEmpty {
        let declared = !schema.migrations.isEmpty || schema.keys.values.contains { $0["x-migration"] != nil }
        lines.append(declared ? "nothing to migrate" : "nothing to migrate: the schema declares no migration")
    }
    printLine(lines.joined(separator: "\n"))
}

extension SuiteSchema {
    /// The migrations the schema declares and the file does not record (`recorded`): those the
    /// command can run (a key's rename, which moves a value that fits the key's schema; a
    /// retirement), in the order the program runs them, and the ids of those that run code only
    /// the program has.
    func declaredMigrations(
        recorded: Set<String>
    ) -> (runnable: [Defaults.Migration], needProgram: [(id: String, reason: String)]) {
        let code = "it runs code only the program has"
        var runnable: [Defaults.Migration] = []
        var needProgram: [(id: String, reason: String)] = []
        // The suite's own, in order: a retirement runs only while every one before it can.
        for entry in migrations {
            guard case .string(let id)? = entry["id"], !recorded.contains(id) else { continue }
            guard case .array(let names)? = entry["removes"] else {
                needProgram.append((id, code))
                continue
            }
            guard needProgram.isEmpty else {
                needProgram.append((id, "it runs after one left for the program"))
                continue
            }
            let removed = names.compactMap { if case .string(let name) = $0 { name } else { nil } }
            runnable.append(
                Defaults.Migration(id) { values in
                    for name in removed { values.removeValue(named: name) }
                }
            )
        }
        for name in keys.keys.sorted(by: utf8Precedes) {
            let property = keys[name]!
            guard case .string(let id)? = property["x-migration"], !recorded.contains(id) else { continue }
            guard property["x-final"] != .bool(false) else {
                needProgram.append((id, "not final: old versions still use its former names"))
                continue
            }
            guard property["x-converts-from"] == nil, case .array(let former)? = property["x-formerly"] else {
                needProgram.append((id, code))
                continue
            }
            let formerNames = former.compactMap { if case .string(let name) = $0 { name } else { nil } }
            runnable.append(rename(formerNames, to: name, id: id))
        }
        return (runnable, needProgram)
    }

    /// A key's rename as the program runs it.
    ///
    /// The first former name's value moves to `name` unless a value is stored there; every former
    /// name is removed. A value that does not fit the key's schema stops it.
    private func rename(_ formerNames: [String], to name: String, id: String) -> Defaults.Migration {
        Defaults.Migration(id) { values in
            for former in formerNames where former != name {
                guard let old = values[former] else { continue }
                if values[name] == nil {
                    if let problem = problem(with: old, forKey: name) {
                        throw Defaults.MigrationError("\"\(former)\" cannot move: \(problem)")
                    }
                    values[name] = old
                }
                values.removeValue(named: former)
            }
        }
    }
}
