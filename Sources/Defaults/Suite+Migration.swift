extension Defaults.Suite {
    /// The ids of the migrations this suite's store records as run, oldest first.
    ///
    /// The record is the file's member with the empty name (which no key can have), or in etcd the
    /// key `<prefix>.defaults-migrations`: `{"migrations": ["editor.fontSize from fontSize", …]}`.
    public var appliedMigrations: [String] {
        // Over UserDefaults, what other code stored is not in memory until read.
        if let storage = store.writeThrough { refresh(Self.migrationRecordName, from: storage) }
        return Self.recordedMigrations(in: store.userStoredValue(named: Self.migrationRecordName, in: self))
    }

    /// Runs the migrations the store does not record as run yet, in order, as one exclusive
    /// transaction, and records them.
    ///
    /// Ten processes that call this at once (or open a key that declares a migration) migrate the
    /// file once: the first takes the file's exclusive lock (for etcd, its exclusive transaction
    /// wins), the others find the record when their turn comes and change nothing. Observers see
    /// one change for the whole call, listing each key whose value changed.
    ///
    /// Nothing is lost: when a migration throws, nothing any migration of this call changed is
    /// kept, the file stays byte for byte as it was, the error is reported
    /// (``Defaults/StorageError/migrationFailed(migration:reason:)``) and thrown, and the old
    /// values stay readable under their old names. A migration that would write a key a system
    /// file locks, or a secret, is left for later with those after it, as are all of them when
    /// the file is read-only; nothing is reported for that (``Defaults/MigrationReport/deferred``).
    /// Those left for later are read through in memory: from then on the suite's reads see the
    /// values as they would leave them, worked out again whenever the store changes from outside.
    ///
    /// ```swift
    /// try suite.migrate([.retiring(["legacyMode", "betaFeatures"])])
    /// ```
    ///
    /// - Parameters:
    ///   - migrations: Every migration of the suite, oldest first; those recorded are skipped.
    ///   - dryRun: Whether to work out what would change and change nothing (no lock is taken).
    /// - Returns: What ran, or would run, and the values it wrote.
    /// - Throws: ``Defaults/StorageError``: a migration that failed, or a file that could not be
    ///   locked, read or written.
    @discardableResult
    public func migrate(_ migrations: [Defaults.Migration], dryRun: Bool = false) throws -> Defaults.MigrationReport {
        try migrate(migrations, dryRun: dryRun, readsThroughDeferred: true)
    }

    /// ``migrate(_:dryRun:)``; with `readsThroughDeferred` false, those left for later are not
    /// read through (a key's own migration is read through by the key, for its name alone).
    private func migrate(
        _ migrations: [Defaults.Migration],
        dryRun: Bool,
        readsThroughDeferred: Bool
    ) throws -> Defaults.MigrationReport {
        let recorded = appliedMigrations
        guard migrations.contains(where: { !recorded.contains($0.id) }) else { return Defaults.MigrationReport() }
        // Over UserDefaults, the values other code stored are read first: a migration sees them all.
        if let storage = store.writeThrough {
            for name in storage.storedNames { refresh(name, from: storage) }
        }
        let limits = store.migrationLimits()
        if dryRun || limits.readOnly {
            let values = store.userStoredValues(in: self)
            var report = try reportingFailure {
                try Self.plan(migrations, on: values, locked: limits.locked).report
            }
            if limits.readOnly && !dryRun {
                report = Defaults.MigrationReport(deferred: report.applied + report.deferred)
                if readsThroughDeferred { readThrough(report.deferred, of: migrations) }
            }
            return report
        }
        let report = try reportingFailure {
            try exclusiveTransaction {
                // Read through the transaction, so that an exclusive commit over a backend that
                // checks what was read (etcd) fails when another process recorded meanwhile.
                let scope = TransactionScope.find(for: self)!
                // Under the lock: a system file that began to lock a key meanwhile is seen.
                let limits = store.migrationLimits()
                let snapshot = scope.snapshotValues()
                let planned = try Self.plan(migrations, on: snapshot, locked: limits.locked)
                // What the migrations read and write (and the record) is what an exclusive commit
                // over a backend that checks reads (etcd) compares: not every key of a large
                // suite. Also what they would touch had none run: when another process ran them
                // meanwhile, the commit fails and memory takes in what they wrote, not the record
                // alone (a key created next reads it, not its default).
                var compared = planned.read.union(planned.report.changes.keys)
                compared.formUnion(Self.namesTouched(by: migrations, on: snapshot))
                for name in compared { _ = scope.storedValue(named: name) }
                _ = scope.storedValue(named: Self.migrationRecordName)
                guard !planned.report.applied.isEmpty else { return planned.report }
                write(planned.report.changes)
                // Marked suppressed, which keeps it out of every event (see `committing`).
                _ = scope.record([Self.migrationRecordName: planned.record], suppressed: true)
                return planned.report
            }
        }
        if readsThroughDeferred { readThrough(report.deferred, of: migrations) }
        // What the store records now is no longer read through: the store holds it.
        if !report.applied.isEmpty { store.stopReadingThrough(Set(appliedMigrations)) }
        return report
    }

    /// Reads the migrations of `migrations` whose ids are `deferred` through, from now on.
    private func readThrough(_ deferred: [String], of migrations: [Defaults.Migration]) {
        guard !deferred.isEmpty else { return }
        let left = migrations.filter { deferred.contains($0.id) }
        store.readThrough(left.map { MigrationLayer.ReadThrough(migration: $0, sources: nil) })
    }

    /// Runs `body`; a migration's failure in it is reported and thrown as a storage error.
    private func reportingFailure<Result>(_ body: () throws -> Result) throws -> Result {
        do {
            return try body()
        } catch let failure as MigrationFailure {
            let error = Defaults.StorageError.migrationFailed(
                migration: failure.id,
                reason: String(describing: failure.error)
            )
            report(error)
            throw error
        }
    }

    /// Runs a key's own migration (the one `make` makes) unless the store records `id`, when the
    /// key is created; reads it through in memory while it cannot run, or until it is final
    /// (``MigrationLayer``).
    func declareMigration(
        id: String,
        of name: String,
        formerly: [String],
        isFinal: Bool,
        _ make: () -> Defaults.Migration
    ) {
        // The one look a store whose migrations ran pays for each key that declares one.
        if let storage = store.writeThrough { refresh(Self.migrationRecordName, from: storage) }
        if store.recordContains(id, in: self) {
            // Over a backend another process commits to directly (etcd), memory may hold the
            // record before the values that came with it (an exclusive transaction that lost a
            // race takes in only the keys it compared): while a former name still holds a value
            // and the key none, the key reads it through, until the rest arrives.
            guard store.locking == nil, !formerly.isEmpty, store.userStoredValue(named: name, in: self) == nil,
                formerly.contains(where: { store.userStoredValue(named: $0, in: self) != nil })
            else { return }
            let sources = formerly.contains(name) ? formerly : [name] + formerly
            let readThrough = MigrationLayer.ReadThrough(
                migration: make(),
                sources: sources,
                target: name,
                runsWhenRecorded: !formerly.contains(name)
            )
            store.readThrough([readThrough])
            return
        }
        let migration = make()
        // Inside a transaction (on any suite) it would run without this file's lock, or take it
        // inside another file's: read through now, moved the next time the key is created.
        if isFinal && TransactionScope.current == nil {
            // Reported inside when it fails.
            let report = try? migrate([migration], dryRun: false, readsThroughDeferred: false)
            if report?.applied.isEmpty == false || appliedMigrations.contains(migration.id) { return }
        }
        let sources = formerly.contains(name) ? formerly : [name] + formerly
        store.readThrough([MigrationLayer.ReadThrough(migration: migration, sources: sources, target: name)])
    }
}

