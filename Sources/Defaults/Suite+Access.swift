import Dispatch
import Foundation

extension Defaults.Suite {
    /// The value of `key` in this suite, or its default when nothing valid is stored.
    ///
    /// The key's own `suite` is ignored: its name and default are used here.
    public subscript<Value: Defaults.Serializable>(key: Defaults.Key<Value>) -> Value {
        get {
            // NB: the cached case stays free of `Optional<Value>` and generic enums, whose runtime
            // metadata an unspecialized generic read would otherwise look up on every call.
            if case .cached(let box?) = cachedLookup(named: key.hashedName, typeID: ObjectIdentifier(Value.self)) {
                return unsafeDowncast(box, to: Box<Value>.self).value
            }
            return uncachedValue(of: key)
        }
        set { setValue(newValue, for: key) }
    }

    /// Removes every value in this suite, including keys no ``Defaults/Key`` names, as one change.
    ///
    /// For a file-backed suite the next write of the file removes every key the file holds then,
    /// under the file's lock: keys another process wrote that this one has not read yet go too.
    /// Keys written after that write, by anyone, stay. Keys a system file locks keep the user's
    /// value (see ``Defaults/StorageError/lockedKey(key:lockedBy:)``). The record of the
    /// migrations run (``appliedMigrations``) stays: they are not run again over what the new
    /// version writes from now on.
    public func removeAll() {
        store.settlePendingMigrations()
        // As in removeValues(named:), every key the UserDefaults holds joins the stored values first.
        refreshEverythingWrittenThrough()
        if let record = store.userStoredValue(named: Self.migrationRecordName, in: self) {
            // Written again after the removal, in the same change: the next write of the file
            // removes what it holds, then writes what memory changed, the record among it.
            transaction {
                removeEverything()
                _ = TransactionScope.find(for: self)?.record([Self.migrationRecordName: record], suppressed: true)
            }
            return
        }
        removeEverything()
    }

    /// ``removeAll()`` without the care for the record of migrations.
    private func removeEverything() {
        if let scope = TransactionScope.find(for: self),
            scope.removeAll(suppressed: Defaults.Propagation.isSuppressed)
        {
            return
        }
        commit(removesEverything: true) { values in Dictionary(uniqueKeysWithValues: values.keys.map { ($0, nil) }) }
    }

    /// Writes every pending change to the file now.
    ///
    /// An in-memory suite has nothing to do; a suite over `UserDefaults` asks it to synchronize. A
    /// failure is also reported to the error handler, once while it lasts (a retry that fails the
    /// same way, this call's or the timer's, is not reported again until a commit succeeds); the
    /// values stay in memory and the next flush retries.
    ///
    /// - Throws: ``Defaults/StorageError`` when the file cannot be written; and when a write since
    ///   the last call was refused (``Defaults/StorageError/readOnlyFile(url:reason:)``, naming the
    ///   keys, ``Defaults/StorageError/lockedKey(key:lockedBy:)``, or a backend's
    ///   ``Defaults/StorageError/writeRefused(backend:reason:)``), the first such refusal, once: it
    ///   was reported when it happened, and its value was never stored.
    public func synchronize() throws(Defaults.StorageError) {
        // The migrations of keys created just now are stored first, as pending writes are.
        store.settlePendingMigrations()
        if let storage = store.writeThrough {
            storage.synchronize()
            return
        }
        let earlier = takeRefusal()
        let flushed = store.flushNow()
        // A refusal of this flush's own is thrown below, not kept for the next call.
        let now = takeRefusal()
        if case .failure(let error) = flushed {
            // On the caller's thread; once while the same failure lasts, though each call throws it.
            if store.reportsCommitFailure(error) { report(error) }
            // A refusal the timer's commit met meanwhile is not lost behind another failure.
            throw earlier ?? now ?? error
        }
        if let refused = earlier ?? now { throw refused }
    }

    /// The first write refused since the last ``synchronize()``, forgotten as it is taken.
    func takeRefusal() -> Defaults.StorageError? {
        store.takeRefusal()
    }

