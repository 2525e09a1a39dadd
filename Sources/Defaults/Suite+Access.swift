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
            if case .cached(let box?) = cachedLookup(named: key.name, typeID: ObjectIdentifier(Value.self)) {
                return unsafeDowncast(box, to: Box<Value>.self).value
            }
            return uncachedValue(of: key)
        }
        set { setValue(newValue, named: key.name, keepsDecoded: key.isLosslessType) }
    }

    /// Removes every value in this suite, including keys no ``Defaults/Key`` names, as one change.
    public func removeAll() {
        if let scope = TransactionScope.find(for: self),
            scope.removeAll(suppressed: Defaults.Propagation.isSuppressed)
        {
            return
        }
        commit { tree in Dictionary(uniqueKeysWithValues: tree.keys.map { ($0, nil) }) }
    }

    /// Writes every pending change to the file now.
    ///
    /// An in-memory suite has nothing to do; a suite over `UserDefaults` asks it to synchronize. A
    /// failure is also reported to the error handler; the values stay in memory and the next flush
    /// retries.
    ///
    /// - Throws: ``Defaults/StorageError`` when the file cannot be written.
    public func synchronize() throws(Defaults.StorageError) {
        if case .userDefaults(let storage) = backend {
            storage.userDefaults.synchronize()
            return
        }
        guard case .file(let storage) = backend else { return }
        let result: Result<Void, Defaults.StorageError> = flushQueue.sync { flushNow(storage) }
        if case .failure(let error) = result {
            report(error)  // On the caller's thread, not the flush queue.
            throw error
        }
    }

    // MARK: - Reading

    /// What a read found under the lock.
    ///
    /// Not generic: a generic enum here costs a runtime metadata lookup (and value-witness copies)
    /// on every read of unspecialized generic code.
    private enum Lookup: Sendable {
        case absent
        case cached((any AnyObject & Sendable)?)
        case decode(JSONValue, generation: UInt64)
        case uncached(JSONValue)
    }

    /// The decoded value stored under `name`, or `nil` when nothing is stored or it does not decode.
    package func value<Value: Defaults.Serializable>(named name: String, as type: Value.Type) -> Value? {
        if case .userDefaults(let storage) = backend { refresh(name, from: storage) }
        let typeID = ObjectIdentifier(Value.self)
        let lookup = lookup(named: name, typeID: typeID)
        switch lookup {
        case .absent:
            return nil
        case .cached(let box):
            guard let box else { return nil }
            return unsafeDowncast(box, to: Box<Value>.self).value
        case .uncached(let json):
            return ValueCoding.decode(json, as: Value.self)
        case .decode(let json, let generation):
            // NB: decoding runs the type's bridge, user code, so it happens outside the lock.
            let decoded = ValueCoding.decode(json, as: Value.self)
            state.withLock { state in
                guard state.generation == generation else { return }
                state.cache[name] = decoded.map { .holding($0) } ?? .undecodable(as: Value.self)
            }
            return decoded
        }
    }

    /// The slow path of the subscript, kept out of line so the fast path needs no `Optional<Value>`.
    @inline(never)
    private func uncachedValue<Value: Defaults.Serializable>(of key: Defaults.Key<Value>) -> Value {
        value(named: key.name, as: Value.self) ?? key.defaultValue
    }

    /// `lookup(named:typeID:)` when nothing may need refreshing from `UserDefaults` first.
    private func cachedLookup(named name: String, typeID: ObjectIdentifier) -> Lookup {
        if case .userDefaults = backend { return .absent }
        return lookup(named: name, typeID: typeID)
    }

    private func lookup(named name: String, typeID: ObjectIdentifier) -> Lookup {
        state.withLock { state in
            if state.openTransactions > 0, let scope = TransactionScope.find(for: self) {
                guard let json = scope.storedValue(named: name) else { return .absent }
                return .uncached(json)
            }
            if let entry = state.cache[name], entry.type == typeID {
                return .cached(entry.box)
            }
            guard let json = state.tree[name] else { return .absent }
            return .decode(json, generation: state.generation)
        }
    }

    /// The stored JSON under `name`, as a transaction in this task sees it.
    package func storedValue(named name: String) -> JSONValue? {
        if case .userDefaults(let storage) = backend { refresh(name, from: storage) }
        return state.withLock { state in
            if state.openTransactions > 0, let scope = TransactionScope.find(for: self) {
                return scope.storedValue(named: name)
            }
            return state.tree[name]
        }
    }

    // MARK: - Writing

    /// Stores `value` under `name`; an empty optional removes it.
    ///
    /// With `keepsDecoded`, for types whose stored form reads back as exactly the same value, the
    /// written value is kept as the decoded one: the next read and observers skip decoding.
    package func setValue<Value: Defaults.Serializable>(
        _ value: Value,
        named name: String,
        keepsDecoded: Bool = false
    ) {
        let json = ValueCoding.encode(value)
        // NB: a value the file could not be read back with would make the whole file corrupt.
        if json == nil && !ValueCoding.isEmptyOptional(value)
            || json?.isNested(deeperThan: JSONValue.maximumStoredDepth) == true
        {
            report(.serializationFailed(key: name, valueType: String(reflecting: Value.self)))
            return
        }
        if let scope = TransactionScope.find(for: self),
            scope.record([name: json], suppressed: Defaults.Propagation.isSuppressed)
        {
            return
        }
        commit(decoded: keepsDecoded ? .holding(value) : nil) { _ in [name: json] }
    }

    /// Removes the values stored under `names`, as one change.
    package func removeValues(named names: some Sequence<String>) {
        write(Dictionary(names.map { ($0, nil) }, uniquingKeysWith: { $1 }))
    }

    /// Applies `writes` (`nil` removes) inside the current transaction, or as one commit.
    func write(_ writes: [String: JSONValue?]) {
        if let scope = TransactionScope.find(for: self),
            scope.record(writes, suppressed: Defaults.Propagation.isSuppressed)
        {
            return
        }
        commit { _ in writes }
    }

    /// Commits the changes `makeWrites` computes from the current tree, atomically, then reports
    /// them as one event and schedules a flush.
    ///
    /// Changes to `suppressedKeys` (written inside `withoutPropagation` during a transaction) are
    /// reported in an event of their own marked as suppressed; everything is suppressed when the
    /// commit itself runs inside `withoutPropagation`. `decoded`, for a write of a single key, is
    /// the written value to keep as the decoded one.
    func commit(
        suppressedKeys: Set<String> = [],
        decoded: CacheEntry? = nil,
        _ makeWrites: ([String: JSONValue]) -> [String: JSONValue?]
    ) {
        let suppressed = Defaults.Propagation.isSuppressed
        let outcome = state.withLock { state -> (changes: [String: Defaults.StoredChange], flush: Bool)? in
            var changes: [String: Defaults.StoredChange] = [:]
            for (name, new) in makeWrites(state.tree) {
                let old = state.tree[name]
                guard old != new else { continue }
                state.tree[name] = new
                let oldDecoded = state.cache[name]
                // `decoded` is only given for a write of one key.
                let newDecoded = decoded
                state.cache[name] = newDecoded
                state.changedSinceFlush.insert(name)
                changes[name] = Defaults.StoredChange(
                    old: old,
                    new: new,
                    oldDecoded: oldDecoded,
                    newDecoded: newDecoded
                )
            }
            guard !changes.isEmpty else { return nil }
            state.generation &+= 1
            switch backend {
            case .memory:
                state.persistedGeneration = state.generation
                return (changes, false)
            case .userDefaults(let storage):
                // NB: UserDefaults never calls back into us, so writing under our lock keeps
                // its order the same as ours.
                for (name, change) in changes { storage.set(change.new, forKey: name) }
                state.persistedGeneration = state.generation
                return (changes, false)
            case .file:
                let schedule = !state.flushScheduled
                state.flushScheduled = true
                return (changes, schedule)
            }
        }
        guard let outcome else { return }
        if outcome.flush { scheduleFlush(after: Self.coalescingDelay) }
        let sinks = Defaults.currentChangeSinks
        guard !sinks.isEmpty else { return }
        var propagated = outcome.changes
        var silenced: [String: Defaults.StoredChange] = [:]
        if suppressed {
            swap(&propagated, &silenced)
        } else {
            for name in suppressedKeys { silenced[name] = propagated.removeValue(forKey: name) }
        }
        for (changes, isSuppressed) in [(propagated, false), (silenced, true)] where !changes.isEmpty {
            let event = Defaults.SuiteChange(
                suite: self,
                changes: changes,
                origin: .local,
                isPropagationSuppressed: isSuppressed
            )
            for sink in sinks { sink.deliver(event) }
        }
    }

    // MARK: - Flushing

    private func scheduleFlush(after delay: DispatchTimeInterval) {
        flushQueue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, case .file(let storage) = self.backend else { return }
            if case .failure(let error) = self.flushNow(storage, fromTimer: true) {
                // NB: not on the flush queue: a handler that calls `synchronize()` or `exit()`
                // would wait for this very queue.
                let handler = self.errorHandler
                DispatchQueue.global().async { (handler ?? Defaults.errorHandler)(error) }
            }
        }
    }

    /// Writes the tree if it changed since the last write; the caller reports a failure.
    ///
    /// Runs on `flushQueue` only, and never calls user code.
    private func flushNow(_ storage: FileStorage, fromTimer: Bool = false) -> Result<Void, Defaults.StorageError> {
        let pending = state.withLock {
            state -> (tree: [String: JSONValue], changed: Set<String>, generation: UInt64)? in
            // NB: only the timer's own flush disarms it. A `synchronize()` leaves an armed timer
            // armed, so writes right after it do not arm a second one: at most one background
            // write per coalescing delay, however often `synchronize()` is called.
            if fromTimer { state.flushScheduled = false }
            guard state.isDirty, !state.writesBlocked else { return nil }
            let changed = state.changedSinceFlush
            state.changedSinceFlush = []
            return (state.tree, changed, state.generation)
        }
        guard let pending else {
            let blocked = state.withLock { $0.writesBlocked && $0.isDirty }
            guard blocked else { return .success(()) }
            return .failure(
                .unreadableFile(url: storage.url, reason: "the file could not be read, so it is not overwritten")
            )
        }
        do {
            try storage.write(pending.tree, changedKeys: pending.changed)
        } catch {
            // NB: retry with a growing delay, so a full disk is retried without a busy loop.
            let delay = state.withLock { state -> Double? in
                state.changedSinceFlush.formUnion(pending.changed)
                guard !state.flushScheduled else { return nil }
                state.flushScheduled = true
                state.retryDelay = min(max(state.retryDelay * 2, 0.5), 30)
                return state.retryDelay
            }
            if let delay { scheduleFlush(after: .milliseconds(Int(delay * 1000))) }
            return .failure(error)
        }
        state.withLock { state in
            state.persistedGeneration = max(state.persistedGeneration, pending.generation)
            state.retryDelay = 0
        }
        return .success(())
    }

    // MARK: - UserDefaults

    private func refresh(_ name: String, from storage: UserDefaultsStorage) {
        let current = storage.value(forKey: name)
        state.withLock { state in
            guard state.tree[name] != current else { return }
            state.tree[name] = current
            state.cache[name] = nil
            state.generation &+= 1
            state.persistedGeneration = state.generation
        }
    }
}
