import Synchronization

extension Defaults {
    /// A place where a suite's values live: a database the service already has, a key-value store
    /// a fleet shares, a test double that plays another machine.
    ///
    /// A suite keeps every value in memory and reads only from there: a read never reaches the
    /// backend, so a suite over any backend reads as fast as one over a file. The backend is asked
    /// for its contents once, when the suite opens (``load()``); writes made through the suite are
    /// gathered for a moment and handed over as one ``BackendChanges`` (``commit(_:)``); and changes
    /// made elsewhere come back through the ``BackendUpdates`` the suite hands it
    /// (``startReporting(to:)``), each report one `.external` change event for the suite's
    /// observers.
    ///
    /// ```swift
    /// let suite = Defaults.Suite(backend: MyBackend())
    /// ```
    ///
    /// Every suite made over the same backend object shares one state, as suites on one file do.
    ///
    /// ## Implementation requirements
    ///
    /// - **Per-key merge.** ``commit(_:)`` changes only the keys its changes name; every other key
    ///   stored, whoever wrote it, stays as it is. ``BackendChanges/removesEverything`` is the one
    ///   exception: the commit removes every key stored first (a user's `removeAll()`).
    /// - **One commit at a time.** The suite never calls ``commit(_:)`` or
    ///   ``commit(_:ifUnchanged:)`` again before the previous call returned, and it may call them from
    ///   any thread. A commit may block (a network round trip); it must not call back into the suite
    ///   on its own thread except through the ``BackendUpdates`` it was given.
    /// - **Exclusive commits, or a clear no.** ``commit(_:ifUnchanged:)`` commits only if every key
    ///   it names still holds the value given (or is still absent), atomically with respect to every
    ///   other writer. A backend that cannot do that leaves ``supportsConditionalCommit`` `false`,
    ///   and `exclusiveTransaction` on its suites throws
    ///   ``StorageError/exclusiveCommitUnsupported(backend:)``.
    /// - **Changes made elsewhere, once, in order, never an echo.** Report each change made by
    ///   another party exactly once, in the order the backend applied them, through
    ///   ``BackendUpdates/changed(_:revision:)``: one call is one change event (a change of three
    ///   keys made at once is one call naming three keys). Never report the backend's own commits.
    ///   Never report, for a key, a change older than a commit of that key this backend has made
    ///   or is making: the suite applies what it is told. (Reports that reach the suite while it
    ///   commits wait until the commit returns; those that arrived before it called the backend
    ///   leave the commit's keys alone, but one made before the commit and arriving after the call
    ///   would be taken in over it.) What a commit itself finds changed by others, it returns
    ///   (``BackendCommitResult/foundChanges``) instead of reporting.
    /// - **Problems are values, never crashes.** Throw a ``StorageError`` from a load or a commit
    ///   that failed; report a problem found in the background (a lost connection) through
    ///   ``BackendUpdates/report(_:)``. The suite keeps values in memory, tells its error handler,
    ///   and retries a failed commit later with everything still pending. A commit that throws
    ///   ``StorageError/writeRefused(backend:reason:)`` (or, for a file,
    ///   ``StorageError/readOnlyFile(url:reason:)``) is refused rather than failed: its changes are
    ///   given up, not retried, the backend reports what it holds for their keys, which memory
    ///   goes back to, and the next `synchronize()` throws the refusal.
    ///
    /// ## Implementation guidance
    ///
    /// - Store each value as the JSON the suite hands over (``JSONValue``); its text
    ///   (``JSONValue/description``) is what a person expects to see and edit.
    /// - A revision that grows with every change (etcd's, a database's sequence, a file's
    ///   generation) lets the suite drop a report it has already seen: give it in
    ///   ``BackendContents/revision`` and with each report.
    /// - If the backend loses track of changes (a watch that cannot resume), load its contents again
    ///   and hand them over whole with ``BackendUpdates/replaced(by:)``: the suite reports the
    ///   difference as one change event.
    /// - Check a backend with `DefaultsBackendTesting`'s conformance checks.
    public protocol Backend: AnyObject, Sendable {
        /// A short name for messages: the kind of backend and where it keeps values.
        var name: String { get }