extension Defaults.Suite {
    /// The member of the store that records the migrations run.
    static let migrationRecordName = ""

    /// A migration that threw, and what it threw.
    private struct MigrationFailure: Error {
        let id: String
        let error: any Error
    }

    /// The names `migrations` read or write when run over `stored` as if none had run; empty when
    /// one of them looks at every name.
    private static func namesTouched(by migrations: [Defaults.Migration], on stored: [String: JSONValue]) -> Set<String>
    {
        var values = stored
        values[migrationRecordName] = nil
        var current = Defaults.MigrationValues(values: values, locked: [])
        let reads = current.reads
        for migration in migrations {
            var attempt = current
            if (try? migration.body(&attempt)) != nil { current = attempt }
        }
        guard let read = reads.names else { return [] }
        var touched = read
        for (name, value) in current.values where values[name] != value { touched.insert(name) }
        for name in values.keys where current.values[name] == nil { touched.insert(name) }
        return touched
    }

    /// Whether `record` lists `id`.
    static func record(_ record: JSONValue?, contains id: String) -> Bool {
        guard case .object(let members)? = record, case .array(let ids)? = members["migrations"] else { return false }
        for case .string(let recorded) in ids where recorded == id { return true }
        return false
    }

    /// The ids `record` lists.
    static func recordedMigrations(in record: JSONValue?) -> [String] {
        guard case .object(let members)? = record, case .array(let ids)? = members["migrations"] else { return [] }
        return ids.compactMap { if case .string(let id) = $0 { id } else { nil } }
    }

