import Dispatch
import Foundation
import Synchronization

extension Defaults {
    /// A store of values: a JSON file, memory only, or a Foundation `UserDefaults`.
    ///
    /// Reads are dictionary lookups: decoded values are kept, so reading a `Codable` key does not
    /// decode JSON again. Writes land in memory at once; a file-backed suite writes its file shortly
    /// after, coalescing bursts into a handful of atomic replacements, and everything is on disk
    /// after ``synchronize()`` or a normal process exit. Any number of threads may read and write at
    /// once.
    ///
    /// ```swift
    /// let suite = try Defaults.Suite(name: "com.example.tool")
    /// suite[.quality] = 0.5
    /// try suite.synchronize()
    /// ```
    ///
    /// A file is shared: several processes may use it at once, and a change made by another process
    /// or by editing the file reaches this one's values and observers within milliseconds (see the
    /// article "Sharing settings between processes"). Inside one process, every suite opened on the
    /// same path (as given: a suite follows its path, and the links on it may be re-pointed) with the
    /// same system files shares one state: a write through one is read at once through the others,
    /// and such suites are equal. Other suites are equal only to themselves; two of them on one file
    /// see each other's writes once written, as two processes do.
    public final class Suite: Sendable, Hashable, CustomStringConvertible {
        /// The values and the machinery behind them; shared by every suite on the same file.
        let store: Store
        let errorHandler: (@Sendable (StorageError) -> Void)?
        /// The file as this suite was given it; the store may know it by another path (symlinks).
        private let location: URL?

        init(store: Store, location: URL?, errorHandler: (@Sendable (StorageError) -> Void)?) {
            self.store = store
            self.location = location
            self.errorHandler = errorHandler
            store.attach(self)
        }

        /// Opens the suite on the file at `fileURL` over `systemFiles`, sharing the state of any
        /// suite already open on them.
        convenience init(
            opening fileURL: URL,
            systemFiles: [URL] = [],
            errorHandler: (@Sendable (StorageError) -> Void)?,
            reportsLoadProblemsLater: Bool = false
        ) {
            let (store, problems) = FileStores.store(for: fileURL, systemFiles: systemFiles)
            // NB: the path as the store knows it, without `.` and `..`, when this suite gave the same one.
            let location =
                if case .file(let storage) = store.backend, storage.givenPath == ResolvedPath.normalize(fileURL.path) {
                    storage.url
                } else {
                    fileURL
                }
            self.init(store: store, location: location, errorHandler: errorHandler)
            guard !problems.isEmpty else { return }
            // NB: the standard suite is built inside Swift's one-time initialisation of a static,
            // which holds a lock: a handler that read `.standard` would wait forever.
            if reportsLoadProblemsLater {
                let handler = errorHandler
                DispatchQueue.global()
                    .async {
                        for problem in problems { (handler ?? Defaults.errorHandler)(problem) }
                    }
            } else {
                for problem in problems { report(problem) }
            }
        }

        deinit {
            guard store.detach(ObjectIdentifier(self)), store.isFlushed else { return }
            // The last suite on the file or backend: write what is pending now, and report to this suite.
            if case .failure(let error) = store.flushNow() { report(error) }
        }

        /// Creates a suite stored in the file at `fileURL`, reading it now if it exists.
        ///
        /// A corrupt file is moved aside to `<file>.corrupt-<timestamp>` and reported; the suite
        /// then starts from defaults. The file and its directory are created on the first write.
        /// A file this process may not write (a mounted ConfigMap, another user's file) is read,
        /// and writes to it are refused and reported (``Defaults/StorageError/readOnlyFile(url:reason:)``).
        /// The path is followed live: when a link on the way is re-pointed, the suite reads the
        /// file it leads to now, as one outside change.
        ///
        /// - Parameters:
        ///   - fileURL: The JSON file to use.
        ///   - errorHandler: Where to report problems; `nil` uses ``Defaults/errorHandler``.
        public convenience init(fileURL: URL, errorHandler: (@Sendable (StorageError) -> Void)? = nil) {
            self.init(opening: fileURL, errorHandler: errorHandler)
        }

