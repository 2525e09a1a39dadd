extension Store {
    /// The part of a store's state that holds its values as they sit in the backend, and the key
    /// table: what is kept beside each key (its decoded value, its mark for the next flush, its
    /// observers).
    ///
    /// One part for the two because they settle each other: the JSON of a key written in place
    /// lives in the key's decoded value until something reads the values, and the record of
    /// migrations stays unparsed until then (``values``).
    struct Table {
        /// The stored values exactly as they sit in the backend, including keys no `Key` names.
        ///
        /// Reaching it first settles the JSON of the keys written in place, and makes the record
        /// of migrations if it was left unparsed.
        var values: [String: JSONValue] {
            // Yielded, not returned: a getter would retain and release the dictionary on every
            // access, and a file of thousands of keys is applied with one access per key.
            mutating _read {
                if !isSettled { settle() }
                yield held
            }
            _modify {
                if !isSettled { settle() }
                sieve = nil
                yield &held
            }
        }
        /// The storage of ``values``: without the JSON of the keys written in place since they
        /// were last settled, and without a deferred record.
        private var held: [String: JSONValue]
        /// What is kept beside a key's stored value: its decoded value, whether it waits for the
        /// next flush, and its observers.
        ///
        /// One table for the three, so a write searches it once. A key may have an entry and no
        /// stored value (it is observed), or a stored value and no entry.
        var keys: [HashedName: KeyState] = [:]
        /// Which names ``values`` may hold, made when ``holds(named:)`` first asks after they
        /// changed: `nil` until then.
        private var sieve: NameSieve?
        /// The record of migrations as the backend held it when memory took it in, left unparsed
        /// until something reads the values whole: a program whose migrations all ran opens without it.
        private var deferredRecord: DeferredJSON?
        /// The keys whose decoded value was written in place
        /// (``Store/State/writeInPlace(of:_:savingOldTo:observers:writer:encoder:)``) and whose
        /// JSON in ``held`` is older: the write's encoding waits until something reads the values,
        /// as the next flush does, so a burst of writes encodes and stores each key once.
        private var staleJSON: [(name: HashedName, encoder: ValueCoding.NativeEncoder)] = []

        /// Holds `values`, with nothing deferred and nothing kept beside them.
        init(_ values: [String: JSONValue] = [:]) {
            held = values
        }

        /// Whether ``held`` is the whole of the values.
        private var isSettled: Bool { staleJSON.isEmpty && deferredRecord == nil }

        /// Holds `values`, with the record of migrations left unparsed when `record` is given.
        mutating func take(_ values: [String: JSONValue], deferredRecord record: DeferredJSON?) {
            held = values
            sieve = nil
            deferredRecord = record
        }

        /// The stored value of `name`: unlike ``values``, this leaves a deferred record unparsed
        /// unless it is the one asked for.
        mutating func value(named name: String) -> JSONValue? {
            if !staleJSON.isEmpty || name.isEmpty && deferredRecord != nil { settle() }
            return held[name]
        }

        /// Whether `name` holds a stored value; leaves a deferred record unparsed.
        ///
        /// Asked of each former name of every key that declares a migration, when the key is
        /// created: most hold nothing, and the sieve says so without hashing them.
        @inline(__always)
        mutating func holds(named name: String) -> Bool {
            if name.isEmpty && deferredRecord != nil { return true }
            if !staleJSON.isEmpty { settleJSON() }
            // The record is asked for with each key: it is there, or the key's own value.
            if name.isEmpty { return held.index(forKey: name) != nil }
            if sieve == nil { sieve = NameSieve(held.keys) }
            guard sieve!.mayHold(name) else { return false }
            return held.index(forKey: name) != nil
        }

        /// Notes that `name` was written in place, so its JSON is made with `encoder` when asked.
        mutating func markStale(_ name: HashedName, encoder: @escaping ValueCoding.NativeEncoder) {
            staleJSON.append((name, encoder))
        }

        /// Makes the deferred record, and settles the JSON of the keys written in place.
        private mutating func settle() {
            if let record = deferredRecord.take() {
                held[Defaults.Suite.migrationRecordName] = record.value
                sieve = nil
            }
            settleJSON()
        }

        /// Stores the JSON of every key written in place since the last time.
        mutating func settleJSON() {
            guard !staleJSON.isEmpty else { return }
            for (name, encoder) in staleJSON {
                guard let index = keys.index(forKey: name), keys.values[index].isJSONStale else { continue }
                keys.values[index].isJSONStale = false
                guard let decoded = keys.values[index].decoded, let box = decoded.box else { continue }
                // A lossless value with no references always encodes (see InPlaceWriter).
                held[name.text] = type(of: box).json(of: box, encoder: encoder)
                sieve = nil
            }
            staleJSON.removeAll(keepingCapacity: true)
        }

        // MARK: The key table

        /// Whether `name` was changed here since the last successful write.
        func isChanged(_ name: String) -> Bool {
            keys[HashedName(name)]?.isChanged ?? false
        }

        /// Marks `name` as changed since the last flush; returns whether it was marked already.
        mutating func markChanged(_ name: String) -> Bool {
            keys[HashedName(name), default: KeyState()].markChanged()
        }

        /// The keys marked changed (`count` of them), which are no longer marked so.
        mutating func takeChanged(count: Int) -> Set<String> {
            var changed = Set<String>(minimumCapacity: count)
            var emptied = false
            // By index, so clearing a mark searches nothing.
            var index = keys.startIndex
            while index != keys.endIndex {
                if keys.values[index].isChanged {
                    keys.values[index].isChanged = false
                    changed.insert(keys.keys[index].text)
                    emptied = emptied || keys.values[index].isEmpty
                }
                keys.formIndex(after: &index)
            }
            // Entries held only for the mark go, so keys written once and removed leave nothing.
            if emptied { keys = keys.filter { !$0.value.isEmpty } }
            return changed
        }

        /// Forgets the decoded value kept for `name`, if any.
        ///
        /// - Returns: The value forgotten, for the caller to release after the lock: a decoded value
        ///   may be an instance of a class of the user's, whose `deinit` is user code.
        mutating func forgetDecoded(_ name: String) -> CacheEntry? {
            settleJSON()
            guard let index = keys.index(forKey: HashedName(name)) else { return nil }
            return forgetDecoded(at: index).old
        }

        /// Forgets the decoded value of the entry at `index`; returns it, and the entry's observers.
        private mutating func forgetDecoded(
            at index: Dictionary<HashedName, KeyState>.Index
        ) -> (old: CacheEntry?, observers: (any Defaults.ObserverSlot)?) {
            // Settled by the callers (recordChange, forgetDecoded(_:)): settling here would
            // move the entry `index` points at.
            var old: CacheEntry?
            swap(&old, &keys.values[index].decoded)
            let observers = KeyState.observers(of: &keys.values[index])
            // An entry's other parts stay; an entry left with nothing goes.
            if KeyState.isEmpty(&keys.values[index]) { keys.remove(at: index) }
            return (old, observers)
        }

        /// Keeps `decoded` as the decoded value of `name`.
        ///
        /// - Returns: The value kept before, for the caller to release after the lock.
        mutating func keepDecoded(_ decoded: CacheEntry, for name: HashedName) -> CacheEntry? {
            settleJSON()
            var old: CacheEntry? = decoded
            swap(&old, &keys[name, default: KeyState()].decoded)
            return old
        }

        /// Records one committed change of `name`, with one search of ``keys``: keeps `decoded` (or
        /// forgets the old one), marks the key changed when `marksChanged`.
        ///
        /// - Returns: The decoded value kept before, the key's observers, and whether the key is
        ///   newly marked changed.
        mutating func recordChange(
            of name: HashedName,
            decoded: CacheEntry?,
            marksChanged: Bool
        ) -> (oldDecoded: CacheEntry?, observers: (any Defaults.ObserverSlot)?, newlyMarked: Bool) {
            settleJSON()
            // A removal of an unobserved, unchanged key with nothing kept adds no entry.
            if decoded == nil && !marksChanged {
                guard let index = keys.index(forKey: name) else { return (nil, nil, false) }
                let (old, observers) = forgetDecoded(at: index)
                return (old, observers, false)
            }
            let (old, observers, wasChanged) = keys[name, default: KeyState()]
                .record(decoded, marksChanged: marksChanged)
            return (old, observers, marksChanged && !wasChanged)
        }
    }
}
