extension Defaults {
    /// A backend that keeps values in this process's memory, in a named space every
    /// `InMemoryBackend` over the same name shares.
    ///
    /// Suites over two backend objects of one space behave as two processes on one file, or two
    /// machines on one database: each keeps its own state, a commit through one reaches the others
    /// as an `.external` change, and `exclusiveTransaction` on each compares what it read. That
    /// makes it the test double for code that must work when another party changes its settings:
    ///
    /// ```swift
    /// let machineA = Defaults.Suite(backend: Defaults.InMemoryBackend(space: "fleet"))
    /// let machineB = Defaults.Suite(backend: Defaults.InMemoryBackend(space: "fleet"))
    /// ```
    ///
    /// A named space keeps its values until the process ends, whether or not a backend is left
    /// over it. A backend made with ``init()`` has a space of its own that no other backend can
    /// name, and its values go with it. ``Defaults/Suite/inMemory()`` is such a suite: since
    /// nothing can read its space but the suite itself, the suite commits nothing to it, and a write
    /// costs only the write to memory.
    ///
    /// Commits are reported to the space's other backends at once, on the committing thread, in the
    /// order they were made; revisions count the commits that changed the space.
    public final class InMemoryBackend: Backend, Sendable {
        /// The space's name; `nil` for a space of the backend's own.
        public let space: String?
        private let spaceKey: String

        /// Creates a backend over the space named `space`, shared with every other backend over it.
        public init(space: String) {
            self.space = space
            spaceKey = "named:" + space
        }

        /// Creates a backend over a space of its own, empty, that lives as long as the backend.
        public init() {
            space = nil
            spaceKey = "private:" + String(InMemorySpaces.nextPrivateNumber())
        }

        deinit {
            if space == nil { InMemorySpaces.table.withLock { _ = $0.removeValue(forKey: spaceKey) } }
        }

        /// "memory", and the space's name.
        public var name: String { space.map { "memory space \($0)" } ?? "memory" }

        /// The space's values and revision.
        public func load() throws(StorageError) -> BackendContents {
            InMemorySpaces.table.withLock { table in
                let stored = table[spaceKey] ?? InMemorySpaces.Space()
                return BackendContents(values: stored.values, revision: stored.revision)
            }
        }

        /// Reports every later commit made through another backend over the space.
        public func startReporting(to updates: BackendUpdates) {
            InMemorySpaces.table.withLock { table in
                table[spaceKey, default: InMemorySpaces.Space()].watchers[ObjectIdentifier(self)] = updates
            }
        }

        /// Stops reporting.
        public func stopReporting() {
            InMemorySpaces.table.withLock { table in
                _ = table[spaceKey]?.watchers.removeValue(forKey: ObjectIdentifier(self))
            }
        }

        /// Applies `changes` to the space.
        @discardableResult
        public func commit(_ changes: BackendChanges) throws(StorageError) -> BackendCommitResult {
            _ = InMemorySpaces.commit(changes, to: spaceKey, ifUnchanged: [:], from: ObjectIdentifier(self))
            return .stored
        }

        /// `true`: the space is compared and changed under one lock.
        public var supportsConditionalCommit: Bool { true }

        /// Applies `changes` to the space if every key in `expected` holds the value given.
        public func commit(
            _ changes: BackendChanges,
            ifUnchanged expected: [String: JSONValue?]
        ) throws(StorageError) -> ConditionalCommitResult {
            if let current = InMemorySpaces.commit(
                changes,
                to: spaceKey,
                ifUnchanged: expected,
                from: ObjectIdentifier(self)
            ) {
                return .conflict(current: current)
            }
            return .committed
        }
    }
}

/// The spaces of ``Defaults/InMemoryBackend`` in this process.
enum InMemorySpaces {
    struct Space {
        var values: [String: JSONValue] = [:]
        var revision: UInt64 = 0
        /// Where each backend reporting on the space is told of others' commits.
        var watchers: [ObjectIdentifier: Defaults.BackendUpdates] = [:]

        /// ``InMemoryBackend/commit(_:to:ifUnchanged:from:)`` on this space, under the table's lock.
        mutating func commit(
            _ changes: Defaults.BackendChanges,
            ifUnchanged expected: [String: JSONValue?],
            from origin: ObjectIdentifier
        ) -> [String: JSONValue?]? {
            if expected.contains(where: { values[$0.key] != $0.value }) {
                var current: [String: JSONValue?] = [:]
                for name in expected.keys { current[name] = .some(values[name]) }
                return current
            }
            let after = changes.applied(to: values)
            var told: [String: JSONValue?] = [:]
            for (name, value) in after where values[name] != value { told[name] = .some(value) }
            for name in values.keys where after[name] == nil { told[name] = .some(nil) }
            guard !told.isEmpty else { return nil }
            values = after
            revision += 1
            // Told under the lock, so every watcher hears the space's commits in their order;
            // a report returns at once and never calls back into a backend.
            for (watcher, updates) in watchers where watcher != origin {
                updates.changed(told, revision: revision)
            }
            return nil
        }
    }

    static let table = Lock<[String: Space]>([:])
    private static let privateCount = Lock<UInt64>(0)

    static func nextPrivateNumber() -> UInt64 {
        privateCount.withLock { count in
            count += 1
            return count
        }
    }

    /// Applies `changes` to the space `key` if every value in `expected` holds, and tells every
    /// watcher but `origin` of the keys whose value changed.
    ///
    /// - Returns: The current values of `expected`'s keys on a conflict; `nil` when it committed.
    static func commit(
        _ changes: Defaults.BackendChanges,
        to key: String,
        ifUnchanged expected: [String: JSONValue?],
        from origin: ObjectIdentifier
    ) -> [String: JSONValue?]? {
        table.withLock { $0[key, default: Space()].commit(changes, ifUnchanged: expected, from: origin) }
    }
}
