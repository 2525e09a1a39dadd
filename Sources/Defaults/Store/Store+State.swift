import Dispatch
import Foundation
import Synchronization

extension Store {
    typealias HashedName = Defaults.Suite.HashedName
    typealias CacheEntry = Defaults.Suite.CacheEntry
    typealias KeyState = Defaults.Suite.KeyState
    typealias AnyBox = Defaults.Suite.AnyBox
    typealias InPlaceWriter = Defaults.Suite.InPlaceWriter
    typealias Box = Defaults.Suite.Box

    /// Everything a store keeps, behind its one lock: the values, what is kept beside each key
    /// (decoded value, pending mark, observers), flushing, the layers and open transactions.
    ///
    /// Every decision that changes it is a `mutating` method here that returns an outcome, taken
    /// under the store's lock by the store's own files.
    struct State {
        /// The stored values exactly as they sit in the backend, including keys no `Key` names
        /// (``Table/values``, which settles what was kept from them first).
        var values: [String: JSONValue] {
            mutating _read { yield table.values }
            _modify { yield &table.values }
        }
        /// The stored value of `name`: unlike ``values``, this leaves a deferred record of
        /// migrations unparsed unless it is the one asked for.
        mutating func storedValue(named name: String) -> JSONValue? {
            table.value(named: name)
        }
        /// Whether `name` holds a stored value; leaves a deferred record of migrations unparsed.
        @inline(__always)
        mutating func holdsValue(named name: String) -> Bool {
            table.holds(named: name)
        }

        /// How a store's writes go: set once, from its backend.
        struct WriteMode {
            /// Whether writes wait in memory for a commit to a backend (``Store/commitsLater``).
            var commitsLater = false
            /// The backend, when writes go to it at once (``Store/writeThrough``).
            var writeThrough: (any WriteThroughBackend)?
        }

        /// Creates an empty state holding `values`.
        init(values: [String: JSONValue] = [:]) {
            table = Table(values)
        }

        /// Holds `values`, with the record of migrations left unparsed when `record` is given.
        mutating func take(_ values: [String: JSONValue], deferredRecord record: DeferredJSON?) {
            table.take(values, deferredRecord: record)
        }

        /// The values and the key table: what is kept beside each key (its decoded value, its mark
        /// for the next flush, its observers).
        var table: Table
        /// The observers of every key of this state, as the observation module keeps them.
        var suiteObservers: (any Defaults.ObserverSlot)?
        /// How the store's writes go, whatever is written: set once, when the store is made.
        var mode = WriteMode()
        /// Bumped on every committed change, local or external.
        var generation: UInt64 = 0
        /// The backend's revision that memory holds (``Defaults/BackendContents/revision``).
        var backendRevision: UInt64?
        /// When what was written here is committed to the backend, and what waits for it.
        var flushing = Flushing()
        /// Transactions open on this suite, on any thread; reads consult the task-local scope only then.
        var openTransactions = 0
        /// What reads see beyond the user's values, and which writes are refused: system files,
        /// this run's overrides, secrets, migrations read through, and the file's read-only state.
        var layered = Layered()
        /// The ids the record of migrations lists, known current as of a ``generation``; `nil`
        /// until asked.
        var recordIndex: (generation: UInt64, index: RecordIndex)?

        /// Whether `name` was changed here since the last successful write.
        ///
        /// A flush writes such keys into the file as it is then, so keys another process wrote
        /// meanwhile are not lost; the file watcher leaves them alone, so an unflushed local change
        /// wins until its flush.
        func isChanged(_ name: String) -> Bool {
            table.isChanged(name)
        }

        /// Marks `name` as changed since the last flush.
        mutating func markChanged(_ name: String) {
            if !table.markChanged(name) { flushing.changedCount += 1 }
        }

        /// Marks each of `names` as changed since the last flush.
        mutating func markChanged(_ names: some Sequence<String>) {
            for name in names { markChanged(name) }
        }

        /// The keys changed since the last flush, which are no longer marked so.
        mutating func takeChanged() -> Set<String> {
            guard flushing.changedCount > 0 else { return [] }
            defer { flushing.changedCount = 0 }
            return table.takeChanged(count: flushing.changedCount)
        }

