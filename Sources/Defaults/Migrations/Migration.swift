extension Defaults {
    /// One step in the life of a suite's stored values — a rename, a type change, a split, a
    /// merge, a retired key — applied once to each store and recorded in it.
    ///
    /// A key declares its own migration (``Defaults/Key/init(_:default:suite:summary:formerly:isFinal:)``
    /// and ``Defaults/Key/init(_:default:suite:summary:formerly:isFinal:migrating:)``); what does not fit
    /// one key is a `Migration` of its own, handed to ``Defaults/Suite/migrate(_:dryRun:)`` in the
    /// order the steps were made:
    ///
    /// ```swift
    /// let version2 = Defaults.Migration("2: window size split") { values in
    ///     guard let size = try values.value(named: "windowSize", as: [Int].self), size.count == 2 else { return }
    ///     try values.setValue(size[0], named: "window.width", keepingStored: true)
    ///     try values.setValue(size[1], named: "window.height", keepingStored: true)
    ///     values.removeValue(named: "windowSize")
    /// }
    /// try suite.migrate([version2, .retiring(["legacyMode"])])
    /// ```
    ///
    /// The body works on the stored values of the suite's own file (or backend), not on the
    /// suite: it must not read or write the suite itself. It runs while the file's exclusive lock
    /// is held (for etcd, inside an exclusive transaction, by the process that claimed the right
    /// to run it in the record), so it runs in one process of all those opening the store at once.
    /// When it throws, nothing any migration of that call changed is kept, and the error is
    /// reported.
    public struct Migration: Sendable {
        /// The name under which the store records that the migration ran; unique in the store.
        public let id: String
        /// Changes the values.
        let body: @Sendable (inout MigrationValues) throws -> Void
        /// The names it removes and nothing else, for a retirement: a published schema lists
        /// them, so the `defaults` command can apply it without the program.
        let removes: [String]?

        /// Creates a migration.
        ///
        /// - Parameters:
        ///   - id: The name the store records it under once it ran: never reuse one for another step.
        ///   - body: Changes the stored values; it throws to keep them as they were.
        public init(_ id: String, _ body: @escaping @Sendable (inout MigrationValues) throws -> Void) {
            precondition(!id.isEmpty, "Defaults.Migration: an id cannot be empty")
            self.id = id
            self.body = body
            self.removes = nil
        }

        /// A migration that removes `names`, with the id `id`.
        init(id: String, removing names: [String]) {
            self.id = id
            self.removes = names
            self.body = { values in
                for name in names { values.removeValue(named: name) }
            }
        }

        /// A migration that removes the values of keys no version reads any more.
        ///
        /// - Parameter names: The retired keys' names.
        /// - Returns: The migration, recorded as `retire <names>`.
        public static func retiring(_ names: [String]) -> Migration {
            Migration(id: "retire " + names.joined(separator: ", "), removing: names)
        }
    }

    /// The stored values a ``Migration`` changes: the JSON of the suite's own file (or backend),
    /// by key name.
    public struct MigrationValues: Sendable {
        /// The values as they are now, in the migration.
        var values: [String: JSONValue]
        /// The names a system file locks, or the keys that are secret: never written.
        let locked: Set<String>
        /// Set when a migration wrote a locked name: it is then left for later.
        var touchedLocked: String?
        /// The names the migrations looked at, for the exclusive commit to compare.
        let reads = ReadLog()

        /// The names a migration looked at; `nil` once it listed them all.
        final class ReadLog: @unchecked Sendable {  // used by the one thread that runs the migrations
            private(set) var names: Set<String>? = []

            func note(_ name: String) { names?.insert(name) }
            func noteAll() { names = nil }
        }

        /// The names that hold a value.
        public var names: [String] {
            reads.noteAll()
            return values.keys.sorted(by: JSONWriter.utf8Precedes)
        }

        /// The JSON stored under `name`; setting `nil` removes it.
        public subscript(name: String) -> JSONValue? {
            get {
                reads.note(name)
                return values[name]
            }
            set {
                precondition(!name.isEmpty, "Defaults.MigrationValues: a key name cannot be empty")
                if locked.contains(name) && newValue != values[name] { touchedLocked = touchedLocked ?? name }
                values[name] = newValue
            }
        }

        /// The value stored under `name` decoded as `type`; `nil` when nothing is stored.
        ///
        /// - Throws: ``MigrationError`` when the stored value is not a value of `type`.
        public func value<Value: Serializable>(named name: String, as type: Value.Type) throws -> Value? {
            reads.note(name)
            guard let stored = values[name] else { return nil }
            guard let value = ValueCoding.decode(stored, as: Value.self) else {
                throw MigrationError(
                    "\"\(name)\" holds \(stored), which is not a value of type \(Value.self)"
                )
            }
            return value
        }

        /// Stores `value` under `name`, unless `keepingStored` and a value is stored there already.
        ///
        /// - Parameters:
        ///   - value: The value to store.
        ///   - name: The key's name.
        ///   - keepingStored: Whether a value already under `name` stays (a value the new version
        ///     wrote is never replaced by one carried over from an old one).
        /// - Throws: ``MigrationError`` when the value cannot be stored.
        public mutating func setValue<Value: Serializable>(
            _ value: Value,
            named name: String,
            keepingStored: Bool = false
        ) throws {
            if keepingStored && self[name] != nil { return }
            guard let json = ValueCoding.encode(value) else {
                if ValueCoding.isEmptyOptional(value) {
                    self[name] = nil
                    return
                }
                throw MigrationError("a value of type \(Value.self) for \"\(name)\" cannot be stored")
            }
            self[name] = json
        }

        /// Removes the value stored under `name`.
        public mutating func removeValue(named name: String) {
            self[name] = nil
        }
    }

    /// Why a migration could not run: a stored value it needs is not of the type it expects.
    public struct MigrationError: Error, CustomStringConvertible, Sendable {
        /// What is wrong.
        public let description: String

        /// Creates an error saying what is wrong.
        ///
        /// - Parameter description: One line saying what is wrong.
        public init(_ description: String) {
            self.description = description
        }
    }

    /// What ``Defaults/Suite/migrate(_:dryRun:)`` did, or would do.
    public struct MigrationReport: Sendable, Equatable {
        /// The migrations that ran (or would run), in order.
        public var applied: [String] = []
        /// The migrations left for later: the first would write a key a system file locks, or a
        /// secret, or the file is read-only; those after it wait for it.
        ///
        /// Nothing is reported: they are read through in memory meanwhile, and run at the next
        /// call of ``Defaults/Suite/migrate(_:dryRun:)`` (for a key's, the next time the key is
        /// created: the next launch) that can run them.
        public var deferred: [String] = []
        /// The values written (`nil`: removed), by name, not counting the store's record.
        public var changes: [String: JSONValue?] = [:]
    }
}
