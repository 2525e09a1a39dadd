import Dispatch
import Foundation

extension Defaults.Suite {
    // MARK: - Writing

    /// Stores `value` under `key`'s name (in this suite); an empty optional removes it.
    ///
    /// For types whose stored form reads back as exactly the same value (`key.isLosslessType`),
    /// the written value is kept as the decoded one: the next read and observers skip decoding.
    func setValue<Value: Defaults.Serializable>(_ value: Value, for key: Defaults.Key<Value>) {
        if !key.hasToldType.load(ordering: .relaxed) {
            key.hasToldType.store(true, ordering: .relaxed)
            store.learnReadType(key.name, as: Value.self)
        }
        if let writer = key.inPlaceWriter,
            withUnsafePointer(to: value, { writeInPlace(UnsafeRawPointer($0), of: key, writer: writer) })
        {
            return
        }
        let name = key.name
        // The key's own encoder skips the dynamic casts of the general path, the largest part
        // of a write's cost once the rest was made cheap.
        var json: JSONValue?
        if let encoder = key.nativeEncoder {
            json = withUnsafePointer(to: value) { encoder(UnsafeRawPointer($0)) }
        } else {
            json = ValueCoding.encode(value)
        }
        // A value the file could not be read back with would make the whole file corrupt.
        if json == nil && !ValueCoding.isEmptyOptional(value) {
            report(.serializationFailed(key: name, valueType: String(reflecting: Value.self)))
            return
        }
        if json?.isNested(deeperThan: JSONValue.maximumStoredDepth) == true {
            // The rule named, as `setStoredValues(_:)` names it: the type alone told nothing.
            let reason =
                "\(String(reflecting: Value.self)), nested more than \(JSONValue.maximumStoredDepth) levels deep"
            report(.serializationFailed(key: name, valueType: reason))
            return
        }
        // As in sindresorhus/Defaults: `nil` assigned to an `AnySerializable` key removes the value,
        // so the key's default comes back. (Inside a container, nil stays a JSON null.)
        if case .null? = json, value is Defaults.AnySerializable { json = nil }
        // Before the write: the UserDefaults stores the value as its type (and any
        // AnySerializable inside) says, also when a transaction commits it later.
        if let storage = store.writeThrough, let json { storage.willWrite(value, as: json, forKey: name) }
        // NB: the box is made from the key's metatype for `Box<Value>`: naming the type here would
        // look its metadata up in the runtime on every write.
        let decoded =
            key.isLosslessType ? CacheEntry(type: ObjectIdentifier(Value.self), box: key.boxType.init(value)) : nil
        commitValue(json, named: key.hashedName, decoded: decoded)
    }

    /// The fast path of a write of a lossless value with no references (see ``InPlaceWriter``):
    /// into the box the key keeps, with no JSON made and no event, when nothing needs them now.
    ///
    /// - Returns: Whether the write is done; `false` sends it down the general path.
    private func writeInPlace<Value>(
        _ value: UnsafeRawPointer,
        of key: Defaults.Key<Value>,
        writer: InPlaceWriter
    ) -> Bool {
        // A sink that gets every change gets the change's JSON too.
        if Defaults.hasEveryChangeSinks { return false }
        let store = store
        if store.writeThrough != nil { return false }
        // The key's encoder is fetched only when the key's JSON starts to wait, not on every write.
        // Room for the value replaced, for observers that take values as bytes: a write of an
        // observed key is then made in one pass, as any other.
        var old: InPlaceWriter.ValueBytes = (0, 0)
        var observers: (any Defaults.ObserverSlot)?
        let outcome = store.writeInPlace(
            of: key.hashedName,
            value,
            savingOldTo: &old,
            observers: &observers,
            writer: writer
        ) { key.nativeEncoder! }
        guard case .done(_, let schedulesFlush) = outcome else { return false }
        if schedulesFlush { store.armTimer() }
        if let observers {
            withUnsafeBytes(of: old) { old in
                tellValue(to: observers, named: key.name, old: old.baseAddress!, new: value)
            }
        }
        return true
    }

    /// Stores `new` (`nil` removes) under `name` as one change, and reports it: the general path
    /// (``commit(suppressedKeys:decoded:_:)``) for one key, with no dictionary built and each of
    /// the state's tables searched once.
    ///
    /// The change goes to the key's observer slot and the state's whole-suite one, when set, and
    /// as an event to the sinks that get every change, when there are any: a write of a key nobody
    /// observes makes no event.
    @inline(never)
    private func commitValue(_ new: JSONValue?, named hashedName: HashedName, decoded: CacheEntry?) {
        let name = hashedName.text
        let store = store
        // NB: the old values come out as separate values and the event is made after the lock, and
        // only for sinks: an event inside an optional or an enum's payload is copied and destroyed
        // through runtime value witnesses, which costs more than everything else here.
        let (outcome, old, oldDecoded, observers, suiteObservers) = store.commitOne(
            new,
            named: hashedName,
            decoded: decoded
        )
        switch outcome {
        case .unchanged:
            return
        case .general:
            let suppressed = Defaults.Propagation.isSuppressed
            if let scope = TransactionScope.find(for: self), scope.record([name: new], suppressed: suppressed) {
                return
            }
            commit(decoded: decoded) { _ in [name: new] }
        case .changed(let isReported, let schedulesFlush):
            if schedulesFlush { store.armTimer() }
            guard isReported else { return }
            tellChange(
                named: name,
                old: old,
                new: new,
                oldDecoded: oldDecoded,
                newDecoded: decoded,
                observers: observers,
                suiteObservers: suiteObservers
            )
        }
    }