        /// The box kept in `entry` for a value decoded as the type `typeID` names: `.some(nil)` when
        /// the stored value does not decode as that type, `nil` when nothing is kept for it.
        static func decodedBox(
            _ entry: inout KeyState,
            as typeID: ObjectIdentifier
        ) -> AnyBox?? {
            guard let decoded = entry.decoded, decoded.type == typeID else { return nil }
            return .some(decoded.box)
        }

        /// Whether a write of `name` in place can go with ``layering``, not empty: only when it
        /// holds secrets and `name` is not one of them.
        ///
        /// Out of line, so a write with no layers pays only for the test of an empty set.
        @inline(never)
        private func isInPlaceAllowed(for name: HashedName) -> Bool {
            layered.layering == .secrets && !layered.secrets!.contains(name.text)
        }

        /// What ``writeInPlace(of:_:savingOldTo:observers:writer:encoder:)`` did.
        enum InPlaceOutcome {
            /// Nothing: the write must take the general path.
            case general
            /// The write is done; `changed` is false when the key held the value already.
            case done(changed: Bool, schedulesFlush: Bool)
        }

        /// Writes a lossless value with no references in place, the fast path of a one-key write:
        /// into the box the key keeps already, with no JSON made now (``values`` gets it when read,
        /// see ``values``).
        ///
        /// Only when nothing needs the write's JSON now: no transaction open, no system file,
        /// override, read-only refusal or whole-suite observer (checked first), no sink that gets
        /// every change (the caller checks), and no one else holds the key's box. A key with
        /// observers takes it only when they take values of its type as bytes
        /// (``Defaults/ObserverSlot/valueType``). The value the write replaces is copied to `old`,
        /// and `observers` set to the key's when it changed, for the caller to tell after the lock.
        // Inlined into the store's call: out of line, it retained the state's parts.
        @inline(__always)
        mutating func writeInPlace(
            of name: HashedName,
            _ value: UnsafeRawPointer,
            savingOldTo old: inout InPlaceWriter.ValueBytes,
            observers: inout (any Defaults.ObserverSlot)?,
            writer: InPlaceWriter,
            encoder: () -> ValueCoding.NativeEncoder
        ) -> InPlaceOutcome {
            // No transaction, system files, overrides, refusals or whole-suite observers; not a
            // secret key's name.
            guard openTransactions == 0, suiteObservers == nil, layered.layering.isEmpty || isInPlaceAllowed(for: name)
            else {
                return .general
            }
            // Every NaN is stored as "NaN": whether one is a change is the general path's to say.
            if writer.nan != .none && writer.nan.isNaN(value) { return .general }
            guard let index = table.keys.index(forKey: name) else { return .general }
            switch Self.assign(value, writer, into: &table.keys.values[index], savingOldTo: &old, observers: &observers)
            {
            case .notAssigned:
                return .general
            case .equal:
                return .done(changed: false, schedulesFlush: false)
            case .assigned(let wasStale):
                if !wasStale { table.markStale(name, encoder: encoder()) }
                generation &+= 1
                guard mode.commitsLater else { return .done(changed: true, schedulesFlush: false) }
                if !table.keys.values[index].markChanged() { flushing.changedCount += 1 }
                return .done(changed: true, schedulesFlush: flushing.machine.changed())
            }
        }

        /// What ``assign(_:_:into:savingOldTo:)`` did.
        private enum Assignment {
            /// The entry cannot take the value in place.
            case notAssigned
            /// The box held the same value, written in place before (so its JSON is the write's).
            case equal
            /// The box took the value; `wasStale` when its JSON was waiting already.
            case assigned(wasStale: Bool)
        }