        /// Creates a suite stored in the file at `fileURL`, with the files `systemFiles` beneath
        /// it: a key the file lacks reads the first system file's value that sets it, before the
        /// key's default, and a system file can lock keys.
        ///
        /// Writes go to `fileURL` only; resetting a key brings back its system value. The system
        /// files are read, watched and followed through links like the suite's own file, and never
        /// written. See the article "Where settings come from" for the layers, their order, and how
        /// a system file locks a key.
        ///
        /// ```swift
        /// let suite = Defaults.Suite(
        ///     fileURL: URL(fileURLWithPath: "/var/lib/tool/settings.json"),
        ///     systemFiles: [URL(fileURLWithPath: "/etc/tool/settings.json")]
        /// )
        /// ```
        ///
        /// Every suite opened on the same file with the same system files shares one state; a suite
        /// on the same file with other system files (or none) has a state of its own, and sees
        /// this one's writes as changes made outside.
        ///
        /// - Parameters:
        ///   - fileURL: The JSON file to read and write.
        ///   - systemFiles: Files to read beneath it, the first listed winning.
        ///   - errorHandler: Where to report problems; `nil` uses ``Defaults/errorHandler``.
        public convenience init(
            fileURL: URL,
            systemFiles: [URL],
            errorHandler: (@Sendable (StorageError) -> Void)? = nil
        ) {
            self.init(opening: fileURL, systemFiles: systemFiles, errorHandler: errorHandler)
        }

        /// Creates a suite named `name` in the XDG configuration directory:
        /// `$XDG_CONFIG_HOME/<name>/settings.json`, or `~/.config/<name>/settings.json` when that
        /// variable is unset or not an absolute path.
        ///
        /// Beneath it lie the system files `<dir>/<name>/settings.json` of each directory `<dir>`
        /// of `$XDG_CONFIG_DIRS` (`/etc/xdg` when it is unset or empty), the first listed winning:
        /// an administrator sets a default for every user there, or locks a setting. See
        /// ``init(fileURL:systemFiles:errorHandler:)``.
        ///
        /// - Parameters:
        ///   - name: One path component: not empty, not `.` or `..`, no `/` and no control characters.
        ///   - errorHandler: Where to report problems; `nil` uses ``Defaults/errorHandler``.
        /// - Throws: ``Defaults/SuiteNameError`` when the name breaks one of those rules.
        public convenience init(
            name: String,
            errorHandler: (@Sendable (StorageError) -> Void)? = nil
        ) throws(SuiteNameError) {
            try Self.validate(name: name)
            let environment = ProcessInfo.processInfo.environment
            let directory = Self.configurationDirectory(environment: environment)
            let file = Self.fileURL(forSuiteNamed: name, in: directory)
            self.init(
                opening: file,
                systemFiles: Self.systemFileURLs(forSuiteNamed: name, environment: environment, excluding: file),
                errorHandler: errorHandler
            )
        }

        /// Creates a suite whose values live in `backend`: a store of your own (see ``Backend`` and
        /// the article "Writing a backend").
        ///
        /// Reads come from memory, as in every suite. The first suite over the backend object loads
        /// it (a failed load is reported, and the suite starts empty) and asks it to report changes
        /// made elsewhere; every later suite over the same object shares that state, and such suites
        /// are equal. Writes are committed to the backend shortly after, coalesced, and at
        /// ``synchronize()`` and a normal exit.
        ///
        /// ```swift
        /// let suite = Defaults.Suite(backend: SharedDictionaryBackend(shared))
        /// ```
        ///
        /// - Parameters:
        ///   - backend: Where the values live.
        ///   - errorHandler: Where to report problems; `nil` uses ``Defaults/errorHandler``.
        public convenience init(backend: some Backend, errorHandler: (@Sendable (StorageError) -> Void)? = nil) {
            let (store, problem) = BackendStores.store(for: backend)
            self.init(store: store, location: nil, errorHandler: errorHandler)
            if let problem { report(problem) }
        }

