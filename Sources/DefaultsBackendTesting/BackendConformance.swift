import Defaults
import Foundation

/// Checks a ``Defaults/Backend`` against the guarantees its protocol states, from any test
/// framework: ``run()`` throws a ``Failure`` listing every check that did not hold.
///
/// Give it a way to make backends over a *space*: a fresh, empty place to keep values, named by a
/// string the checks choose (a key prefix, a file name, a table). Two backends made over the same
/// space must share what they store, as two processes or two machines do; backends over different
/// spaces must not. Each check uses spaces of its own.
///
/// ```swift
/// @Test func conformsToTheBackendProtocol() throws {
///     let cluster = SharedTable()
///     try BackendConformance { space in SharedDictionaryBackend(cluster, space: space) }.run()
/// }
/// ```
///
/// What it checks:
/// - a new space loads empty; what one backend commits, another loads, value for value;
/// - commits merge per key: two backends that commit different keys lose neither;
/// - `nil` removes a key, and ``Defaults/BackendChanges/removesEverything`` removes keys any
///   backend wrote;
/// - a conditional commit stores only when every key compared is unchanged, and on a conflict
///   stores nothing and returns the current values; a backend without it says so by throwing
///   ``Defaults/StorageError/exclusiveCommitUnsupported(backend:)``;
/// - a commit of three keys by one backend reaches another that reports as one report of three
///   keys; a removal as `nil`; the reporting backend's own commits never come back to it;
///   revisions, when given, grow (for a backend that cannot see changes made elsewhere, made with
///   `seesChangesMadeElsewhere: false`: that it reports nothing at all);
/// - through a suite: a write, after `synchronize()`, is what another backend loads, and an
///   `exclusiveTransaction` run from two suites over two backends loses no increment;
/// - with ``init(timeout:makeBackend:makeUnreachableBackend:)``'s last argument, a backend that
///   cannot reach its storage throws a ``Defaults/StorageError`` from load and commit, and a
///   suite over it reports the failure to its error handler and keeps the value in memory.
public struct BackendConformance: Sendable {
    /// Every check that did not hold, one line each.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// One line per failed check: its name and what was seen.
        public let failures: [String]

