import Configuration
import DefaultsConfiguration
import Foundation
import Testing

/// Watchers hear of every change as soon as the suite commits or sees it.
///
/// Writes here, writes by another process, edits of the file; no timer is involved.
@Suite struct WatchTests {
    /// Expects `value`, read with `try await` outside the macro (which does not accept it here).
    private func expect(
        _ value: Int?,
        equals expected: Int?,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(value == expected, sourceLocation: sourceLocation)
    }

    @Test func aLocalWriteReachesTheWatcherAndOtherKeysDoNot() async throws {
        let suite = Defaults.Suite.inMemory()
        let port = Defaults.Key<Int>("http.port", default: 0, suite: suite)
        suite[port] = 8080
        try await watching(DefaultsProvider(suite: suite), ["http", "port"]) { updates in
            expect(try await next(updates), equals: 8080)
            suite[Defaults.Key<Int>("other", default: 0, suite: suite)] = 1
            suite[port] = 8080  // the same value: no change
            suite[port] = 9090
            expect(try await next(updates), equals: 9090)
            port.reset()
            expect(try await next(updates), equals: nil)
            #expect(updates.isEmpty)
        }
    }

    @Test func aWriteToTheEnclosingObjectReachesTheWatcherOfANestedKey() async throws {
        let suite = Defaults.Suite.inMemory()
        let http = Defaults.Key<[String: Int]>("http", default: [:], suite: suite)
        try await watching(DefaultsProvider(suite: suite), ["http", "port"]) { updates in
            expect(try await next(updates), equals: nil)
            suite[http] = ["port": 8080]
            expect(try await next(updates), equals: 8080)
            suite[http] = ["port": 8080, "timeout": 5]  // the port did not change
            suite[http] = ["port": 9090, "timeout": 5]
            expect(try await next(updates), equals: 9090)
        }
    }

    @Test func aValueOfTheWrongShapeIsAFailureAndThenRecovers() async throws {
        let suite = Defaults.Suite.inMemory()
        let raw = Defaults.Key<Defaults.AnySerializable>("port", default: nil, suite: suite)
        try await watching(DefaultsProvider(suite: suite), ["port"]) { updates in
            expect(try await next(updates), equals: nil)
            suite[raw] = "eighty"
            await #expect(throws: DefaultsProviderError.self) { try await next(updates) }
            suite[raw] = 80
            expect(try await next(updates), equals: 80)
        }
    }

    @Test func anotherProcessesWriteReachesTheWatcher() async throws {
        try await withTemporaryDirectory { configHome in
            let file = configHome.appendingPathComponent("watched/settings.json")
            try save(#"{"http" : {"port" : 8080}}"#, to: file)
            let provider = DefaultsProvider(suite: Defaults.Suite(fileURL: file))
            try await watching(provider, ["http", "port"]) { updates in
                expect(try await next(updates), equals: 8080)
                // The repository's `defaults` command, a process of its own.
                let written = try await run(
                    "defaults",
                    ["write", "watched", "http.port", "9090"],
                    environment: ["XDG_CONFIG_HOME": configHome.path]
                )
                #expect(written.status == 0, "\(written.errorOutput)")
                expect(try await next(updates), equals: 9090)
            }
        }
    }

    @Test func anEditOfTheFileReachesTheWatcher() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("settings.json")
            try save(#"{"http.port" : 8080}"#, to: file)
            let provider = DefaultsProvider(suite: Defaults.Suite(fileURL: file))
            try await watching(provider, ["http", "port"]) { updates in
                expect(try await next(updates), equals: 8080)
                try save(#"{"http" : {"port" : 9090}}"#, to: file)
                expect(try await next(updates), equals: 9090)
            }
        }
    }

    @Test func aConfigReaderWatchingThroughTheProviderSeesAnotherProcessesWrite() async throws {
        try await withTemporaryDirectory { configHome in
            let suite = Defaults.Suite(fileURL: configHome.appendingPathComponent("reader/settings.json"))
            let config = ConfigReader(provider: DefaultsProvider(suite: suite))
            let levels = Mailbox<String>()
            try await config.watchString(forKey: "log.level", default: "info") { updates in
                let copying = Task { for await level in updates { levels.put(level) } }
                defer { copying.cancel() }
                #expect(await levels.take() == "info")
                let written = try await run(
                    "defaults",
                    ["write", "reader", "log.level", "--string", "debug"],
                    environment: ["XDG_CONFIG_HOME": configHome.path]
                )
                #expect(written.status == 0, "\(written.errorOutput)")
                #expect(await levels.take() == "debug")
            }
        }
    }

    @Test func aTransactionIsOneSnapshotHoldingAllOfIt() async throws {
        let suite = Defaults.Suite.inMemory()
        let host = Defaults.Key<String>("http.host", default: "", suite: suite)
        let port = Defaults.Key<Int>("http.port", default: 0, suite: suite)
        let provider = DefaultsProvider(suite: suite)
        let snapshots = Mailbox<any ConfigSnapshot>()
        try await provider.watchSnapshot { updates in
            let copying = Task { for await snapshot in updates { snapshots.put(snapshot) } }
            defer { copying.cancel() }
            let initial = try #require(await snapshots.take())
            suite.transaction {
                suite[host] = "example.com"
                suite[port] = 443
            }
            let after = try #require(await snapshots.take())
            #expect(snapshots.isEmpty)
            #expect(try initial.value(forKey: ["http", "port"], type: .int).value == nil)
            #expect(try after.value(forKey: ["http", "host"], type: .string).value?.content == .string("example.com"))
            #expect(try after.value(forKey: ["http", "port"], type: .int).value?.content == .int(443))
        }
    }

    @Test func aSnapshotNeverSeesLaterChanges() throws {
        let suite = Defaults.Suite.inMemory()
        let port = Defaults.Key<Int>("port", default: 0, suite: suite)
        suite[port] = 1
        let provider = DefaultsProvider(suite: suite)
        let snapshot = provider.snapshot()
        suite[port] = 2
        #expect(try snapshot.value(forKey: ["port"], type: .int).value?.content == .int(1))
        #expect(try provider.snapshot().value(forKey: ["port"], type: .int).value?.content == .int(2))
    }

    @Test func aSnapshotWatcherSeesAnotherProcessesWrite() async throws {
        try await withTemporaryDirectory { configHome in
            let file = configHome.appendingPathComponent("snapshots/settings.json")
            try save(#"{"a" : 1}"#, to: file)
            let provider = DefaultsProvider(suite: Defaults.Suite(fileURL: file))
            let snapshots = Mailbox<any ConfigSnapshot>()
            try await provider.watchSnapshot { updates in
                let copying = Task { for await snapshot in updates { snapshots.put(snapshot) } }
                defer { copying.cancel() }
                _ = try #require(await snapshots.take())
                let written = try await run(
                    "defaults",
                    ["write", "snapshots", "b", "2"],
                    environment: ["XDG_CONFIG_HOME": configHome.path]
                )
                #expect(written.status == 0, "\(written.errorOutput)")
                let after = try #require(await snapshots.take())
                #expect(try after.value(forKey: ["a"], type: .int).value?.content == .int(1))
                #expect(try after.value(forKey: ["b"], type: .int).value?.content == .int(2))
            }
        }
    }
}
