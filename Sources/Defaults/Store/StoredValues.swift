extension Store {
    /// The part of a store's state that holds its values as they sit in the backend, with the two
    /// things it keeps from them until something asks: the JSON of keys written in place, and the
    /// record of migrations.
    ///
    /// The JSON of a key written in place lives in the key's decoded value in the key table, so
    /// settling it needs that table: the state hands it in.
    struct StoredValues {
        /// The values, without the JSON of the keys written in place since they were last settled,
        /// and without a deferred record: read them through ``Store/State/values``, which settles first.
        var unsettled: [String: JSONValue] {
            _read { yield held }
            _modify {
                sieve = nil
                yield &held
            }
        }
        /// The storage of ``unsettled``.
        private var held: [String: JSONValue]
        /// Which names ``unsettled`` may hold, made when ``holds(named:keys:)`` first asks after
        /// they changed: `nil` until then.
        private var sieve: NameSieve?
        /// The record of migrations as the backend held it when memory took it in, left unparsed
        /// until something reads the values whole: a program whose migrations all ran opens without it.
        private var deferredRecord: DeferredJSON?
        /// The keys whose decoded value was written in place
        /// (``Store/State/writeInPlace(of:_:savingOldTo:observers:writer:encoder:)``) and whose
        /// JSON in ``unsettled`` is older: the write's encoding waits until something reads
        /// the values, as the next flush does, so a burst of writes encodes and stores each key once.
        private var staleJSON: [(name: HashedName, encoder: ValueCoding.NativeEncoder)] = []

        /// Holds `values`, with nothing deferred.
        init(_ values: [String: JSONValue] = [:]) {
            held = values
        }

        /// Whether ``unsettled`` is the whole of the values.
        var isSettled: Bool { staleJSON.isEmpty && deferredRecord == nil }

        /// Holds `values`, with the record of migrations left unparsed when `record` is given.
        mutating func take(_ values: [String: JSONValue], deferredRecord record: DeferredJSON?) {
            unsettled = values
            deferredRecord = record
        }

        /// The stored value of `name`; leaves a deferred record unparsed unless it is the one asked for.
        mutating func value(named name: String, keys: inout [HashedName: KeyState]) -> JSONValue? {
            if !staleJSON.isEmpty || name.isEmpty && deferredRecord != nil { settle(keys: &keys) }
            return held[name]
        }

        /// Whether `name` holds a stored value; leaves a deferred record unparsed.
        ///
        /// Asked of each former name of every key that declares a migration, when the key is
        /// created: most hold nothing, and the sieve says so without hashing them.
        @inline(__always)
        mutating func holds(named name: String, keys: inout [HashedName: KeyState]) -> Bool {
            if name.isEmpty && deferredRecord != nil { return true }
            if !staleJSON.isEmpty { settleJSON(keys: &keys) }
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
        mutating func settle(keys: inout [HashedName: KeyState]) {
            if let record = deferredRecord.take() { unsettled[Defaults.Suite.migrationRecordName] = record.value }
            settleJSON(keys: &keys)
        }

        /// Stores the JSON of every key written in place since the last time.
        mutating func settleJSON(keys: inout [HashedName: KeyState]) {
            guard !staleJSON.isEmpty else { return }
            for (name, encoder) in staleJSON {
                guard let index = keys.index(forKey: name), keys.values[index].isJSONStale else { continue }
                keys.values[index].isJSONStale = false
                guard let decoded = keys.values[index].decoded, let box = decoded.box else { continue }
                // A lossless value with no references always encodes (see InPlaceWriter).
                unsettled[name.text] = type(of: box).json(of: box, encoder: encoder)
            }
            staleJSON.removeAll(keepingCapacity: true)
        }
    }
}