        /// The failures, one per line.
        public var description: String {
            "\(failures.count) backend conformance check(s) failed:\n" + failures.joined(separator: "\n")
        }
    }

    private let timeout: Duration
    private let makeBackend: @Sendable (String) throws -> any Defaults.Backend
    private let makeUnreachableBackend: (@Sendable (String) throws -> any Defaults.Backend)?
    private let seesChangesMadeElsewhere: Bool

    /// Creates the checks.
    ///
    /// - Parameters:
    ///   - timeout: How long to wait for a report that must come; a report that must not come is
    ///     checked against one that must, sent after it, so no check waits out the timeout when the
    ///     backend conforms. Only a backend that does not conform waits it out, so the default
    ///     (60 s) is long enough for a loaded CI machine.
    ///   - seesChangesMadeElsewhere: `false` for a backend whose storage announces no changes (a
    ///     Foundation `UserDefaults` on Linux): the reports are checked to be none at all.
    ///   - makeBackend: Makes a backend over the space named by its argument.
    ///   - makeUnreachableBackend: Makes a backend whose storage cannot be reached (a closed port,
    ///     a path it cannot create); `nil` skips the checks of failures.
    public init(
        timeout: Duration = .seconds(60),
        seesChangesMadeElsewhere: Bool = true,
        makeBackend: @escaping @Sendable (_ space: String) throws -> any Defaults.Backend,
        makeUnreachableBackend: (@Sendable (_ space: String) throws -> any Defaults.Backend)? = nil
    ) {
        self.timeout = timeout
        self.seesChangesMadeElsewhere = seesChangesMadeElsewhere
        self.makeBackend = makeBackend
        self.makeUnreachableBackend = makeUnreachableBackend
    }

    /// Runs every check.
    ///
    /// - Throws: ``Failure`` naming each check that did not hold, or what `makeBackend` threw.
    public func run() throws {
        var failures: [String] = []
        let checks: [(String, () throws -> [String])] = [
            ("load of a new space", loadsEmpty),
            ("commit, then load elsewhere", commitsAndLoads),
            ("per-key merge", mergesPerKey),
            ("removal", removes),
            ("removesEverything", removesEverything),
            ("conditional commit", commitsConditionally),
            ("reports", reportsChanges),
            ("through a suite", worksThroughASuite),
            ("failures", failsClearly),
        ]
        for (name, check) in checks {
            do {
                failures += try check().map { "\(name): \($0)" }
            } catch {
                failures.append("\(name): threw \(error)")
            }
        }
        if !failures.isEmpty { throw Failure(failures: failures) }
    }

    // MARK: - Checks

    private func space(_ name: String) -> String {
        "conformance-\(name)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    private func loadsEmpty() throws -> [String] {
        let contents = try makeBackend(space("empty")).load()
        return contents.values.isEmpty ? [] : ["a new space loaded \(contents.values)"]
    }

    private func commitsAndLoads() throws -> [String] {
        let space = space("round-trip")
        let values: [String: Defaults.JSONValue] = [
            "int": .number("9223372036854775807"),
            "double": .number("0.1"),
            "string": .string("héllo \"quoted\" \n line"),
            "bool": .bool(true),
            "null": .null,
            "array": .array([.number("1"), .string("two"), .array([])]),
            "object": .object(["nested": .object(["deep": .number("-1.5e-7")]), "empty": .object([:])]),
        ]
        try makeBackend(space).commit(Defaults.BackendChanges(values: values.mapValues { $0 }))
        let loaded = try makeBackend(space).load().values
        return loaded == values ? [] : ["committed \(values), another backend loaded \(loaded)"]
    }

    private func mergesPerKey() throws -> [String] {
        let space = space("merge")
        let first = try makeBackend(space)
        let second = try makeBackend(space)
        _ = try first.load()
        _ = try second.load()
        try first.commit(Defaults.BackendChanges(values: ["a": .number("1")]))
        let found = try second.commit(Defaults.BackendChanges(values: ["b": .number("2")])).foundChanges
        var failures: [String] = []
        // What a commit finds is what others changed, never its own keys: a = 1, or nothing.
        if !found.isEmpty && found != ["a": .number("1")] {
            failures.append("a commit of b, after another committed a = 1, found \(found)")
        }
        let loaded = try makeBackend(space).load().values
        let expected: [String: Defaults.JSONValue] = ["a": .number("1"), "b": .number("2")]
        if loaded != expected { failures.append("two backends committed a and b; loaded \(loaded)") }
        return failures
    }

    private func removes() throws -> [String] {
        let space = space("remove")
        let backend = try makeBackend(space)
        try backend.commit(Defaults.BackendChanges(values: ["a": .number("1"), "b": .number("2")]))
        try backend.commit(Defaults.BackendChanges(values: ["a": nil]))
        let loaded = try makeBackend(space).load().values
        return loaded == ["b": .number("2")] ? [] : ["removed a of a and b; loaded \(loaded)"]
    }

    private func removesEverything() throws -> [String] {
        let space = space("remove-all")
        let first = try makeBackend(space)
        let second = try makeBackend(space)
        try first.commit(Defaults.BackendChanges(values: ["a": .number("1")]))
        try second.commit(Defaults.BackendChanges(values: ["b": .number("2")]))
        try first.commit(Defaults.BackendChanges(values: ["c": .number("3")], removesEverything: true))
        let loaded = try makeBackend(space).load().values
        return loaded == ["c": .number("3")]
            ? [] : ["removed everything (a, and b written by another) and wrote c; loaded \(loaded)"]
    }

    private func commitsConditionally() throws -> [String] {
        let space = space("conditional")
        let mine = try makeBackend(space)
        let theirs = try makeBackend(space)
        guard mine.supportsConditionalCommit else {
            do {
                _ = try mine.commit(Defaults.BackendChanges(values: ["n": .number("1")]), ifUnchanged: [:])
                return ["supportsConditionalCommit is false, yet a conditional commit did not throw"]
            } catch .exclusiveCommitUnsupported {
                let loaded = try makeBackend(space).load().values
                return loaded.isEmpty ? [] : ["a refused conditional commit stored \(loaded)"]
            } catch {
                return [
                    "supportsConditionalCommit is false; a conditional commit threw \(error), not exclusiveCommitUnsupported"
                ]
            }
        }
        var failures: [String] = []
        func commit(
            _ backend: any Defaults.Backend,
            _ values: [String: Defaults.JSONValue?],
            ifUnchanged expected: [String: Defaults.JSONValue?]
        ) throws -> Defaults.ConditionalCommitResult {
            try backend.commit(Defaults.BackendChanges(values: values), ifUnchanged: expected)
        }
        // An absent key compared as absent.
        var result = try commit(mine, ["n": .number("1")], ifUnchanged: ["n": nil])
        if result != .committed { failures.append("n absent, compared as absent: \(result), not committed") }
        result = try commit(mine, ["n": .number("2")], ifUnchanged: ["n": .number("1")])
        if result != .committed { failures.append("n = 1, compared with 1: \(result), not committed") }
        try theirs.commit(Defaults.BackendChanges(values: ["n": .number("5")]))
        result = try commit(mine, ["n": .number("3"), "other": .bool(true)], ifUnchanged: ["n": .number("2")])
        if result != .conflict(current: ["n": .number("5")]) {
            failures.append("n changed to 5 elsewhere, compared with 2: \(result), not a conflict with n = 5")
        }
        result = try commit(mine, ["m": .number("1")], ifUnchanged: ["n": nil])
        if result != .conflict(current: ["n": .number("5")]) {
            failures.append("n = 5, compared as absent: \(result), not a conflict with n = 5")
        }
        try theirs.commit(Defaults.BackendChanges(values: ["n": nil]))
        result = try commit(mine, ["m": .number("2")], ifUnchanged: ["n": .number("5")])
        if result != .conflict(current: ["n": nil]) {
            failures.append("n removed elsewhere, compared with 5: \(result), not a conflict with n absent")
        }
        result = try commit(mine, ["m": .number("3")], ifUnchanged: ["n": nil])
        if result != .committed { failures.append("n absent again, compared as absent: \(result), not committed") }
        let loaded = try makeBackend(space).load().values
        if loaded != ["m": .number("3")] {
            failures.append("after the commits, loaded \(loaded), not m = 3 alone (did a conflict store something?)")
        }
        return failures
    }

    private func reportsChanges() throws -> [String] {
        let space = space("reports")
        let watcher = try makeBackend(space)
        let writer = try makeBackend(space)
        let loaded = try watcher.load()
        let reports = ReportLog()
        watcher.startReporting(to: reports.updates)
        defer { watcher.stopReporting() }
        var failures: [String] = []
        // The watcher's own commit, which must not come back, then the writer's three keys at once.
        try watcher.commit(Defaults.BackendChanges(values: ["own": .string("mine")]))
        try writer.commit(
            Defaults.BackendChanges(values: ["x": .number("1"), "y": .number("2"), "z": .number("3")])
        )
        guard seesChangesMadeElsewhere else {
            // Nothing comes, so nothing marks when to stop looking: what came by now is checked.
            let all = reports.all
            return all.isEmpty ? [] : ["a backend that sees no changes made elsewhere reported \(all.map(\.values))"]
        }
        guard let first = reports.wait(forCount: 1, timeout: timeout) else {
            return ["a commit of x, y and z by another backend was not reported within \(timeout)"]
        }
        let threeKeys: [String: Defaults.JSONValue?] = ["x": .number("1"), "y": .number("2"), "z": .number("3")]
        if first.values == ["own": .string("mine")] {
            failures.append("the backend reported its own commit back to itself")
        } else if first.values != threeKeys {
            failures.append("one commit of x, y and z was reported as \(first.values), not one report of the three")
        }
        try writer.commit(Defaults.BackendChanges(values: ["x": nil]))
        if let second = reports.wait(forCount: 2, timeout: timeout) {
            if second.values != ["x": nil] {
                failures.append("a removal of x by another backend was reported as \(second.values)")
            }
            let revisions = [loaded.revision, first.revision, second.revision]
            if let a = revisions[0], let b = revisions[1], let c = revisions[2], !(a < b && b < c) {
                failures.append("revisions did not grow: load \(a), then reports \(b), \(c)")
            }
        } else {
            failures.append("a removal by another backend was not reported within \(timeout)")
        }
        let all = reports.all
        if all.contains(where: { $0.values["own"] != nil }) {
            failures.append("the backend reported its own commit back to itself")
        }
        if !reports.problems.isEmpty { failures.append("problems reported: \(reports.problems)") }
        return failures
    }

    private func worksThroughASuite() throws -> [String] {
        let space = space("suite")
        var failures: [String] = []
        let problems = ReportLog()
        let handler: @Sendable (Defaults.StorageError) -> Void = { problems.updates.report($0) }
        do {
            let suite = Defaults.Suite(backend: try makeBackend(space), errorHandler: handler)
            let key = Defaults.Key<Int>("count", default: 0, suite: suite)
            suite[key] = 41
            try suite.synchronize()
            let loaded = try makeBackend(space).load().values
            if loaded["count"] != .number("41") {
                failures.append("a suite wrote 41 and synchronized; loaded \(loaded)")
            }
        }
        let supportsExclusive = try makeBackend(space).supportsConditionalCommit
        guard supportsExclusive else { return failures + problems.problems.map { "reported: \($0)" } }
        // Two suites over two backends (two machines), each adding 50 in exclusive transactions.
        let suites = try (0..<2).map { _ in Defaults.Suite(backend: try makeBackend(space), errorHandler: handler) }
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            let suite = suites[index]
            let key = Defaults.Key<Int>("count", default: 0, suite: suite)
            for _ in 0..<50 {
                do {
                    try suite.exclusiveTransaction { suite[key] += 1 }
                } catch {
                    problems.updates.report(
                        .backendFailed(backend: "check", reason: "exclusiveTransaction threw \(error)")
                    )
                }
            }
        }
        let loaded = try makeBackend(space).load().values
        if loaded["count"] != .number("141") {
            failures.append(
                "two suites each added 50 to 41 in exclusive transactions; loaded \(loaded["count"] as Any)"
            )
        }
        return failures + problems.problems.map { "reported: \($0)" }
    }

    private func failsClearly() throws -> [String] {
        guard let makeUnreachableBackend else { return [] }
        var failures: [String] = []
        let backend = try makeUnreachableBackend(space("unreachable"))
        do {
            let contents = try backend.load()
            if !contents.values.isEmpty { failures.append("an unreachable backend loaded \(contents.values)") }
        } catch {
            // A StorageError, as the signature promises: nothing more to check.
        }
        do {
            try backend.commit(Defaults.BackendChanges(values: ["a": .number("1")]))
            failures.append("a commit to an unreachable backend did not throw")
        } catch {}
        let problems = ReportLog()
        let suite = Defaults.Suite(
            backend: try makeUnreachableBackend(space("unreachable-suite")),
            errorHandler: { problems.updates.report($0) }
        )
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        suite[key] = 7
        do {
            try suite.synchronize()
            failures.append("synchronize() over an unreachable backend did not throw")
        } catch {}
        if problems.problems.isEmpty { failures.append("the suite's error handler was not told") }
        if suite[key] != 7 { failures.append("the value written was not kept in memory: read \(suite[key])") }
        return failures
    }
}

