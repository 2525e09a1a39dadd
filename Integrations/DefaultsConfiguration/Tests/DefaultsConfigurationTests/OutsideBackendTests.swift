import Configuration
import DefaultsConfiguration
import Synchronization
import Testing

/// A store of settings that this test target owns, written as a user of `Defaults` would write a
/// backend: against the public `Defaults.Backend` protocol only.
///
/// Its `changeElsewhere(_:)` plays another party (a fleet's key-value store, another service)
/// changing keys: the table takes the change and reports it to the suite, as a watch would.
final class SettingsTable: Defaults.Backend {
    private struct Table {
        var rows: [String: Defaults.JSONValue]
        var revision: UInt64 = 1
        var reportsTo: Defaults.BackendUpdates?
    }

    private let table: Mutex<Table>

    init(_ rows: [String: Defaults.JSONValue]) {
        table = Mutex(Table(rows: rows))
    }

    var name: String { "settings table" }

    /// The rows now.
    var rows: [String: Defaults.JSONValue] { table.withLock { $0.rows } }

    func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        table.withLock { Defaults.BackendContents(values: $0.rows, revision: $0.revision) }
    }

    func startReporting(to updates: Defaults.BackendUpdates) {
        table.withLock { $0.reportsTo = updates }
    }

    func stopReporting() {
        table.withLock { $0.reportsTo = nil }
    }

    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult {
        table.withLock { table in
            table.rows = changes.applied(to: table.rows)
            table.revision += 1
        }
        return .stored
    }

    /// Another party sets each key of `changes` (`nil` removes it), all at once.
    ///
    /// Reported under the table's lock, so reports keep the order of the changes; a report returns
    /// at once and never calls back into the table.
    func changeElsewhere(_ changes: [String: Defaults.JSONValue?]) {
        table.withLock { table in
            for (key, value) in changes { table.rows[key] = value }
            table.revision += 1
            table.reportsTo?.changed(changes, revision: table.revision)
        }
    }
}

/// The provider over a suite whose values live in a backend written outside the `Defaults`
/// package: reads, watches and snapshots work as over a file.
@Suite struct OutsideBackendTests {
    private static let startingRows: [String: Defaults.JSONValue] = [
        "http.port": .number("8080"),
        "db": .object(["host": .string("db.internal"), "pool": .number("4")]),
        "log.level": .string("info"),
    ]

    @Test func valuesAreReadThroughTheProviderAndWritesReachTheBackend() throws {
        let table = SettingsTable(Self.startingRows)
        let suite = Defaults.Suite(backend: table)
        let provider = DefaultsProvider(suite: suite)
        let config = ConfigReader(provider: provider)
        #expect(config.int(forKey: "http.port") == 8080)
        #expect(config.string(forKey: "db.host") == "db.internal")
        #expect(config.int(forKey: "db.pool") == 4)
        #expect(config.string(forKey: "log.level") == "info")
        #expect(config.int(forKey: "missing", default: 7) == 7)
        #expect(provider.providerName == "DefaultsProvider[\(suite.description)]")
        #expect(provider.providerName.contains("settings table"))

        // A write through the suite is read through the provider at once, and committed to the table.
        suite[Defaults.Key<Int>("http.port", default: 0, suite: suite)] = 9090
        #expect(config.int(forKey: "http.port") == 9090)
        try suite.synchronize()
        #expect(table.rows["http.port"] == .number("9090"))
    }

    @Test func aChangeMadeElsewhereReachesAWatchOfTheProvider() async throws {
        let table = SettingsTable(Self.startingRows)
        let provider = DefaultsProvider(suite: Defaults.Suite(backend: table))
        try await watching(provider, ["http", "port"]) { ports in
            // NB: read outside the macro, which does not take `try await` here.
            var port = try await next(ports)
            #expect(port == 8080)
            table.changeElsewhere(["log.level": .string("debug")])  // not the watched key
            table.changeElsewhere(["http.port": .number("9090")])
            port = try await next(ports)
            #expect(port == 9090)
            table.changeElsewhere(["http.port": nil])
            port = try await next(ports)
            #expect(port == nil)
            #expect(ports.isEmpty)
        }
    }

    @Test func aConfigReaderWatchSeesAChangeMadeElsewhere() async throws {
        let table = SettingsTable(Self.startingRows)
        let config = ConfigReader(provider: DefaultsProvider(suite: Defaults.Suite(backend: table)))
        let levels = Mailbox<String>()
        try await config.watchString(forKey: "log.level", default: "warning") { updates in
            let copying = Task { for await level in updates { levels.put(level) } }
            defer { copying.cancel() }
            #expect(await levels.take() == "info")
            table.changeElsewhere(["log.level": .string("debug")])
            #expect(await levels.take() == "debug")
        }
    }

    @Test func theProvidersSnapshotHoldsTheBackendsValues() throws {
        let provider = DefaultsProvider(suite: Defaults.Suite(backend: SettingsTable(Self.startingRows)))
        let snapshot = provider.snapshot()
        #expect(snapshot.providerName == provider.providerName)
        #expect(try snapshot.value(forKey: ["http", "port"], type: .int).value?.content == .int(8080))
        #expect(try snapshot.value(forKey: ["db", "host"], type: .string).value?.content == .string("db.internal"))
        #expect(try snapshot.value(forKey: ["db", "pool"], type: .int).value?.content == .int(4))
        #expect(try snapshot.value(forKey: ["log", "level"], type: .string).value?.content == .string("info"))
        #expect(try snapshot.value(forKey: ["missing"], type: .int).value == nil)
    }

    @Test func aChangeOfSeveralKeysMadeElsewhereIsOneSnapshotAndOldSnapshotsKeepTheirValues() async throws {
        let table = SettingsTable(Self.startingRows)
        let provider = DefaultsProvider(suite: Defaults.Suite(backend: table))
        let before = provider.snapshot()
        let snapshots = Mailbox<any ConfigSnapshot>()
        try await provider.watchSnapshot { updates in
            let copying = Task { for await snapshot in updates { snapshots.put(snapshot) } }
            defer { copying.cancel() }
            let initial = try #require(await snapshots.take())
            #expect(try initial.value(forKey: ["http", "port"], type: .int).value?.content == .int(8080))
            table.changeElsewhere(["http.port": .number("9090"), "db": .object(["host": .string("db.replica")])])
            let after = try #require(await snapshots.take())
            #expect(snapshots.isEmpty)
            #expect(try after.value(forKey: ["http", "port"], type: .int).value?.content == .int(9090))
            #expect(try after.value(forKey: ["db", "host"], type: .string).value?.content == .string("db.replica"))
            #expect(try after.value(forKey: ["db", "pool"], type: .int).value == nil)
            #expect(try after.value(forKey: ["log", "level"], type: .string).value?.content == .string("info"))
        }
        // Taken before the change: it never sees it. The provider's snapshot now does.
        #expect(try before.value(forKey: ["http", "port"], type: .int).value?.content == .int(8080))
        #expect(try before.value(forKey: ["db", "host"], type: .string).value?.content == .string("db.internal"))
        let now = provider.snapshot()
        #expect(try now.value(forKey: ["http", "port"], type: .int).value?.content == .int(9090))
        #expect(try now.value(forKey: ["db", "host"], type: .string).value?.content == .string("db.replica"))
    }
}
