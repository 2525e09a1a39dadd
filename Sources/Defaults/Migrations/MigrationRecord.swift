import Foundation

// The record of migrations run (the store's member with the empty name), and the plan of a run.
extension Defaults.Suite {
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

    /// The member of the store that records the migrations run.
    static let migrationRecordName = ""

    /// A migration that threw, and what it threw.
    struct MigrationFailure: Error {
        let id: String
        let error: any Error

        /// The error reported for it.
        var storageError: Defaults.StorageError {
            .migrationFailed(migration: id, reason: String(describing: error))
        }
    }

    /// Whether `record` lists `id`.
    static func record(_ record: JSONValue?, contains id: String) -> Bool {
        guard case .object(let members)? = record, case .array(let ids)? = members["migrations"] else { return false }
        for case .string(let recorded) in ids where recorded == id { return true }
        return false
    }

    /// What is wrong with `record` as a record of migrations; `nil` when nothing is.
    ///
    /// A record is an object whose `migrations`, when there, is an array of strings; no record at
    /// all is nothing wrong either.
    static func problem(withRecord record: JSONValue?) -> String? {
        guard let record else { return nil }
        guard case .object(let members) = record else { return "it is not a JSON object" }
        guard let ids = members["migrations"] else { return nil }
        guard case .array(let list) = ids else { return "its \"migrations\" is not an array" }
        guard list.allSatisfy({ if case .string = $0 { true } else { false } }) else {
            return "its \"migrations\" lists something that is not a string"
        }
        return nil
    }

    /// The ids `record` lists.
    static func recordedMigrations(in record: JSONValue?) -> [String] {
        guard case .object(let members)? = record, case .array(let ids)? = members["migrations"] else { return [] }
        return ids.compactMap { if case .string(let id) = $0 { id } else { nil } }
    }

    /// Works out what `migrations` do to `stored`: the report, and the record to store.
    static func plan(
        _ migrations: [Defaults.Migration],
        on stored: [String: JSONValue],
        locked: Set<String>,
        run: MigrationRun
    ) throws -> (
        report: Defaults.MigrationReport, record: JSONValue, read: Set<String>, failures: [MigrationFailure]
    ) {
        let oldRecord = stored[migrationRecordName]
        var ids = recordedMigrations(in: oldRecord)
        var values = stored
        values[migrationRecordName] = nil
        var current = Defaults.MigrationValues(values: values, locked: locked)
        let reads = current.reads
        var report = Defaults.MigrationReport()
        var failures: [MigrationFailure] = []
        for migration in migrations where !ids.contains(migration.id) || run.forced.contains(migration.id) {
            guard report.deferred.isEmpty || run.isKeys else {
                report.deferred.append(migration.id)
                continue
            }
            var attempt = current
            do {
                try migration.body(&attempt)
            } catch {
                let failure = MigrationFailure(id: migration.id, error: error)
                guard run.isKeys else { throw failure }
                failures.append(failure)
                continue
            }
            guard attempt.touchedLocked == nil else {
                report.deferred.append(migration.id)
                continue
            }
            current = attempt
            if !ids.contains(migration.id) { ids.append(migration.id) }
            report.applied.append(migration.id)
        }
        for (name, value) in current.values where values[name] != value { report.changes[name] = .some(value) }
        for name in values.keys where current.values[name] == nil { report.changes[name] = .some(nil) }
        var members: [String: JSONValue] = [:]
        if case .object(let old)? = oldRecord { members = old }
        members["migrations"] = .array(ids.map { .string($0) })
        // The claim of the process that ran them (`Suite+MigrationClaim.swift`) ends with them.
        members[migrationClaimMember] = nil
        let read = reads.names ?? Set(values.keys)
        return (report, .object(members), read, failures)
    }
}