        /// Reads every key stored, and the backend's revision.
        ///
        /// Called once, when the first suite over the backend opens. A suite whose load fails
        /// starts empty, reports the error, and still commits its writes (merged per key).
        func load() throws(StorageError) -> BackendContents

        /// Starts reporting changes made elsewhere to `updates`, from any thread, one at a time.
        ///
        /// Called once, right after ``load()``, once the first suite over the backend is set up: a
        /// problem reported from here (say, a stored value the load could not read) reaches that
        /// suite's error handler. Report every change since the load, none before it. The default
        /// does nothing: a backend only this process writes has nothing to report.
        func startReporting(to updates: BackendUpdates)

        /// Stops reporting; called when the last suite over the backend has gone.
        ///
        /// The default does nothing.
        func stopReporting()

        /// Stores `changes`, merged per key with whatever else is stored.
        ///
        /// - Returns: What the commit found other parties had changed and that was not reported
        ///   yet (``BackendCommitResult/stored`` when nothing): a backend that reads what it holds
        ///   before it writes (the file reads the file under its lock) hands that back here rather
        ///   than through ``BackendUpdates``, so the suite takes it in knowing it is older than
        ///   the commit.
        /// - Throws: A ``StorageError`` if nothing was stored; the suite keeps the changes and
        ///   retries.
        @discardableResult
        func commit(_ changes: BackendChanges) throws(StorageError) -> BackendCommitResult

        /// Whether ``commit(_:ifUnchanged:)`` is offered. The default is `false`.
        var supportsConditionalCommit: Bool { get }

        /// Stores `changes` if every key in `expected` holds the value given there (`nil`: the key
        /// is absent), atomically with respect to every other writer; otherwise stores nothing.
        ///
        /// - Returns: ``ConditionalCommitResult/committed``, or
        ///   ``ConditionalCommitResult/conflict(current:)`` with the current values of the keys of
        ///   `expected` (`nil` for absent ones); the suite takes them in and runs the transaction
        ///   again.
        /// - Throws: A ``StorageError`` if the backend could not tell. The default throws
        ///   ``StorageError/exclusiveCommitUnsupported(backend:)``.
        func commit(
            _ changes: BackendChanges,
            ifUnchanged expected: [String: JSONValue?]
        ) throws(StorageError) -> ConditionalCommitResult

        /// Whether the backend keeps the schema a program publishes for its keys
        /// (``Defaults/Suite/publishSchema(for:migrations:version:)``), for others to check values
        /// against: a shared store with no file beside which to publish one. The default is
        /// `false`.
        var keepsSchema: Bool { get }

        /// The schema document the backend keeps; `nil` when none is kept. The default returns
        /// `nil`.
        func loadSchema() throws(StorageError) -> JSONValue?

        /// Keeps `document` as the schema if the one kept is still `expected` (`nil`: none),
        /// atomically with respect to every other publisher; otherwise keeps nothing.
        ///
        /// - Returns: Whether `document` was kept.
        /// - Throws: A ``StorageError`` if the backend could not tell. The default throws
        ///   ``StorageError/backendFailed(backend:reason:)``: it keeps no schema.
        func storeSchema(_ document: JSONValue, ifUnchanged expected: JSONValue?) throws(StorageError) -> Bool
    }

    /// What a backend holds: every key's value, and the backend's revision.
    public struct BackendContents: Sendable, Equatable {
        /// Every key stored and its value.
        public var values: [String: JSONValue]
        /// A number that grows with every change the backend makes or learns of, if it keeps one.
        public var revision: UInt64?
        /// The file backend, for the store it opens: the record of migrations, left unparsed
        /// (then not among ``values``).
        var deferredRecord: DeferredJSON?

        /// Creates contents.
        public init(values: [String: JSONValue], revision: UInt64? = nil) {
            self.values = values
            self.revision = revision
        }
    }