        /// Creates a suite that lives in memory only, for tests and previews.
        public static func inMemory() -> Suite {
            Suite(store: Store(backend: .memory), location: nil, errorHandler: nil)
        }

        /// The file this suite reads and writes, if it is file-backed.
        public var fileURL: URL? { location }

        /// The system files beneath ``fileURL``, first listed first; empty when there are none.
        public var systemFileURLs: [URL] { store.layerFiles.map(\.url) }

        /// A short description naming the suite's storage.
        public var description: String {
            switch store.backend {
            case .memory: return "Defaults.Suite(inMemory)"
            case .file: return "Defaults.Suite(file: \(location?.path ?? ""))"
            case .userDefaults: return "Defaults.Suite(userDefaults)"
            case .custom(let custom): return "Defaults.Suite(backend: \(custom.backend.name))"
            }
        }

        /// Suites are equal when they share one state: the same instance, or suites on the same file.
        public static func == (lhs: Suite, rhs: Suite) -> Bool { lhs.store === rhs.store }

        /// Hashes the identity of the state the suite shares.
        public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(store)) }

        /// The identity of the state this suite shares with every suite on the same file; observers
        /// and transactions are keyed by it.
        package var stateIdentifier: ObjectIdentifier { ObjectIdentifier(store) }

        func report(_ error: StorageError) {
            (errorHandler ?? Defaults.errorHandler)(error)
        }

        /// How long a file-backed suite waits after a change before writing, so bursts coalesce.
        package static var coalescingDelay: Duration { Store.coalescingDelay }

        /// The number of times this suite has replaced its file; for tests of coalescing.
        package var fileReplacementCount: Int {
            guard case .file(let storage) = store.backend else { return 0 }
            return storage.replacementCount
        }
    }
}

extension Defaults.Suite {
    /// Everything a suite keeps, behind its one lock.
    struct State {
        /// The stored values exactly as they sit in the file, including keys no `Key` names.
        ///
        /// Reaching it first settles the JSON of the keys written in place (see ``staleJSON``).
        var tree: [String: JSONValue] {
            // NB: yielded, not returned: a getter would retain and release the dictionary on
            // every access, and a file of thousands of keys is applied with one access per key.
            mutating _read {
                if !staleJSON.isEmpty { settleJSON() }
                yield storedTree
            }
            _modify {
                if !staleJSON.isEmpty { settleJSON() }
                yield &storedTree
            }
        }
        /// ``tree`` as it is, without the JSON of the keys written in place since it was last settled.
        private var storedTree: [String: JSONValue] = [:]
        /// The keys whose decoded value was written in place (``writeInPlace(of:_:writer:encoder:isFile:)``)
        /// and whose JSON in ``tree`` is older: the write's encoding waits until something reads
        /// the tree, as the next flush does, so a burst of writes encodes and stores each key once.
        private var staleJSON: [(name: HashedName, encoder: ValueCoding.NativeEncoder)] = []

        /// Creates an empty state holding `tree`.
        init(tree: [String: JSONValue] = [:]) {
            self.storedTree = tree
        }