    /// Works out what `migrations` do to `stored`: the report, and the record to store.
    private static func plan(
        _ migrations: [Defaults.Migration],
        on stored: [String: JSONValue],
        locked: Set<String>
    ) throws -> (report: Defaults.MigrationReport, record: JSONValue, read: Set<String>) {
        let oldRecord = stored[migrationRecordName]
        var ids = recordedMigrations(in: oldRecord)
        var values = stored
        values[migrationRecordName] = nil
        var current = Defaults.MigrationValues(values: values, locked: locked)
        let reads = current.reads
        var report = Defaults.MigrationReport()
        for migration in migrations where !ids.contains(migration.id) {
            guard report.deferred.isEmpty else {
                report.deferred.append(migration.id)
                continue
            }
            var attempt = current
            do {
                try migration.body(&attempt)
            } catch {
                throw MigrationFailure(id: migration.id, error: error)
            }
            guard attempt.touchedLocked == nil else {
                report.deferred.append(migration.id)
                continue
            }
            current = attempt
            ids.append(migration.id)
            report.applied.append(migration.id)
        }
        for (name, value) in current.values where values[name] != value { report.changes[name] = .some(value) }
        for name in values.keys where current.values[name] == nil { report.changes[name] = .some(nil) }
        var members: [String: JSONValue] = [:]
        if case .object(let old)? = oldRecord { members = old }
        members["migrations"] = .array(ids.map { .string($0) })
        let read = reads.names ?? Set(values.keys)
        return (report, .object(members), read)
    }
}

extension Defaults.Key {
    /// The id of a key's migration: `editor.fontSize from fontSize`, `appearance from darkMode (Bool)`,
    /// `sync from sync (Bool)`; `convertsFrom` names the type a conversion reads.
    static func migrationID(name: String, formerly: [String], convertsFrom: String?) -> String {
        // NB: appended in place: made for every key that declares a migration, each time it is
        // created, it is most of what such a key costs once its migration ran.
        var id = name
        id.reserveCapacity(
            name.utf8.count * 2 + formerly.reduce(0) { $0 + $1.utf8.count + 2 } + (convertsFrom?.utf8.count ?? 0) + 8
        )
        // ASCII: text that is not compares and hashes by canonical equivalence, many times slower.
        id += " from "
        if formerly.isEmpty { id += name }
        for (index, former) in formerly.enumerated() {
            if index > 0 { id += ", " }
            id += former
        }
        if let convertsFrom {
            id += " ("
            id += convertsFrom
            id += ")"
        }
        return id
    }

    /// The migration a key declares: its value carried over from its former names, converted
    /// from `Old` by `transform` when there is one.
    static func declaredMigration<Old: Defaults.Serializable>(
        id: String,
        name: String,
        formerly: [String],
        from: Old.Type,
        transform: (@Sendable (Old) throws -> Value)?
    ) -> Defaults.Migration {
        // What a value stored in an older form reads as now.
        let convert: @Sendable (String, JSONValue) throws -> JSONValue = { stored, json in
            if let transform, let old = ValueCoding.decode(json, as: Old.self) {
                guard let new = ValueCoding.encode(try transform(old)) else {
                    throw Defaults.MigrationError("the value made from \"\(stored)\" cannot be stored as \(Value.self)")
                }
                return new
            }
            guard ValueCoding.decode(json, as: Value.self) != nil else {
                let expected = transform == nil ? "\(Value.self)" : "\(Old.self) or \(Value.self)"
                throw Defaults.MigrationError("\"\(stored)\" holds \(json), which is not a value of type \(expected)")
            }
            return json
        }
        return Defaults.Migration(id) { values in
            // The key's own name holds an older form only when no other name held the value before.
            if transform != nil, formerly.isEmpty || formerly.contains(name), let own = values[name] {
                values[name] = try convert(name, own)
            }
            for former in formerly where former != name {
                guard let old = values[former] else { continue }
                // A value the new version stored is never replaced by an old one.
                if values[name] == nil { values[name] = try convert(former, old) }
                values.removeValue(named: former)
            }
        }
    }
}