        /// Stores the value into `entry`'s box, when the entry has a box of the value's type that
        /// nothing else holds, and no observers, or observers that take values of that type as
        /// bytes; the value replaced is copied to `old`, and `observers` set to the entry's.
        @inline(__always)
        private static func assign(
            _ value: UnsafeRawPointer,
            _ writer: InPlaceWriter,
            into entry: inout KeyState,
            savingOldTo old: inout InPlaceWriter.ValueBytes,
            observers: inout (any Defaults.ObserverSlot)?
        ) -> Assignment {
            guard entry.decoded?.type == writer.type,
                entry.decoded?.box != nil, isKnownUniquelyReferenced(&entry.decoded!.box!)
            else { return .notAssigned }
            if entry.observers != nil {
                guard writer.isObservable, entry.observers!.valueType == writer.type else { return .notAssigned }
            }
            let wasStale = entry.isJSONStale
            // Equal bits are equal JSON only for a value this path wrote: a value decoded from
            // the file may be spelled otherwise there ("1.0" for 1), which a write must replace,
            // so the general path compares JSON then.
            guard writer.replace(value, in: entry.decoded!.box!, savingOldTo: &old) else {
                return wasStale ? .equal : .notAssigned
            }
            entry.isJSONStale = true
            // Read here, where the entry is lent already: another access to it searched the
            // table's storage again.
            if entry.observers != nil { observers = entry.observers }
            return .assigned(wasStale: wasStale)
        }

        /// What ``applyWrite(_:named:decoded:marksChanged:)`` did with one key's write.
        enum WriteOutcome {
            /// The key held the value already.
            case unchanged
            /// The write is refused (a read-only file, a system file's lock); nothing changed.
            case refused(Defaults.Suite.WriteRefusal)
            /// Stored; the value and decoded value it replaced, and the key's observers, for the
            /// caller to tell (and release) after the lock.
            case changed(old: JSONValue?, oldDecoded: CacheEntry?, observers: (any Defaults.ObserverSlot)?)
        }

        /// Stores `new` (`nil` removes) under `name`: every decision a write of one key's JSON
        /// makes, for both write paths (the one-key path and the general commit), so they decide
        /// alike. A write of the value stored is no change, refused or not; a refused write changes
        /// nothing; a change is written through to a backend that stores as it goes, and recorded
        /// (``recordChange(of:decoded:marksChanged:)``).
        ///
        /// The caller bumps ``generation`` and tells ``flush``, once for all its keys.
        // Inlined into both paths: with its arguments known there, the one-key path keeps its
        // single search of the values and pays nothing for refusals it has ruled out.
        @inline(__always)
        mutating func applyWrite(
            _ new: JSONValue?,
            named name: HashedName,
            decoded: CacheEntry?,
            marksChanged: Bool
        ) -> WriteOutcome {
            let old: JSONValue?
            if !layered.layering.isDisjoint(with: [.refusals, .secrets]) {
                old = values[name.text]
                guard old != new else {
                    // The same JSON may be stored as another type (a base64 string other code
                    // set, now written as Data): stored again, as this key's type says.
                    mode.writeThrough?.set(new, forKey: name.text)
                    return .unchanged
                }
                if let refusal = layered.refusal(ofWriteTo: name.text, isRemoval: new == nil) {
                    return .refused(refusal)
                }
                values[name.text] = new
            } else {
                // Replaced before comparing, one search of the table: equal JSON is the same
                // bytes, so replacing a value with an equal one changes nothing.
                old =
                    if let new { values.updateValue(new, forKey: name.text) } else {
                        values.removeValue(forKey: name.text)
                    }
                guard old != new else {
                    mode.writeThrough?.set(new, forKey: name.text)
                    return .unchanged
                }
            }
            if let storage = mode.writeThrough {
                // UserDefaults never calls back into us, so writing under our lock keeps
                // its order the same as ours.
                storage.set(new, forKey: name.text)
            }
            let (oldDecoded, observers) = recordChange(of: name, decoded: decoded, marksChanged: marksChanged)
            return .changed(old: old, oldDecoded: oldDecoded, observers: observers)
        }

        /// Records one committed change of `name` in the key table (``Table/recordChange(of:decoded:marksChanged:)``)
        /// and counts a key newly marked changed.
        ///
        /// - Returns: The decoded value kept before, and the key's observers.
        @inline(__always)
        mutating func recordChange(
            of name: HashedName,
            decoded: CacheEntry?,
            marksChanged: Bool
        ) -> (oldDecoded: CacheEntry?, observers: (any Defaults.ObserverSlot)?) {
            let (old, observers, newlyMarked) = table.recordChange(
                of: name,
                decoded: decoded,
                marksChanged: marksChanged
            )
            if newlyMarked { flushing.changedCount += 1 }
            return (old, observers)
        }
    }
}