        /// Stores the JSON of every key written in place since the last time.
        private mutating func settleJSON() {
            for (name, encoder) in staleJSON {
                guard let index = keys.index(forKey: name), keys.values[index].isJSONStale else { continue }
                keys.values[index].isJSONStale = false
                guard let decoded = keys.values[index].decoded, let box = decoded.box else { continue }
                // NB: a lossless value with no references always encodes (see InPlaceWriter).
                storedTree[name.text] = type(of: box).json(of: box, encoder: encoder)
            }
            staleJSON.removeAll(keepingCapacity: true)
        }
        /// What is kept beside a key's stored value: its decoded value, whether it waits for the
        /// next flush, and its observers.
        ///
        /// One table for the three, so a write searches it once. A key may have an entry and no
        /// stored value (it is observed), or a stored value and no entry.
        var keys: [HashedName: KeyState] = [:]
        /// How many entries of ``keys`` are marked changed since the last flush.
        var changedCount = 0
        /// The observers of every key of this state, as the observation module keeps them.
        var suiteObservers: (any Defaults.ObserverSlot)?
        /// Bumped on every committed change, local or external.
        var generation: UInt64 = 0
        /// Set while a flush has taken the changed keys and not finished.
        var flushInFlight = false
        /// A custom backend's revision that memory holds (``Defaults/BackendContents/revision``).
        var backendRevision: UInt64?
        var flushScheduled = false
        var retryDelay = 0.0
        /// Set when the file exists but could not be read: it must not be overwritten.
        var writesBlocked = false
        /// The file as this process last read or wrote it; `nil` when there was no file.
        ///
        /// A watcher event that finds the same bytes (this process's own write) is no change, and
        /// a flush that finds them needs no parse.
        var file: FileStorage.Snapshot?
        /// Transactions open on this suite, on any thread; reads consult the task-local scope only then.
        var openTransactions = 0
        /// Values for this run from launch arguments or the environment; `nil` when none were asked for.
        var overrides: Overrides?
        /// Whether ``overrides`` is set: a stored flag, which the read path tests in fewer
        /// instructions than the optional (set the two together).
        var hasOverrides = false
        /// The system files beneath the user's file, when the suite was opened with some.
        var layers: SystemLayers?
        /// Whether some system file sets or locks a key, so reads and changes must look beneath
        /// the user's values: a stored flag, as ``hasOverrides`` is (see ``updateLayerFlags()``).
        var hasLayers = false
        /// Why this process may not write the suite's file, when it may not.
        var readOnlyReason: String?
        /// Whether some writes are refused: the file is read-only, or a system file locks keys.
        var guardsWrites = false
        /// Whether a write of one key takes the general path, which knows layers and refusals.
        var writesTakeGeneralPath = false

        /// Sets the flags that follow from ``readOnlyReason`` and ``layers``; call it after
        /// changing either.
        mutating func updateLayerFlags() {
            hasLayers = layers.map { !$0.values.isEmpty || !$0.locks.isEmpty } ?? false
            guardsWrites = readOnlyReason != nil || layers?.locks.isEmpty == false
            writesTakeGeneralPath = hasLayers || guardsWrites
        }

        /// Why a write of `name` is refused; `nil` when it is not.
        func refusal(ofWriteTo name: String) -> WriteRefusal? {
            if let readOnlyReason { return .readOnly(readOnlyReason) }
            if hasLayers, let index = layers!.locks[name] { return .locked(by: layers!.layers[index].url) }
            return nil
        }

        /// The value a read of `name` decodes before this run's overrides: a locked key's system
        /// value, or else the user's, or else a system file's.
        mutating func layeredValue(named name: String) -> JSONValue? {
            // NB: read first, on a line of its own: as an argument, the tree's mutating accessor
            // overlapped the call's borrow of `self`, and the whole state was copied for it.
            let stored = tree[name]
            // NB: not through `layeredValue(named:stored:)`: a call of a non-mutating method from
            // here passes it a copy of the whole state (a memcpy of 267 bytes on every call).
            guard hasLayers else { return stored }
            if let locked = layers!.lockedValue(named: name) { return locked }
            return stored ?? layers!.values[name]
        }

        /// ``layeredValue(named:)`` where the user's layer holds `stored` (a transaction's view).
        func layeredValue(named name: String, stored: JSONValue?) -> JSONValue? {
            guard hasLayers else { return stored }
            if let locked = layers!.lockedValue(named: name) { return locked }
            return stored ?? layers!.values[name]
        }

