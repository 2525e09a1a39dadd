import Defaults
import DefaultsEtcd
import Foundation
import Testing

/// Migrations over etcd: three processes of a new version open a prefix an old version wrote.
@Suite struct EtcdMigrationTests {
    @Test func threeProcessesOpeningAtOnceMigrateThePrefixOnce() async throws {
        let server = try EtcdServer()
        let endpoints = server.clientURL.absoluteString
        _ = try etcdctl(server, ["put", "/config/app/fontSize", "16"])
        _ = try etcdctl(server, ["put", "/config/app/other", "1"])
        let results = try await runHelpers(server, count: 3) { _ in ["migrate", endpoints, "/config/app/"] }
        var ran = 0
        for result in results {
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.hasSuffix("editor.fontSize 16\n"), "\(result.output)")
            if !result.output.hasPrefix("applied \n") { ran += 1 }
        }
        #expect(ran == 1, "the suite's migration ran in \(ran) processes")
        let fresh = Defaults.Suite(etcd: [server.clientURL], prefix: "/config/app/", cache: .none)
        #expect(
            fresh.storedValues() == [
                "editor.fontSize": .number("16"), "migrationRuns": .number("1"), "other": .number("1"),
            ]
        )
        #expect(Set(fresh.appliedMigrations) == ["2: count the runs", "editor.fontSize from fontSize"])
        #expect(fresh.appliedMigrations.count == 2)
        // Where an operator finds the record.
        let record = try etcdctl(server, ["get", "--print-value-only", "/config/app/.defaults-migrations"])
        #expect(record.contains(#""migrations""#) && record.contains("editor.fontSize from fontSize"), "\(record)")
    }

    @Test func aPrefixOfMoreKeysThanATransactionMayCompareMigratesAllTheSame() async throws {
        let server = try EtcdServer()
        let endpoints = server.clientURL.absoluteString
        let written = try await runHelper(server, ["write-burst", endpoints, "/config/big/", "setting", "300"])
        #expect(written.status == 0, "\(written.output)")
        _ = try etcdctl(server, ["put", "/config/big/fontSize", "16"])
        let result = try await runHelper(server, ["migrate", endpoints, "/config/big/"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output == "applied 2: count the runs\neditor.fontSize 16\n", "\(result.output)")
        let fresh = Defaults.Suite(etcd: [server.clientURL], prefix: "/config/big/", cache: .none)
        #expect(fresh.storedValues().count == 302)
        #expect(fresh.storedValue(named: "fontSize") == nil)
    }

    @Test func fiveProcessesOpeningAtOnceReadTheMigratedValuesFromTheStart() async throws {
        let server = try EtcdServer()
        let endpoints = server.clientURL.absoluteString
        _ = try etcdctl(server, ["put", "/config/svc/listenPort", "42"])
        _ = try etcdctl(server, ["put", "/config/svc/darkMode", "true"])
        _ = try etcdctl(server, ["put", "/config/svc/window", #"{"width": 1024, "height": 768}"#])
        let results = try await runHelpers(server, count: 5) { _ in ["open-migrating", endpoints, "/config/svc/"] }
        for result in results {
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output == "read 42 dark 1024x768 false\nread 42 dark 1024x768 false\n", "\(result.output)")
        }
        let fresh = Defaults.Suite(etcd: [server.clientURL], prefix: "/config/svc/", cache: .none)
        #expect(
            fresh.storedValues() == [
                "port": .number("42"), "theme": .string("dark"),
                "window": .object(["width": .number("1024"), "height": .number("768"), "maximized": .bool(false)]),
            ]
        )
        #expect(fresh.appliedMigrations.count == 3)
    }

    @Test func aSuiteMigrationsBodyRunsInOneProcessOfThreeOpeningAtOnce() async throws {
        let server = try EtcdServer()
        let endpoints = server.clientURL.absoluteString
        _ = try etcdctl(server, ["put", "/config/app/fontSize", "16"])
        let log = server.directory.appendingPathComponent("runs.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        // All three migrate at once, whenever each started, and each is in the body a while.
        let environment = [
            "DEFAULTS_TEST_MIGRATION_RUNS_LOG": log.path, "DEFAULTS_TEST_MIGRATION_PAUSE_MS": "300",
            "DEFAULTS_TEST_START_AT": String(Date().timeIntervalSince1970 + 5),
        ]
        let results = try await runHelpers(server, count: 3, environment: environment) { _ in
            ["migrate", endpoints, "/config/app/"]
        }
        for result in results { #expect(result.status == 0, "\(result.output)") }
        let runs = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        #expect(runs.count == 1, "the body ran \(runs.count) times: \(runs)")
    }
}