    // MARK: - Reading

    /// The decoded value stored under `name`, or `nil` when nothing is stored or it does not decode.
    func value<Value: Defaults.Serializable>(named name: HashedName, as type: Value.Type) -> Value? {
        refreshWrittenThrough(name.text, readAs: Value.self)
        let typeID = ObjectIdentifier(Value.self)
        let lookup = lookup(named: name, typeID: typeID)
        switch lookup {
        case .absent:
            return nil
        case .cached(let box):
            guard let box else { return nil }
            return unsafeDowncast(box, to: Box<Value>.self).value
        case .uncached(let json):
            return ValueCoding.decode(json.value, as: Value.self)
        case .overridden:
            let candidates = store.overrideCandidates(for: name.text)
            if let value = overrideValue(named: name.text, candidates, as: Value.self) { return value }
            // Every candidate is rejected now, so this looks at the stored value.
            return self.value(named: name, as: type)
        case .decode(let json, let generation):
            // Decoding runs the type's bridge, user code, so it happens outside the lock.
            let decoded = ValueCoding.decode(json.value, as: Value.self)
            let entry: CacheEntry = decoded.map { .holding($0) } ?? .undecodable(as: Value.self)
            let replaced = store.keepDecoded(entry, for: name, ifStillAt: generation)
            // Released here, after the lock: it may hold an instance of a class of the user's.
            _ = replaced
            if decoded == nil, let mismatch = store.mismatch(named: name.text, holding: json.value) { report(mismatch) }
            if decoded != nil { store.learnReadType(name.text, as: Value.self) }
            return decoded
        }
    }

    /// The slow path of the subscript, kept out of line so the fast path needs no `Optional<Value>`.
    @inline(never)
    private func uncachedValue<Value: Defaults.Serializable>(of key: Defaults.Key<Value>) -> Value {
        value(named: key.hashedName, as: Value.self) ?? key.defaultValue
    }

    /// `lookup(named:typeID:)` when nothing may need refreshing from `UserDefaults` first.
    @inline(__always)
    private func cachedLookup(named name: HashedName, typeID: ObjectIdentifier) -> Store.Lookup {
        if store.writeThrough != nil { return .absent }
        return lookup(named: name, typeID: typeID)
    }

    // Inlined into the read, as `cachedLookup`: a call of its own cost the hot path 19
    // instructions of 251.
    @inline(__always)
    private func lookup(named name: HashedName, typeID: ObjectIdentifier) -> Store.Lookup {
        store.lookup(named: name, typeID: typeID, in: self)
    }

    /// The first of `candidates` that decodes as `Value`, kept for the next read; those that do not
    /// are rejected for good and reported once each.
    private func overrideValue<Value: Defaults.Serializable>(
        named name: String,
        _ candidates: [Overrides.Candidate],
        as type: Value.Type
    ) -> Value? {
        for candidate in candidates {
            // Decoding runs the type's bridge, user code, so it happens outside the lock.
            if let value = candidate.forms.lazy.compactMap({ ValueCoding.decode($0, as: Value.self) }).first {
                store.keepOverride(.holding(value), for: name)
                return value
            }
            let isFirstReport = store.rejectOverride(candidate.source, of: name)
            if isFirstReport {
                report(
                    .invalidOverride(
                        key: name,
                        source: candidate.source.label(forKey: name),
                        value: candidate.text,
                        valueType: String(reflecting: Value.self)
                    )
                )
            }
        }
        return nil
    }