    /// Removes the values stored under `names`, as one change.
    func removeValues(named names: some Sequence<String>) {
        // A key created just now reads its migration through: moved first, so the removal
        // (a reset) removes the value it read, not one the move would bring back.
        store.settlePendingMigrations()
        let names = Array(names)
        // Values other code set in a UserDefaults are not in the stored values until read; without
        // this, removing them would look like no change and leave them there.
        refreshWrittenThrough(names: names)
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

    /// Commits the changes `makeWrites` computes from the current stored values, atomically, then reports
    /// them as one event and schedules a flush.
    ///
    /// Changes to `suppressedKeys` (written inside `withoutPropagation` during a transaction) are
    /// reported in an event of their own marked as suppressed; everything is suppressed when the
    /// commit itself runs inside `withoutPropagation`. `decoded`, for a write of a single key, is
    /// the written value to keep as the decoded one.
    func commit(
        suppressedKeys: Set<String> = [],
        decoded: CacheEntry? = nil,
        removesEverything: Bool = false,
        _ makeWrites: ([String: JSONValue]) -> [String: JSONValue?]
    ) {
        committing(suppressedKeys: suppressedKeys, decoded: decoded, removesEverything: removesEverything, makeWrites)?
            .deliver()
        store.refreshMigrationLayerIfAny()
    }

    /// ``commit(suppressedKeys:decoded:_:)`` without the delivery, for a caller that must deliver
    /// later (after releasing the file's lock).
    ///
    /// With `isWritten`, the values are already in the file (an exclusive transaction wrote them):
    /// they are not marked for the next flush. With `removesEverything` (a `removeAll()`), the next flush
    /// removes every key the file holds, not only those memory knows.
    func committing(
        suppressedKeys: Set<String> = [],
        decoded: CacheEntry? = nil,
        isWritten: Bool = false,
        removesEverything: Bool = false,
        _ makeWrites: ([String: JSONValue]) -> [String: JSONValue?]
    ) -> Delivery? {
        let suppressed = Defaults.Propagation.isSuppressed
        let store = store
        let commitsLater = store.commitsLater && !isWritten
        // Every change made, reported or not, leaves the lock in `all`: the old decoded values
        // it holds may be instances of classes of the user's, whose `deinit` must not run under it.
        var all: [String: Defaults.StoredChange] = [:]
        var refused: [(name: String, refusal: WriteRefusal)] = []
        let outcome = store.commit(
            makeWrites,
            decoded: decoded,
            commitsLater: commitsLater,
            removesEverything: removesEverything,
            all: &all,
            refused: &refused
        )
        reportRefusals(refused)
        all.removeAll()
        guard let outcome else { return nil }
        if outcome.flush { store.armTimer() }
        var propagated = outcome.changes
        var silenced: [String: Defaults.StoredChange] = [:]
        // A migration marks its record (the empty name) suppressed: no key's change, in no event.
        if suppressed {
            swap(&propagated, &silenced)
            if suppressedKeys.contains(Self.migrationRecordName) { silenced[Self.migrationRecordName] = nil }
        } else {
            for name in suppressedKeys {
                let change = propagated.removeValue(forKey: name)
                if name != Self.migrationRecordName { silenced[name] = change }
            }
        }
        // Nor is its removal or rewriting by `removeAll()`, or by an exclusive transaction.
        if removesEverything || isWritten {
            propagated[Self.migrationRecordName] = nil
            silenced[Self.migrationRecordName] = nil
        }
        // Two optionals, not an array: a write is one event, and an array would be an
        // allocation on every write.
        return Delivery(
            propagated: propagated.isEmpty
                ? nil
                : Defaults.SuiteChange(
                    suite: self,
                    changes: propagated,
                    origin: .local,
                    isPropagationSuppressed: false,
                    suiteObservers: outcome.suiteObservers
                ),
            silenced: silenced.isEmpty
                ? nil
                : Defaults.SuiteChange(
                    suite: self,
                    changes: silenced,
                    origin: .local,
                    isPropagationSuppressed: true,
                    suiteObservers: outcome.suiteObservers
                )
        )
    }

    /// Reports writes refused under the lock: one report for a read-only file, one per locked key.
    ///
    /// The first refusal is also kept for the next ``synchronize()``, which throws it: a caller
    /// that synchronizes to know its writes are stored learns that one was not.
    func reportRefusals(_ refused: [(name: String, refusal: WriteRefusal)]) {
        guard !refused.isEmpty else { return }
        var readOnlyReported = false
        var first: Defaults.StorageError?
        for (name, refusal) in refused {
            switch refusal {
            case .readOnly(let reason):
                guard !readOnlyReported else { continue }
                readOnlyReported = true
                let names = refused.map { "\"\($0.name)\"" }.sorted().joined(separator: ", ")
                // A file says which; any other backend that refuses writes, by its name.
                let error: Defaults.StorageError =
                    if let fileURL {
                        .readOnlyFile(url: fileURL, reason: "\(reason) (refused: \(names))")
                    } else {
                        .writeRefused(backend: store.backendName, reason: "\(reason) (refused: \(names))")
                    }
                first = first ?? error
                report(error)
            case .locked(let url):
                let error = Defaults.StorageError.lockedKey(key: name, lockedBy: url)
                first = first ?? error
                report(error)
            case .secret(let file):
                let error = Defaults.StorageError.secretKey(key: name, file: file)
                first = first ?? error
                report(error)
            }
        }
        store.rememberRefusal(first)
    }
}
