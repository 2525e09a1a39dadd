extension Defaults.Suite {
    /// The ids of the migrations this suite's store records as run, oldest first.
    ///
    /// The record is the file's member with the empty name (which no key can have), or in etcd the
    /// key `<prefix>.defaults-migrations`: `{"migrations": ["editor.fontSize from fontSize", …]}`.
    public var appliedMigrations: [String] {
        // Those of keys created just now run first, as a read sees the writes made just now.
        store.settlePendingMigrations()
        return recordedMigrations()
    }

    /// Replaces the store's record of the migrations run with `ids` (none: removes it), as one
    /// change that no observer is told of.
    ///
    /// For a tool that restores a backup or imports another install's values: the record travels
    /// with the values it describes, so the migrations it does not list run over them the next
    /// time a program declares them (the `defaults import` command does this). Inside a
    /// transaction it is part of it.
    ///
    /// ```swift
    /// suite.setStoredValues(backup.values)
    /// suite.setAppliedMigrations(backup.migrations)
    /// ```
    ///
    /// - Parameter ids: The migrations the values have been through, oldest first.
    public func setAppliedMigrations(_ ids: [String]) {
        store.settlePendingMigrations()
        let record: JSONValue? = ids.isEmpty ? nil : .object(["migrations": .array(ids.map { .string($0) })])
        transaction {
            // Marked suppressed, which keeps it out of every event (see `committing`).
            _ = TransactionScope.find(for: self)?.record([Self.migrationRecordName: record], suppressed: true)
        }
    }

    /// The ids the store records, without running the key migrations waiting first.
    private func recordedMigrations() -> [String] {
        // Over UserDefaults, what other code stored is not in memory until read.
        refreshWrittenThrough(Self.migrationRecordName)
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
        store.settlePendingMigrations()
        return try migrate(migrations, dryRun: dryRun, run: MigrationRun())
    }

    /// How a call of ``migrate(_:dryRun:run:)`` runs its migrations.
    struct MigrationRun {
        /// Migrations that run although the store records them.
        var forced: Set<String> = []
        /// Whether they are keys' own migrations, each of which stands alone.
        ///
        /// One that fails or is left for later leaves the others to run, and none is read through
        /// here (a key's is read through by the key, for its name alone). A suite's migrations are
        /// one step each, in order: one that fails keeps the rest from running, and one left for
        /// later, those after it.
        var isKeys = false
    }

    /// ``migrate(_:dryRun:)``, run as `run` says.
    private func migrate(
        _ migrations: [Defaults.Migration],
        dryRun: Bool,
        run: MigrationRun
    ) throws -> Defaults.MigrationReport {
        let readsThroughDeferred = !run.isKeys
        let recorded = recordedMigrations()
        guard migrations.contains(where: { !recorded.contains($0.id) || run.forced.contains($0.id) }) else {
            return Defaults.MigrationReport()
        }
        // Over UserDefaults, the values other code stored are read first: a migration sees them all.
        refreshEverythingWrittenThrough()
        let limits = store.migrationLimits()
        if dryRun || limits.readOnly {
            let values = store.userStoredValues(in: self)
            var report = try reportingFailure {
                try Self.plan(migrations, on: values, locked: limits.locked, run: run).report
            }
            if limits.readOnly && !dryRun {
                report = Defaults.MigrationReport(deferred: report.applied + report.deferred)
                if readsThroughDeferred { readThrough(report.deferred, of: migrations) }
            }
            return report
        }
        // Over a backend whose transactions are optimistic, this process claims the right to run
        // them first, or waits for the one that holds it (`Suite+MigrationClaim.swift`).
        var claim: String?
        if migrationsNeedClaim {
            claim = try claimMigrations(migrations, forced: run.forced)
            guard claim != nil else { return Defaults.MigrationReport() }
        }
        // Key migrations that failed, each reported after the transaction.
        var failures: [MigrationFailure] = []
        // Whether another process took the claim over meanwhile (this one stalled past its life).
        var lostClaim = false
        // A record that was no record, written over with the one this run makes: reported.
        var replacedRecord: (value: JSONValue, problem: String)?
        let report: Defaults.MigrationReport
        do {
            report = try reportingFailure {
                try exclusiveTransaction {
                    try runInTransaction(
                        migrations,
                        run: run,
                        claim: claim,
                        failures: &failures,
                        lostClaim: &lostClaim,
                        replacedRecord: &replacedRecord
                    )
                }
            }
        } catch {
            if let claim { releaseMigrationClaim(claim) }
            throw error
        }
        // The one that holds it now runs them, or has: wait for its record.
        if lostClaim { return try migrate(migrations, dryRun: dryRun, run: run) }
        for failure in failures { self.report(failure.storageError) }
        if let replacedRecord {
            // What it held goes into the report, so nothing of it is lost.
            let held = String(decoding: JSONWriter.compactBytes(replacedRecord.value), as: UTF8.self)
            self.report(
                .unreadableValue(
                    backend: store.backendName,
                    key: Self.migrationRecordName,
                    reason:
                        "\(held) (\(replacedRecord.problem)); it was replaced by one that lists the migrations run now"
                )
            )
        }
        if readsThroughDeferred { readThrough(report.deferred, of: migrations) }
        // What the store records now is no longer read through: the store holds it.
        if !report.applied.isEmpty { store.stopReadingThrough(Set(recordedMigrations())) }
        return report
    }

    /// The exclusive transaction of ``migrate(_:dryRun:run:)``: runs the migrations the record
    /// does not list (and those `run` forces), and writes what they make with the record; with
    /// `claim`, only while this process holds it, and gives it up.
    private func runInTransaction(
        _ migrations: [Defaults.Migration],
        run: MigrationRun,
        claim: String?,
        failures: inout [MigrationFailure],
        lostClaim: inout Bool,
        replacedRecord: inout (value: JSONValue, problem: String)?
    ) throws -> Defaults.MigrationReport {
        // Read through the transaction, so that an exclusive commit over a backend that checks
        // what was read (etcd) fails when another process recorded meanwhile.
        let scope = TransactionScope.find(for: self)!
        let record = scope.storedValue(named: Self.migrationRecordName)
        if let claim, Self.migrationClaimHolder(in: record) != claim {
            lostClaim = true
            return Defaults.MigrationReport()
        }
        // The record first: another process that ran them meanwhile recorded them, and a body
        // that the record lists is not run again, not even to see what it touches.
        let recordNow = Self.recordedMigrations(in: record)
        let pending = migrations.filter { !recordNow.contains($0.id) || run.forced.contains($0.id) }
        guard !pending.isEmpty else {
            if claim != nil {
                _ = scope.record([Self.migrationRecordName: Self.record(record, claimedBy: nil)], suppressed: true)
            }
            return Defaults.MigrationReport()
        }
        // Under the lock: a system file that began to lock a key meanwhile is seen.
        let limits = store.migrationLimits()
        let snapshot = scope.snapshotValues()
        let planned = try Self.plan(pending, on: snapshot, locked: limits.locked, run: run)
        failures = planned.failures
        // What the migrations read and write is what an exclusive commit over a backend that
        // checks reads (etcd) compares: not every key of a large suite.
        for name in planned.read.union(planned.report.changes.keys) { _ = scope.storedValue(named: name) }
        // A claim is given up with the record, whatever ran.
        guard !planned.report.applied.isEmpty || claim != nil else { return planned.report }
        write(planned.report.changes)
        if let record, let problem = Self.problem(withRecord: record) { replacedRecord = (record, problem) }
        // Marked suppressed, which keeps it out of every event (see `committing`).
        _ = scope.record([Self.migrationRecordName: planned.record], suppressed: true)
        return planned.report
    }

    /// Runs keys' own migrations, created since the last run, in one exclusive transaction; for
    /// ``Store/runPendingMigrations()``.
    ///
    /// One that cannot run now (it failed and was reported, the file is read-only, a system file
    /// locks its name) is read through, and runs again the next time the key is created.
    func runKeyMigrations(_ entries: [PendingMigrations.Entry]) {
        var run = MigrationRun(isKeys: true)
        for entry in entries where entry.runsWhenRecorded { run.forced.insert(entry.migration.id) }
        let report = try? migrate(entries.map(\.migration), dryRun: false, run: run)
        let recorded = Set(recordedMigrations())
        store.forgetDeclaredMigrations(entries.filter { recorded.contains($0.migration.id) }.map(\.target))
        // Not run here, and not run by another process meanwhile either.
        let left = entries.filter { entry in
            report?.applied.contains(entry.migration.id) != true
                && (entry.runsWhenRecorded || !recorded.contains(entry.migration.id))
        }
        guard !left.isEmpty else { return }
        store.readThrough(
            left.map { entry in
                MigrationLayer.ReadThrough(
                    migration: entry.migration,
                    sources: entry.sources,
                    target: entry.target,
                    runsWhenRecorded: entry.runsWhenRecorded,
                    convertsTarget: entry.convertsTarget
                )
            }
        )
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
            report(failure.storageError)
            throw failure.storageError
        }
    }

    /// Whether a key's final migration from `formerly` has nothing to do: the one look a program
    /// whose migrations ran pays for each key that declares one (``Store/State/isSettled(_:formerly:)``).
    ///
    /// Never over a backend other code writes directly (`UserDefaults`): what it holds is not in
    /// memory until read.
    func isMigrationSettled(_ name: HashedName, formerly: [String]) -> Bool {
        store.writeThrough == nil && store.isSettled(name, formerly: formerly)
    }

    /// Declares a key's own migration (the one `make` makes): unless the store records `id`, it
    /// runs shortly, with those of the other keys created meanwhile (``Store/addPendingMigration(_:from:)``),
    /// and the key reads it through in memory until then; while it is not final, it is only read
    /// through (``MigrationLayer``).
    func declareMigration(
        of hashedName: HashedName,
        formerly: [String],
        convertsFrom: String?,
        isFinal: Bool,
        readsAsNew: (JSONValue) -> Bool,
        make: (_ id: String) -> Defaults.Migration
    ) {
        let name = hashedName.text
        // Over UserDefaults, what other code stored is not in memory until read.
        refreshWrittenThrough(Self.migrationRecordName)
        refreshWrittenThrough(names: formerly)
        refreshWrittenThrough(name)
        // The one look a store whose migrations ran pays for each key that declares one.
        let recorded = store.recordedState(
            of: hashedName,
            formerly: formerly,
            convertsFrom: convertsFrom,
            isFinal: isFinal,
            in: self
        )
        // A former name that holds a value again, once recorded: an old version wrote it after
        // the move, or (over a backend another process commits to directly, etcd) memory holds
        // the record before the values that came with it. Read through, and moved again if
        // final: a value under the key's name stays, and the former name goes. So for an older
        // form an old version stored under the key's own name after its conversion ran.
        if recorded.isRecorded && !recorded.formerHoldsValue && recorded.own.map(readsAsNew) != false { return }
        let sources = formerly.contains(name) ? formerly : [name] + formerly
        let id = Self.migrationID(name: name, formerly: formerly, convertsFrom: convertsFrom)
        let convertsOwnName = convertsFrom != nil && (formerly.isEmpty || formerly.contains(name))
        if recorded.isRecorded {
            let migration = make(id)
            store.readThrough(
                [
                    MigrationLayer.ReadThrough(
                        migration: migration,
                        sources: sources,
                        target: name,
                        runsWhenRecorded: true
                    )
                ]
            )
            if isFinal {
                let entry = PendingMigrations.Entry(
                    migration: migration,
                    sources: sources,
                    target: name,
                    runsWhenRecorded: true,
                    convertsTarget: convertsOwnName
                )
                store.addPendingMigration(entry, from: self)
            }
            return
        }
        // Two keys that would carry one value, or one the other's: neither is run (nor read
        // through), and both are reported.
        if let conflict = store.declareKeyMigration(name, id: id, formerly: formerly) {
            guard conflict.reason != "it was refused already" else { return }
            report(.migrationFailed(migration: id, reason: conflict.reason + "; neither is run"))
            if let other = conflict.other, let otherID = other.id {
                report(
                    .migrationFailed(
                        migration: otherID,
                        reason: "the key \"\(name)\" conflicts with it (\(conflict.reason)); neither is run"
                    )
                )
                store.stopReadingThrough([otherID])
            }
            return
        }
        let migration = make(id)
        // Read through at once, so the key reads what the migration makes before it runs; not
        // needed when none of the names it reads holds a value (the first launch of a program).
        if !isFinal || store.holdsValue(underAnyOf: sources, in: self) {
            store.readThrough(
                [
                    MigrationLayer.ReadThrough(
                        migration: migration,
                        sources: sources,
                        target: name,
                        convertsTarget: convertsOwnName
                    )
                ]
            )
        }
        guard isFinal else { return }
        let entry = PendingMigrations.Entry(
            migration: migration,
            sources: sources,
            target: name,
            runsWhenRecorded: false,
            convertsTarget: convertsOwnName
        )
        store.addPendingMigration(entry, from: self)
    }
}
