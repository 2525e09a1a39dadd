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
    /// article "Sharing settings between processes"). Inside one process, every suite on the same file (the
    /// same path once symlinks are resolved) shares one state: a write through one is read at once
    /// through the others, and such suites are equal. Other suites are equal only to themselves.
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

        /// Opens the suite on the file at `fileURL`, sharing the state of any suite already open on it.
        convenience init(
            opening fileURL: URL,
            errorHandler: (@Sendable (StorageError) -> Void)?,
            reportsLoadProblemsLater: Bool = false
        ) {
            let (store, problems) = FileStores.store(for: fileURL)
            self.init(store: store, location: fileURL.standardizedFileURL, errorHandler: errorHandler)
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
            guard store.detach(ObjectIdentifier(self)), case .file = store.backend else { return }
            // The last suite on the file: write what is pending now, and report to this suite.
            if case .failure(let error) = store.flushNow() { report(error) }
        }

        /// Creates a suite stored in the file at `fileURL`, reading it now if it exists.
        ///
        /// A corrupt file is moved aside to `<file>.corrupt-<timestamp>` and reported; the suite
        /// then starts from defaults. The file and its directory are created on the first write.
        ///
        /// - Parameters:
        ///   - fileURL: The JSON file to use.
        ///   - errorHandler: Where to report problems; `nil` uses ``Defaults/errorHandler``.
        public convenience init(fileURL: URL, errorHandler: (@Sendable (StorageError) -> Void)? = nil) {
            self.init(opening: fileURL, errorHandler: errorHandler)
        }

        /// Creates a suite named `name` in the XDG configuration directory:
        /// `$XDG_CONFIG_HOME/<name>/settings.json`, or `~/.config/<name>/settings.json` when that
        /// variable is unset or not an absolute path.
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
            let directory = Self.configurationDirectory(environment: ProcessInfo.processInfo.environment)
            self.init(fileURL: Self.fileURL(forSuiteNamed: name, in: directory), errorHandler: errorHandler)
        }

        /// Creates a suite that lives in memory only, for tests and previews.
        public static func inMemory() -> Suite {
            Suite(store: Store(backend: .memory), location: nil, errorHandler: nil)
        }

        /// The file this suite reads and writes, if it is file-backed.
        public var fileURL: URL? { location }

        /// A short description naming the suite's storage.
        public var description: String {
            switch store.backend {
            case .memory: return "Defaults.Suite(inMemory)"
            case .file: return "Defaults.Suite(file: \(location?.path ?? ""))"
            case .userDefaults: return "Defaults.Suite(userDefaults)"
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
        var tree: [String: JSONValue] = [:]
        /// Decoded values by key name, for the type they were decoded as.
        var cache: [String: CacheEntry] = [:]
        /// Bumped on every committed change, local or external.
        var generation: UInt64 = 0
        /// File stores: keys changed here since the last successful write.
        ///
        /// A write applies these to the file as it is then, so keys another process wrote meanwhile are not lost; the file
        /// watcher leaves them alone, so an unflushed local change wins until its flush.
        var changedSinceFlush: Set<String> = []
        /// Set while a flush has taken `changedSinceFlush` and not finished.
        var flushInFlight = false
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

        var isDirty: Bool { !changedSinceFlush.isEmpty }
    }

    /// A decoded value, or the fact that the stored value did not decode as `type`.
    package struct CacheEntry: Sendable {
        package let type: ObjectIdentifier
        /// A `Box<Value>` for the type `type` names; `nil` when the stored value did not decode.
        package let box: (any AnyObject & Sendable)?

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

    package final class Box<Value: Sendable>: Sendable {
        package let value: Value
        package init(_ value: Value) { self.value = value }
    }
}