    /// The JSON stored under `name`, exactly as it sits in the file; `nil` when nothing is stored.
    ///
    /// This is the stored form, not a typed value: no bridge runs, no default applies, and values
    /// given for this run by launch arguments or the environment are not seen. For a suite with
    /// system files beneath it, it is the value reads decode: a locked key's system value, or
    /// else the user's file's, or else the first system file's that sets it (see
    /// ``source(ofValueNamed:)`` for which). Inside a ``transaction(_:)`` on this task, it includes
    /// the transaction's own writes. A change made by another process or by editing the file is
    /// seen once the suite has read it (see ``Defaults/Suite``).
    ///
    /// ```swift
    /// if case .number(let text)? = suite.storedValue(named: "http.port") { print(text) }
    /// ```
    ///
    /// - Parameter name: The stored key's name.
    /// - Returns: The stored JSON, or `nil`.
    public func storedValue(named name: String) -> Defaults.JSONValue? {
        store.settlePendingMigrations()
        refreshWrittenThrough(name)
        return store.storedValue(named: name, in: self)
    }

    /// Every stored value, by key name, all read at one instant: one state of the suite.
    ///
    /// The same stored form as ``storedValue(named:)``, including keys no ``Defaults/Key`` names,
    /// and keys only a system file sets. Without system files, the dictionary is shared with the
    /// suite until its next change (copy on write), so taking it costs no copy; the next write after
    /// it pays for one copy of the suite's values.
    ///
    /// - Returns: The stored JSON of every key.
    public func storedValues() -> [String: Defaults.JSONValue] {
        store.settlePendingMigrations()
        return Self.withoutMigrationRecord(store.storedValues(in: self))
    }

    /// Every value the suite's own file holds (or will, once pending writes are flushed), without
    /// the system files beneath it: what `defaults read <suite>` prints and `defaults delete --all`
    /// removes.
    ///
    /// ```swift
    /// for name in suite.userStoredValues().keys.sorted() { print(name) }
    /// ```
    ///
    /// - Returns: The stored JSON of every key the suite's own file holds.
    public func userStoredValues() -> [String: Defaults.JSONValue] {
        store.settlePendingMigrations()
        return Self.withoutMigrationRecord(store.userStoredValues(in: self))
    }

    /// `values` without the store's record of migrations (``appliedMigrations``), which is no key's.
    static func withoutMigrationRecord(_ values: [String: Defaults.JSONValue]) -> [String: Defaults.JSONValue] {
        guard values[migrationRecordName] != nil else { return values }
        var values = values
        values[migrationRecordName] = nil
        return values
    }

    /// Stores JSON values by name (`nil` removes one), as one change: for a tool that edits
    /// settings it has no ``Defaults/Key`` for, as the `defaults` command does.
    ///
    /// The values are kept as given; no bridge runs and no type is checked, so a key that reads one
    /// later decodes it then (a value that does not decode reads as the key's default). Observers
    /// see one change, and inside a ``transaction(_:)`` the values are part of it. Values locked by a
    /// system file, or refused by a read-only file, are left as they are and reported, as for a typed
    /// write.
    ///
    /// ```swift
    /// suite.setStoredValues(["http.port": .number("8080"), "legacyMode": nil])
    /// ```
    ///
    /// A value nested deeper than ``Defaults/JSONValue/maximumStoredDepth`` levels, or a value under
    /// the empty name (the file's reserved member), is refused before anything is stored: nothing
    /// changes and the error handler is told
    /// (``Defaults/StorageError/serializationFailed(key:valueType:)``). Removing any name is allowed.
    ///
    /// - Parameter values: The JSON to store under each name, or `nil` to remove it.
    public func setStoredValues(_ values: [String: Defaults.JSONValue?]) {
        let refused = values.lazy
            .filter { name, value in
                guard let value else { return false }
                return name.isEmpty || value.isNested(deeperThan: JSONValue.maximumStoredDepth)
            }
            .map(\.key).min(by: JSONWriter.utf8Precedes)
        if let refused {
            let reason =
                refused.isEmpty
                ? "JSON (a key's name cannot be empty)"
                : "JSON nested more than \(JSONValue.maximumStoredDepth) levels deep"
            report(.serializationFailed(key: refused, valueType: reason))
            return
        }
        guard !values.isEmpty else { return }
        refreshWrittenThrough(names: values.keys)
        write(values)
    }
}
