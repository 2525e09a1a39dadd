import Dispatch
import Foundation
import Synchronization

extension Defaults {
    /// A store of values: a JSON file, memory only, a Foundation `UserDefaults`, or a backend of
    /// your own (``init(backend:errorHandler:)``).
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
            let (store, problems) = StoreRegistry.store(for: fileURL, systemFiles: systemFiles)
            // The path as the store knows it, without `.` and `..`, when this suite gave the same one.
            let location =
                if let file = store.file, file.givenPath == ResolvedPath.normalize(fileURL.path) {
                    file.fileURL
                } else {
                    fileURL
                }
            self.init(store: store, location: location, errorHandler: errorHandler)
            guard !problems.isEmpty else { return }
            // A commit that fails the same way later is not reported again.
            for problem in problems { store.noteLoadProblem(problem) }
            // The standard suite is built inside Swift's one-time initialisation of a static,
            // which holds a lock: a handler that read `.standard` would wait forever.
            if reportsLoadProblemsLater {
                DispatchQueue.global()
                    .async { [self] in
                        for problem in problems { report(problem) }
                    }
            } else {
                for problem in problems { report(problem) }
            }
        }

        deinit {
            guard store.detach(ObjectIdentifier(self)), store.commitsLater else { return }
            // The last suite on the file or backend: write what is pending now, and report to this suite.
            // To the handler only: a problem observer must not be handed a suite being released.
            // Once while it lasts: not when a commit or the backend reported the same failure.
            if case .failure(let error) = store.flushNow(), store.reportsCommitFailure(error) {
                (errorHandler ?? Defaults.errorHandler)(error)
            }
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
            let (store, problem, isNew) = StoreRegistry.store(for: backend)
            self.init(store: store, location: nil, errorHandler: errorHandler)
            if let problem { report(problem) }
            // After the suite is attached, so what the backend reports as it starts reaches
            // this suite's handler, not only the global one.
            if isNew { store.startReporting() }
        }

        /// Creates a suite that lives in memory only, for tests and previews.
        ///
        /// The same as a suite over an ``InMemoryBackend`` of its own (``InMemoryBackend/init()``),
        /// but for one thing: nothing but this suite could read that backend's space, so the suite
        /// commits nothing to it and a write costs only the write to memory. For suites that play
        /// two processes, or two machines, give each an ``InMemoryBackend`` over one named space.
        public static func inMemory() -> Suite {
            Suite(store: Store(backend: .memory), location: nil, errorHandler: nil)
        }

        /// The file this suite reads and writes, if it is file-backed.
        public var fileURL: URL? { location }

        /// The system files beneath ``fileURL``, first listed first; empty when there are none.
        public var systemFileURLs: [URL] { store.systemFiles?.urls ?? [] }

        /// A short description naming the suite's storage.
        public var description: String {
            switch store.backend {
            case .memory: return "Defaults.Suite(inMemory)"
            case .backend where store.writeThrough != nil: return "Defaults.Suite(userDefaults)"
            case .backend where store.file != nil: return "Defaults.Suite(file: \(location?.path ?? ""))"
            case .backend(let custom): return "Defaults.Suite(backend: \(custom.backend.name))"
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
            ProblemObservers.deliver(error, from: self)
        }

        /// How long a file-backed suite waits after a change before writing, so bursts coalesce.
        package static var coalescingDelay: Duration { FlushMachine.coalescingDelay }

        /// Runs `body` with the timer's commits held back: only `synchronize()` (and transactions)
        /// commit meanwhile; for tests that look at the file or the error handler between their own
        /// `synchronize()` calls, which may take longer than the coalescing delay.
        package func holdingTimedCommits<Result>(_ body: () throws -> Result) rethrows -> Result {
            store.holdTimedCommits(true)
            defer { store.holdTimedCommits(false) }
            return try body()
        }

        /// Runs `body` with this suite's file, when found missing or broken, looked at again until
        /// it returns.
        ///
        /// Meanwhile the file is not moved aside or taken as deleted: for tests that rewrite it in
        /// place or remake a link to it in two steps, between which a busy machine may pause longer
        /// than every retry. After it returns, the usual retries follow. Other files are untouched.
        package func holdingBrokenFileRetries<Result>(_ body: () throws -> Result) rethrows -> Result {
            guard let file = store.file else { return try body() }
            return try file.holdingBrokenFileRetries(body)
        }

        /// The number of times this suite has replaced its file; for tests of coalescing.
        package var fileReplacementCount: Int {
            store.file?.replacementCount ?? 0
        }
    }
}