        /// Every key's value as reads see it before this run's overrides: ``layeredValue(named:)``
        /// of every key set somewhere, where the user's layer holds `stored`.
        func layeredValues(stored: [String: JSONValue]) -> [String: JSONValue] {
            guard hasLayers else { return stored }
            var values = layers!.values
            for (name, value) in stored where layers!.locks[name] == nil { values[name] = value }
            return values
        }

        /// What reads of an unlocked key see when the user's file holds `stored` for it: that, or
        /// else the first system file's value.
        func valueBeneath(_ name: String, stored: JSONValue?) -> JSONValue? {
            guard hasLayers, stored == nil else { return stored }
            return layers!.values[name]
        }

        /// Whether a system file locks `name`.
        func isLocked(_ name: String) -> Bool {
            hasLayers && layers!.locks[name] != nil
        }

        /// File stores: set by `removeAll()` until the next successful write, which then keeps
        /// none of the keys the file holds (but those a system file locks), seen here or not.
        var clearsFile = false

        /// File stores: whether keys were changed (or all removed) here since the last successful write.
        var isDirty: Bool { changedCount > 0 || clearsFile }

        /// Whether `name` was changed here since the last successful write.
        ///
        /// A flush writes such keys into the file as it is then, so keys another process wrote
        /// meanwhile are not lost; the file watcher leaves them alone, so an unflushed local change
        /// wins until its flush.
        func isChanged(_ name: String) -> Bool {
            keys[HashedName(name)]?.isChanged ?? false
        }

        /// Marks `name` as changed since the last flush.
        mutating func markChanged(_ name: String) {
            if !keys[HashedName(name), default: KeyState()].markChanged() { changedCount += 1 }
        }

        /// Marks each of `names` as changed since the last flush.
        mutating func markChanged(_ names: some Sequence<String>) {
            for name in names { markChanged(name) }
        }