    /// A set of changes to commit: keys written, keys removed, and whether every key goes first.
    public struct BackendChanges: Sendable, Equatable {
        /// The value of each key changed; `nil` removes the key.
        public var values: [String: JSONValue?]
        /// Whether every key stored is removed before `values` are applied: a `removeAll()`, which
        /// also removes keys other parties wrote that this suite never saw.
        public var removesEverything: Bool
        /// The keys whose stored values stay when ``removesEverything``: those a system file
        /// locks, whose user's value is kept beneath the lock (only a file suite has system files).
        public var keeping: Set<String>

        /// Creates a change set.
        ///
        /// - Parameters:
        ///   - values: The value of each key changed; `nil` removes the key.
        ///   - removesEverything: Whether every key stored is removed first.
        ///   - keeping: The keys whose stored values stay when every key is removed.
        public init(values: [String: JSONValue?], removesEverything: Bool = false, keeping: Set<String> = []) {
            self.values = values
            self.removesEverything = removesEverything
            self.keeping = keeping
        }

        /// The keys written, with their new values.
        public var written: [String: JSONValue] { values.compactMapValues { $0 } }

        /// The keys removed.
        public var removed: Set<String> { Set(values.compactMap { $0.value == nil ? $0.key : nil }) }

        /// `stored` after the changes.
        public func applied(to stored: [String: JSONValue]) -> [String: JSONValue] {
            var result = removesEverything ? stored.filter { keeping.contains($0.key) } : stored
            for (name, value) in values { result[name] = value }
            return result
        }
    }

    /// What a commit (``Backend/commit(_:)``) found besides storing its changes.
    public struct BackendCommitResult: Sendable, Equatable {
        /// Changes other parties made before the commit, which it found and which were not
        /// reported: the new value of each key (`nil`: removed).
        ///
        /// The suite takes them in as one `.external` change event, as it takes a report, but for
        /// the keys the commit wrote: those hold the commit's values now.
        public var foundChanges: [String: JSONValue?]
        /// How many reports the backend had made when it found them: the suite's
        /// ``BackendUpdates/reportCount`` then.
        ///
        /// The suite takes the found changes in after those reports and before the later ones.
        /// A backend that reports from reads made under a lock of its own, and finds changes
        /// under it too, reads the count there (the JSON file does). `nil`: after the reports
        /// that arrived before the suite asked the backend to commit, and before those that
        /// arrived after, which are newer (see ``Backend``).
        public var reportsBefore: Int?

        /// Creates a result.
        public init(foundChanges: [String: JSONValue?] = [:]) {
            self.foundChanges = foundChanges
        }

        /// Creates a result whose found changes were read after `reportsBefore` reports (see
        /// ``reportsBefore``).
        public init(foundChanges: [String: JSONValue?], reportsBefore: Int?) {
            self.foundChanges = foundChanges
            self.reportsBefore = reportsBefore
        }

        /// The changes are stored, and nothing else was found: what most backends return.
        public static var stored: BackendCommitResult { BackendCommitResult() }

        /// Results are equal when they found the same changes.
        public static func == (lhs: BackendCommitResult, rhs: BackendCommitResult) -> Bool {
            lhs.foundChanges == rhs.foundChanges
        }
    }

    /// The outcome of a conditional commit (``Backend/commit(_:ifUnchanged:)``).
    public enum ConditionalCommitResult: Sendable, Equatable {
        /// The keys were unchanged, and the changes are stored.
        case committed
        /// A key had changed, and nothing was stored; `current` holds the current value of every
        /// key that was compared (`nil`: absent).
        case conflict(current: [String: JSONValue?])
    }