/// Reports a backend made, kept in order, and waited for.
private final class ReportLog: @unchecked Sendable {  // every stored property is guarded by `condition`
    struct Report {
        let values: [String: Defaults.JSONValue?]
        let revision: UInt64?
    }

    private let condition = NSCondition()
    private var reports: [Report] = []
    private var errors: [Defaults.StorageError] = []

    var updates: Defaults.BackendUpdates {
        Defaults.BackendUpdates(
            changed: { [self] values, revision in
                condition.withLock {
                    reports.append(Report(values: values, revision: revision))
                    condition.broadcast()
                }
            },
            replaced: { [self] contents in
                condition.withLock {
                    reports.append(Report(values: contents.values.mapValues { $0 }, revision: contents.revision))
                    condition.broadcast()
                }
            },
            report: { [self] error in condition.withLock { errors.append(error) } }
        )
    }

    var all: [Report] { condition.withLock { reports } }
    var problems: [Defaults.StorageError] { condition.withLock { errors } }

    /// Waits until `count` reports have come; returns the last of them, or `nil` at the timeout.
    func wait(forCount count: Int, timeout: Duration) -> Report? {
        let deadline = Date()
            .addingTimeInterval(Double(timeout.components.seconds) + 1e-18 * Double(timeout.components.attoseconds))
        return condition.withLock {
            while reports.count < count {
                if !condition.wait(until: deadline) { return nil }
            }
            return reports[count - 1]
        }
    }
}