        /// The keys changed since the last flush, which are no longer marked so.
        mutating func takeChanged() -> Set<String> {
            guard changedCount > 0 else { return [] }
            var changed = Set<String>(minimumCapacity: changedCount)
            var emptied = false
            // NB: by index, so clearing a mark searches nothing.
            var index = keys.startIndex
            while index != keys.endIndex {
                if keys.values[index].isChanged {
                    keys.values[index].isChanged = false
                    changed.insert(keys.keys[index].text)
                    emptied = emptied || keys.values[index].isEmpty
                }
                keys.formIndex(after: &index)
            }
            // NB: entries held only for the mark go, so keys written once and removed leave nothing.
            if emptied { keys = keys.filter { !$0.value.isEmpty } }
            changedCount = 0
            return changed
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

        /// Forgets the decoded value kept for `name`, if any.
        ///
        /// - Returns: The value forgotten, for the caller to release after the lock: a decoded value
        ///   may be an instance of a class of the user's, whose `deinit` is user code.
        mutating func forgetDecoded(_ name: String) -> CacheEntry? {
            if !staleJSON.isEmpty { settleJSON() }
            guard let index = keys.index(forKey: HashedName(name)) else { return nil }
            return forgetDecoded(at: index).old
        }

        /// Forgets the decoded value of the entry at `index`; returns it, and the entry's observers.
        private mutating func forgetDecoded(
            at index: Dictionary<HashedName, KeyState>.Index
        ) -> (old: CacheEntry?, observers: (any Defaults.ObserverSlot)?) {
            // NB: settled by the callers (recordChange, forgetDecoded(_:)): settling here would
            // move the entry `index` points at.
            var old: CacheEntry?
            swap(&old, &keys.values[index].decoded)
            let observers = KeyState.observers(of: &keys.values[index])
            // NB: an entry's other parts stay; an entry left with nothing goes.
            if KeyState.isEmpty(&keys.values[index]) { keys.remove(at: index) }
            return (old, observers)
        }

        /// Keeps `decoded` as the decoded value of `name`.
        ///
        /// - Returns: The value kept before, for the caller to release after the lock.
        mutating func keepDecoded(_ decoded: CacheEntry, for name: HashedName) -> CacheEntry? {
            if !staleJSON.isEmpty { settleJSON() }
            var old: CacheEntry? = decoded
            swap(&old, &keys[name, default: KeyState()].decoded)
            return old
        }

        /// Writes a lossless value with no references in place, the fast path of a one-key write:
        /// into the box the key keeps already, with no JSON made now (the tree gets it when read,
        /// see ``tree``).
        ///
        /// Only when nothing needs the write's JSON or old value now: no transaction open, no
        /// system file, override, read-only refusal, whole-suite observer or sink that gets every
        /// change (the caller checks those), the key has no observers, and no one else holds its box.
        ///
        /// - Returns: `nil` when the write must take the general path; else whether the value
        ///   changed, and whether this write must schedule a flush.
        mutating func writeInPlace(
            of name: HashedName,
            _ value: UnsafeRawPointer,
            writer: InPlaceWriter,
            encoder: () -> ValueCoding.NativeEncoder,
            isFile: Bool
        ) -> (changed: Bool, schedulesFlush: Bool)? {
            guard let index = keys.index(forKey: name) else { return nil }
            switch Self.assign(value, writer, into: &keys.values[index]) {
            case .notAssigned:
                return nil
            case .equal:
                return (false, false)
            case .assigned(let wasStale):
                if !wasStale { staleJSON.append((name, encoder())) }
                generation &+= 1
                guard isFile else { return (true, false) }
                if !keys.values[index].markChanged() { changedCount += 1 }
                defer { flushScheduled = true }
                return (true, !flushScheduled)
            }
        }

        /// What ``assign(_:_:into:)`` did.
        private enum Assignment {
            /// The entry cannot take the value in place.
            case notAssigned
            /// The box held the same value, written in place before (so its JSON is the write's).
            case equal
            /// The box took the value; `wasStale` when its JSON was waiting already.
            case assigned(wasStale: Bool)
        }

        /// Stores the value into `entry`'s box, when the entry has no observers and a box of the
        /// value's type that nothing else holds.
        private static func assign(
            _ value: UnsafeRawPointer,
            _ writer: InPlaceWriter,
            into entry: inout KeyState
        ) -> Assignment {
            guard entry.observers == nil, entry.decoded?.type == writer.type,
                entry.decoded?.box != nil, isKnownUniquelyReferenced(&entry.decoded!.box!)
            else { return .notAssigned }
            let wasStale = entry.isJSONStale
            // NB: equal bits are equal JSON only for a value this path wrote: a value decoded from
            // the file may be spelled otherwise there ("1.0" for 1), which a write must replace,
            // so the general path compares JSON then.
            guard writer.boxType.replace(value, in: entry.decoded!.box!) else {
                return wasStale ? .equal : .notAssigned
            }
            entry.isJSONStale = true
            return .assigned(wasStale: wasStale)
        }

        /// Records one committed change of `name`, with one search of ``keys``: keeps `decoded` (or
        /// forgets the old one), marks the key changed when `marksChanged`.
        ///
        /// - Returns: The decoded value kept before, and the key's observers.
        mutating func recordChange(
            of name: HashedName,
            decoded: CacheEntry?,
            marksChanged: Bool
        ) -> (oldDecoded: CacheEntry?, observers: (any Defaults.ObserverSlot)?) {
            if !staleJSON.isEmpty { settleJSON() }
            // NB: a removal of an unobserved, unchanged key with nothing kept adds no entry.
            if decoded == nil && !marksChanged {
                guard let index = keys.index(forKey: name) else { return (nil, nil) }
                let (old, observers) = forgetDecoded(at: index)
                return (old, observers)
            }
            let (old, observers, wasChanged) = keys[name, default: KeyState()]
                .record(decoded, marksChanged: marksChanged)
            if marksChanged && !wasChanged { changedCount += 1 }
            return (old, observers)
        }
    }

    /// Why a write is refused.
    enum WriteRefusal: Equatable {
        /// The file may not be written by this process: why.
        case readOnly(String)
        /// A system file locks the key.
        case locked(by: URL)
    }