    /// Where a backend reports what changed elsewhere, and problems found in the background.
    ///
    /// A suite hands its backend one in ``Backend/startReporting(to:)``. Calls may come from any
    /// thread, one at a time; each returns at once and never calls the backend (observers are
    /// called later, on the suite's delivery queue), so a backend may report while holding a lock
    /// of its own, which keeps its reports in the order of its changes. The conformance checks of `DefaultsBackendTesting` make their own, with
    /// ``init(changed:replaced:report:reconnected:writability:commitWaiting:)``.
    public final class BackendUpdates: Sendable {
        private let onChanged: @Sendable ([String: JSONValue?], UInt64?) -> Void
        private let onReplaced: @Sendable (BackendContents) -> Void
        private let onReport: @Sendable (StorageError) -> Void
        private let onReconnected: @Sendable () -> Void
        private let onWritability: @Sendable (String?) -> Void
        private let onCommitWaiting: @Sendable () -> Void
        /// How many values reports were made: ``reportCount``.
        private let reports = Atomic<Int>(0)
        /// The receiver of the reports, held while a backend acts for it (``whileReceiving(_:)``);
        /// `nil` in updates made with the public initializer, whose receiver is always there.
        private let receiver: (@Sendable () -> AnyObject?)?

        /// Creates a receiver of reports from closures.
        ///
        /// - Parameters:
        ///   - changed: Called by ``changed(_:revision:)``.
        ///   - replaced: Called by ``replaced(by:)``.
        ///   - report: Called by ``report(_:)``.
        ///   - reconnected: Called by ``reconnected()``; nothing by default.
        ///   - writability: Called by ``refusesWrites(because:)``; nothing by default.
        ///   - commitWaiting: Called by ``commitWaitingChanges()``; nothing by default.
        public convenience init(
            changed: @escaping @Sendable ([String: JSONValue?], UInt64?) -> Void,
            replaced: @escaping @Sendable (BackendContents) -> Void,
            report: @escaping @Sendable (StorageError) -> Void,
            reconnected: @escaping @Sendable () -> Void = {},
            writability: @escaping @Sendable (String?) -> Void = { _ in },
            commitWaiting: @escaping @Sendable () -> Void = {}
        ) {
            self.init(
                changed: changed,
                replaced: replaced,
                report: report,
                reconnected: reconnected,
                writability: writability,
                commitWaiting: commitWaiting,
                receiver: nil
            )
        }

        /// Creates a receiver of reports that may go away: `receiver` returns it while it is there.
        init(
            changed: @escaping @Sendable ([String: JSONValue?], UInt64?) -> Void,
            replaced: @escaping @Sendable (BackendContents) -> Void,
            report: @escaping @Sendable (StorageError) -> Void,
            reconnected: @escaping @Sendable () -> Void,
            writability: @escaping @Sendable (String?) -> Void,
            commitWaiting: @escaping @Sendable () -> Void,
            receiver: (@Sendable () -> AnyObject?)?
        ) {
            onChanged = changed
            onReplaced = replaced
            onReport = report
            onReconnected = reconnected
            onWritability = writability
            onCommitWaiting = commitWaiting
            self.receiver = receiver
        }

        /// Runs `body` while the suites these updates report to are kept, and returns what it
        /// returns; once they are all gone, returns `nil` and does not run it.
        ///
        /// For a backend that acts on what it finds besides reporting it: the JSON file reads
        /// itself again, moves a broken file aside and writes its suites' folder inside this, since
        /// a store whose last suite is gone lets that folder go and nothing may act for it after.
        /// Updates made with the public initializer always run `body`.
        ///
        /// ```swift
        /// updates.whileReceiving { reloadAndReport() }
        /// ```
        ///
        /// - Parameter body: What the backend does for the suites.
        /// - Returns: What `body` returned, or `nil` when it did not run.
        public func whileReceiving<Result>(_ body: () throws -> Result) rethrows -> Result? {
            guard let receiver else { return try body() }
            guard let held = receiver() else { return nil }
            return try withExtendedLifetime(held) { try body() }
        }

        /// Reports one change made elsewhere: the new value of each key it touched (`nil`: removed).
        ///
        /// The suite makes one `.external` change event of it, with the keys whose value changed
        /// for its readers. A key this suite changed and has not committed yet keeps its value (the
        /// commit will store it over the other). With a `revision` no greater than one the suite
        /// already has (from ``Backend/load()`` or an earlier report), the report is dropped.
        public func changed(_ values: [String: JSONValue?], revision: UInt64? = nil) {
            reports.add(1, ordering: .relaxed)
            onChanged(values, revision)
        }

