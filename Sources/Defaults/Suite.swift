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
    /// Two suites are equal only when they are the same instance.
    public final class Suite: Sendable, Hashable, CustomStringConvertible {
        enum Backend: Sendable {
            case memory
            case file(FileStorage)
            case userDefaults(UserDefaultsStorage)
        }

        let backend: Backend
        let state: Mutex<State>
        let errorHandler: (@Sendable (StorageError) -> Void)?
        /// Serialises file writes so replacements land in commit order.
        let flushQueue = DispatchQueue(label: "Defaults.Suite.flush")

        /// How long a file-backed suite waits after a change before writing, so bursts coalesce.
        package static let coalescingDelay = DispatchTimeInterval.milliseconds(50)

        init(
            backend: Backend,
            errorHandler: (@Sendable (StorageError) -> Void)?,
            reportsLoadProblemsLater: Bool = false
        ) {
            self.backend = backend
            self.errorHandler = errorHandler
            var initial = State()
            var problem: StorageError?
            if case .file(let storage) = backend {
                switch storage.load() {
                case .loaded(let members):
                    initial.tree = members
                case .movedAside(let error):
                    problem = error
                case .unreadable(let error):
                    problem = error
                    initial.writesBlocked = true
                }
            }
            self.state = Mutex(initial)
            if let problem {
                // NB: the standard suite is built inside Swift's one-time initialisation of a
                // static, which holds a lock: a handler that read `.standard` would wait forever.
                if reportsLoadProblemsLater {
                    let handler = errorHandler
                    DispatchQueue.global().async { (handler ?? Defaults.errorHandler)(problem) }
                } else {
                    report(problem)
                }
            }
            if case .file = backend { LiveSuites.register(self) }
        }

        deinit {
            guard case .file(let storage) = backend else { return }
            LiveSuites.unregister(self)
            // NB: no flush can be running: a running flush holds a strong reference to the suite.
            let pending = state.withLock { state -> (tree: [String: JSONValue], changed: Set<String>)? in
                state.isDirty && !state.writesBlocked ? (state.tree, state.changedSinceFlush) : nil
            }
            if let pending {
                do {
                    try storage.write(pending.tree, changedKeys: pending.changed)
                } catch {
                    report(error)
                }
            }
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
            self.init(backend: .file(FileStorage(url: fileURL)), errorHandler: errorHandler)
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
            Suite(backend: .memory, errorHandler: nil)
        }

        /// The file this suite reads and writes, if it is file-backed.
        public var fileURL: URL? {
            guard case .file(let storage) = backend else { return nil }
            return storage.url
        }

        /// A short description naming the suite's storage.
        public var description: String {
            switch backend {
            case .memory: return "Defaults.Suite(inMemory)"
            case .file(let storage): return "Defaults.Suite(file: \(storage.url.path))"
            case .userDefaults: return "Defaults.Suite(userDefaults)"
            }
        }

        /// Suites are equal only when they are the same instance.
        public static func == (lhs: Suite, rhs: Suite) -> Bool { lhs === rhs }

        /// Hashes the suite's identity.
        public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

        func report(_ error: StorageError) {
            (errorHandler ?? Defaults.errorHandler)(error)
        }

        /// The number of times this suite has replaced its file; for tests of coalescing.
        package var fileReplacementCount: Int {
            guard case .file(let storage) = backend else { return 0 }
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
        /// Bumped on every committed change.
        var generation: UInt64 = 0
        /// The generation last written to the file.
        var persistedGeneration: UInt64 = 0
        /// Keys changed since the last successful write: a write applies these to the file as it
        /// is then, so keys another suite on the same file wrote meanwhile are not lost.
        var changedSinceFlush: Set<String> = []
        var flushScheduled = false
        var retryDelay = 0.0
        /// Set when the file exists but could not be read: it must not be overwritten.
        var writesBlocked = false
        /// Transactions open on this suite, on any thread; reads consult the task-local scope only then.
        var openTransactions = 0

        var isDirty: Bool { generation != persistedGeneration }
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

/// File-backed suites still alive, flushed when the process exits normally.
enum LiveSuites {
    private struct WeakSuite: @unchecked Sendable {  // only the weak reference, read under the lock
        weak var suite: Defaults.Suite?
    }

    private static let suites = Mutex<[ObjectIdentifier: WeakSuite]>([:])
    private static let installExitHandler: Void = {
        atexit { LiveSuites.flushAll() }
    }()

    static func register(_ suite: Defaults.Suite) {
        _ = installExitHandler
        suites.withLock { $0[ObjectIdentifier(suite)] = WeakSuite(suite: suite) }
    }

    static func unregister(_ suite: Defaults.Suite) {
        suites.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(suite)) }
    }

    static func flushAll() {
        let alive = suites.withLock { $0.values.compactMap(\.suite) }
        for suite in alive {
            try? suite.synchronize()
        }
    }
}
