/// What reads see through the key migrations that are not in the store: a layer over the user's
/// values, worked out in memory.
///
/// A key's migration is read through while it cannot be applied (the file is read-only, a system
/// file locks a key it writes) and, for a rolling upgrade, until it is declared final: the key
/// then reads what the migration would store under its name, made from what the store holds now
/// under its former names, and follows those live. Once the store holds a value of the key's own
/// that the layer was not made from (a write of the new version), that value is read.
struct MigrationLayer: Sendable {
    /// A migration read through: the migration, the names whose values it reads (`nil`: any, for
    /// a suite's own migration), and for a key's migration the key's name: the only name whose
    /// reads it changes (its former names stay readable, as old versions still write them).
    struct ReadThrough: Sendable {
        let migration: Defaults.Migration
        let sources: [String]?
        var target: String? = nil
        /// Whether it runs although the store records it.
        ///
        /// So for a key's rename that memory holds the record of before the values it moved (see
        /// `Suite.declareMigration`). A rename keeps a value stored under the key, so running it
        /// again changes nothing once they arrive.
        var runsWhenRecorded = false
        /// Whether it converts an older form stored under the key's own name (a type change under
        /// the same name).
        var convertsTarget = false
    }

    /// One key's value as the layer sees it: `value` stands in for the user's value while that is
    /// still `basedOn` (`nil`: absent).
    struct Entry: Sendable, Equatable {
        let basedOn: JSONValue?
        let value: JSONValue?
    }

    /// Every migration read through, in the order they were added.
    private(set) var readThroughs: [ReadThrough] = []
    /// The names whose change makes the layer be worked out again; `nil`: any name.
    private(set) var sources: Set<String>? = []
    /// What reads see, by key name.
    var entries: [String: Entry] = [:]
    /// How many workings-out have started; each takes the next number, and one that ends after a
    /// later one does not replace what the later one found.
    var started: UInt64 = 0
    /// The number of the working-out ``entries`` came from.
    var installed: UInt64 = 0
    /// The store's generation of the values ``entries`` were worked out from.
    var valuesGeneration: UInt64 = 0

    /// Adds `readThrough`; `false` when its migration was read through already.
    mutating func add(_ readThrough: ReadThrough) -> Bool {
        guard !readThroughs.contains(where: { $0.migration.id == readThrough.migration.id }) else { return false }
        readThroughs.append(readThrough)
        if let names = readThrough.sources {
            sources?.formUnion(names)
        } else {
            sources = nil
        }
        return true
    }

    /// Removes the read-throughs of the migrations `ids` names, and returns them, for the caller
    /// to release after the lock (a migration holds the user's closures).
    mutating func remove(_ ids: Set<String>) -> [ReadThrough] {
        let kept = readThroughs.filter { !ids.contains($0.migration.id) }
        guard kept.count < readThroughs.count else { return [] }
        let removed = readThroughs.filter { ids.contains($0.migration.id) }
        readThroughs = kept
        sources = []
        for readThrough in kept {
            if let names = readThrough.sources {
                sources?.formUnion(names)
            } else {
                sources = nil
            }
        }
        return removed
    }

    /// The keys' names whose own stored value a migration read through converts (a type change
    /// under the same name): an older form stored there is no problem.
    var convertedNames: Set<String> {
        var names: Set<String> = []
        for readThrough in readThroughs {
            if readThrough.convertsTarget, let target = readThrough.target { names.insert(target) }
        }
        return names
    }

    /// Whether a change of `name` may change what the layer shows.
    func isSource(_ name: String) -> Bool {
        sources?.contains(name) ?? true
    }

    /// What a read of `name` sees where the user's layer holds `stored`.
    func seen(_ name: String, stored: JSONValue?) -> JSONValue? {
        guard let entry = entries[name], entry.basedOn == stored else { return stored }
        return entry.value
    }

    /// Works out what reads see, from the user's `values`.
    ///
    /// That is the values as the migrations read through would leave them, run in order, as far
    /// as they differ. Runs the migrations (user code), so call it outside the store's lock. A
    /// migration that fails (it was reported when it was tried) is passed over.
    static func entries(of readThroughs: [ReadThrough], from values: [String: JSONValue]) -> [String: Entry] {
        entries(of: readThroughs, from: values, over: [:])
    }

    /// Works out what reads see once `added` (keys' migrations, each with a target) join the
    /// read-throughs whose `entries` were worked out from the user's `values`: only the added
    /// ones run, over the values as the others leave them.
    static func entries(
        adding added: [ReadThrough],
        to entries: [String: Entry],
        from values: [String: JSONValue]
    ) -> [String: Entry] {
        Self.entries(of: added, from: values, over: entries)
    }

    /// Runs `readThroughs` over the user's `values` as `earlier` entries (of read-throughs run
    /// before them) leave them, and returns those entries with theirs.
    private static func entries(
        of readThroughs: [ReadThrough],
        from values: [String: JSONValue],
        over earlier: [String: Entry]
    ) -> [String: Entry] {
        var own = values
        let record = own.removeValue(forKey: Defaults.Suite.migrationRecordName)
        var start = own
        for (name, entry) in earlier where own[name] == entry.basedOn { start[name] = entry.value }
        var migrated = Defaults.MigrationValues(values: start, locked: [])
        // One another process ran is in the values already: not run over them again.
        for readThrough in readThroughs
        where readThrough.runsWhenRecorded || !Defaults.Suite.record(record, contains: readThrough.migration.id) {
            guard let target = readThrough.target, let sources = readThrough.sources else {
                var attempt = migrated
                guard (try? readThrough.migration.body(&attempt)) != nil else { continue }
                migrated = attempt
                continue
            }
            // A key's migration touches its own name and its sources only: run on the values
            // themselves, with those put back after (a copy of every value for each key made
            // opening a program of 100 renamed keys take 80 ms).
            let saved = sources.map { ($0, migrated.values[$0]) } + [(target, migrated.values[target])]
            let ran = (try? readThrough.migration.body(&migrated)) != nil
            let made = migrated.values[target]
            for (name, value) in saved { migrated.values[name] = value }
            if ran { migrated.values[target] = made }
        }
        var entries: [String: Entry] = [:]
        for (name, value) in migrated.values where own[name] != value {
            entries[name] = Entry(basedOn: own[name], value: value)
        }
        for (name, value) in own where migrated.values[name] == nil {
            entries[name] = Entry(basedOn: value, value: nil)
        }
        return entries
    }

    /// A layer worked out outside the lock, to be taken in under it
    /// (``Store/State/installMigrationLayer(_:)``).
    struct WorkedOut {
        /// What each key reads through.
        var entries: [String: Entry]
        /// Which working-out it was: a later one taken in first wins.
        var ticket: UInt64
        /// The generation of the values it was worked out from.
        var generation: UInt64
        /// The working-out it added to, when it added to one.
        var base: UInt64?
    }

    /// What a working-out of the layer starts from, taken under the lock
    /// (``Store/State/startWorkingOutMigrationLayer(adding:)``).
    struct Start {
        /// Which working-out it is.
        var ticket: UInt64
        /// The migrations read through.
        var readThroughs: [ReadThrough]
        /// The user's values, and their generation.
        var values: [String: JSONValue]
        var generation: UInt64
        /// The entries to add to, and the working-out that made them, when adding to them.
        var base: (entries: [String: Entry], installed: UInt64)?
    }
}