        /// Reports that the backend's contents are now `contents`, whole.
        ///
        /// For a backend that lost track of changes and loaded again. The suite reports the
        /// difference from what it holds as one `.external` change event, and takes the contents'
        /// revision as its own even when it is older than one reported before: a backend whose
        /// history began again (a database restored from a backup) says so with this report.
        public func replaced(by contents: BackendContents) {
            reports.add(1, ordering: .relaxed)
            onReplaced(contents)
        }

        /// How many reports of values (``changed(_:revision:)``, ``replaced(by:)``) were made
        /// through this object so far.
        ///
        /// For ``BackendCommitResult/reportsBefore``. Counted as each report is made, before it
        /// is handed on: read by the thread that made a report, it counts that report.
        public var reportCount: Int { reports.load(ordering: .relaxed) }

        /// Reports a problem found in the background; it reaches the suites' error handlers.
        public func report(_ error: StorageError) {
            onReport(error)
        }

        /// Reports that the backend may not be written now, and why; with `nil`, that it may again.
        ///
        /// For a backend whose writability changes while it is open (a file whose folder became
        /// read-only, a database in maintenance, a user whose role changed). Meanwhile the suite
        /// refuses writes in memory, as it does a locked key's: each is given up, not retried, and
        /// reported once per batch (``Defaults/StorageError/readOnlyFile(url:reason:)`` for a file,
        /// ``Defaults/StorageError/writeRefused(backend:reason:)`` for any other backend, with
        /// `reason`); the next ``Defaults/Suite/synchronize()`` throws it. Reads go on as before.
        /// A backend that may always be written never calls it.
        public func refusesWrites(because reason: String?) {
            onWritability(reason)
        }

        /// Reports that changes the suite holds and has not committed should be committed now.
        ///
        /// For a backend that lost or could not take what the suite had written, and can now (a
        /// file put back after it broke). A suite with nothing waiting does nothing; one with a
        /// commit already due keeps it.
        public func commitWaitingChanges() {
            onCommitWaiting()
        }

        /// Reports that the connection changes made elsewhere come by was lost and is back (a
        /// watch connected again, after its first connection): for the suites' activity
        /// observers (``Defaults/Activity/reconnected(backend:)``), which a service counts.
        ///
        /// Not a problem: a connection lost for good is reported with ``report(_:)``.
        public func reconnected() {
            onReconnected()
        }
    }
}

extension Defaults.Backend {
    /// The type's name.
    public var name: String { String(describing: type(of: self)) }

    /// Does nothing.
    public func startReporting(to updates: Defaults.BackendUpdates) {}

    /// Does nothing.
    public func stopReporting() {}

    /// `false`: conditional commits are not offered.
    public var supportsConditionalCommit: Bool { false }

    /// Throws ``Defaults/StorageError/exclusiveCommitUnsupported(backend:)``.
    public func commit(
        _ changes: Defaults.BackendChanges,
        ifUnchanged expected: [String: Defaults.JSONValue?]
    ) throws(Defaults.StorageError) -> Defaults.ConditionalCommitResult {
        throw .exclusiveCommitUnsupported(backend: name)
    }

    /// `false`: the backend keeps no schema.
    public var keepsSchema: Bool { false }

    /// `nil`: the backend keeps no schema.
    public func loadSchema() throws(Defaults.StorageError) -> Defaults.JSONValue? { nil }

    /// Throws ``Defaults/StorageError/backendFailed(backend:reason:)``: the backend keeps no schema.
    public func storeSchema(
        _ document: Defaults.JSONValue,
        ifUnchanged expected: Defaults.JSONValue?
    ) throws(Defaults.StorageError) -> Bool {
        throw .backendFailed(backend: name, reason: "it keeps no schema")
    }
}