    /// A key's name with its hash, worked out once, by which the table of keys is searched.
    ///
    /// A read or a write of a ``Defaults/Key`` then hashes one integer instead of the name's text,
    /// and a search compares the hashes of the names it passes before their text.
    package struct HashedName: Hashable, Sendable {
        package let text: String
        /// `text.hashValue`: stable for the life of the process.
        let hash: Int

        package init(_ text: String) {
            self.text = text
            self.hash = text.hashValue
        }

        package static func == (lhs: HashedName, rhs: HashedName) -> Bool {
            lhs.hash == rhs.hash && lhs.text == rhs.text
        }

        package func hash(into hasher: inout Hasher) {
            hasher.combine(hash)
        }

        /// The bucket hash a `Dictionary` asks for: `hash` (already a seeded SipHash of the
        /// text) mixed with the table's seed by a few multiplies, instead of a whole `Hasher`
        /// round, about half of what a search of the table of keys cost.
        ///
        /// NB: the seed is mixed in, not ignored: tables of different seeds then order the same
        /// names differently, which keeps a copy from one table into another from clustering.
        package func _rawHashValue(seed: Int) -> Int {
            var mixed = UInt64(truncatingIfNeeded: hash ^ seed)
            mixed ^= mixed >> 33
            mixed &*= 0xff51_afd7_ed55_8ccd
            mixed ^= mixed >> 33
            mixed &*= 0xc4ce_b9fe_1a85_ec53
            mixed ^= mixed >> 33
            return Int(truncatingIfNeeded: mixed)
        }
    }

    /// What a state keeps beside one key's stored value.
    struct KeyState {
        /// The value decoded as the type last read or written; `nil` when none is kept.
        var decoded: CacheEntry?
        /// File stores: whether the key was changed here since the last successful write.
        var isChanged = false
        /// The key's observers, as the observation module keeps them.
        var observers: (any Defaults.ObserverSlot)?

        /// Whether ``decoded`` holds a value written in place whose JSON the state's tree does
        /// not have yet (see `State.staleJSON`).
        var isJSONStale = false

        /// Whether the entry holds nothing, so it can go.
        var isEmpty: Bool { decoded == nil && !isChanged && observers == nil }

        /// Whether `entry` holds nothing; for an entry lent in place.
        static func isEmpty(_ entry: inout KeyState) -> Bool { entry.isEmpty }

        /// The observers of `entry`; for an entry lent in place.
        static func observers(of entry: inout KeyState) -> (any Defaults.ObserverSlot)? { entry.observers }

        /// Marks the key changed; returns whether it was already.
        mutating func markChanged() -> Bool {
            defer { isChanged = true }
            return isChanged
        }

        /// Replaces the decoded value and marks the key changed when asked; returns the old decoded
        /// value, the observers and whether the key was marked changed already.
        mutating func record(
            _ newDecoded: CacheEntry?,
            marksChanged: Bool
        ) -> (CacheEntry?, (any Defaults.ObserverSlot)?, Bool) {
            // NB: swapped out, not copied: a copy and a release of the old box on every write.
            var old = newDecoded
            swap(&old, &decoded)
            let wasChanged = isChanged
            if marksChanged { isChanged = true }
            return (old, observers, wasChanged)
        }
    }

    /// A decoded value, or the fact that the stored value did not decode as `type`.
    @usableFromInline
    package struct CacheEntry: Sendable {
        package let type: ObjectIdentifier
        /// A `Box<Value>` for the type `type` names; `nil` when the stored value did not decode.
        package var box: AnyBox?

        /// The entry for a decoded value of type `Value`.
        package static func holding<Value: Sendable>(_ value: Value) -> CacheEntry {
            CacheEntry(type: ObjectIdentifier(Value.self), box: Box(value))
        }

        /// The entry recording that the stored value does not decode as `Value`.
        package static func undecodable<Value>(as type: Value.Type) -> CacheEntry {
            CacheEntry(type: ObjectIdentifier(Value.self), box: nil)
        }

        // NB: callers check `type` and unwrap `box` themselves; returning `Value?` from here would
        // fetch `Optional<Value>` metadata on every call of unspecialized generic code.
    }

    /// A decoded value, kept beside a key's stored one.
    ///
    /// NB: `value` changes only through ``InPlaceWriter``: under the state's lock, and only while
    /// the state's reference is the only one (so no reader holds the box), for a value of a type
    /// with no references in it (so nothing is released under the lock).
    package final class Box<Value: Sendable>: AnyBox, @unchecked Sendable {  // value set only unshared, locked
        // NB: no dynamic exclusivity check: reads would pay for one on every call.
        @exclusivity(unchecked) package fileprivate(set) var value: Value
        package init(_ value: Value) { self.value = value }

        override class func replace(_ value: UnsafeRawPointer, in box: AnyBox) -> Bool {
            // NB: by address, with no copy of the value: the unspecialized generic copy cost more
            // than the comparison. The caller made sure `Value` holds no references.
            withUnsafeMutablePointer(to: &unsafeDowncast(box, to: Box<Value>.self).value) { held in
                let size = MemoryLayout<Value>.size
                if memcmp(held, value, size) == 0 { return false }
                UnsafeMutableRawPointer(held).copyMemory(from: value, byteCount: size)
                return true
            }
        }

        override class func json(of box: AnyBox, encoder: ValueCoding.NativeEncoder) -> JSONValue? {
            withUnsafePointer(to: unsafeDowncast(box, to: Box<Value>.self).value) { encoder(UnsafeRawPointer($0)) }
        }
    }

    /// What every ``Box`` is, so a cache entry holds a class reference whose uniqueness can be
    /// checked in place (an existential's cannot: it is opened into a copy).
    ///
    /// The class methods are ``InPlaceWriter``'s: reached through the metatype, which, unlike a
    /// closure, costs no reference counting on a write.
    package class AnyBox: @unchecked Sendable {  // no stored state; only class methods
        /// Stores the value at `value`, which holds no references, into `box`, a box of the type
        /// the subclass boxes, unless the box holds the same bits already; returns whether it did.
        class func replace(_ value: UnsafeRawPointer, in box: AnyBox) -> Bool {
            preconditionFailure("abstract")
        }

        /// The stored form of the value in `box`, made by `encoder`.
        class func json(of box: AnyBox, encoder: ValueCoding.NativeEncoder) -> JSONValue? {
            preconditionFailure("abstract")
        }
    }

    /// How a write keeps its value as the decoded one when the value is lossless and holds no
    /// references (an `Int`, a `Bool`, a `Double`, a `Date`): into the box the key keeps already,
    /// when nothing but the state holds it, instead of a new one; its JSON is made later, when
    /// something reads the state's tree (see `State.writeInPlace(of:_:writer:encoder:isFile:)`).
    ///
    /// An `Int` write was 2,139 instructions (callgrind, `defaults-profile write-0`): a box
    /// allocated and the old one freed, the value's text made, the tree's `String` key hashed, two
    /// tables searched. This path is one search and a copy of the value's bytes: 641.
    struct InPlaceWriter: Sendable {
        /// `ObjectIdentifier(Value.self)`.
        let type: ObjectIdentifier
        /// `Box<Value>`.
        let boxType: AnyBox.Type

        /// The writer for `Value`, or `nil` when its values hold references, which a write must
        /// not release under the lock, or are not stored natively.
        ///
        /// NB: no closure in here: a copy of the writer would retain it on every write.
        static func make<Value: Sendable>(for _: Value.Type) -> InPlaceWriter? {
            guard _isPOD(Value.self), ValueCoding.nativeEncoder(for: Value.self) != nil else { return nil }
            return InPlaceWriter(type: ObjectIdentifier(Value.self), boxType: Box<Value>.self)
        }
    }
}
