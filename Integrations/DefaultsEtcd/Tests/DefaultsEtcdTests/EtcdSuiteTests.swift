import Defaults
import DefaultsBackendTesting
import DefaultsEtcd
import DefaultsObservation
import Foundation
import Synchronization
import Testing

/// Values in order, and a wait for the count to reach a number, for observers called on other threads.
final class Received<Element: Sendable>: Sendable {
    private let state = Mutex<[Element]>([])
    private let condition = NSCondition()

    func append(_ element: Element) {
        condition.lock()
        state.withLock { $0.append(element) }
        condition.broadcast()
        condition.unlock()
    }

    var all: [Element] { state.withLock { $0 } }

    /// Waits, off the pool, until `count` elements came, or 60 s passed (a deadline against a hang,
    /// longer than a whole run: other tests can hold the pool's threads for most of one).
    func wait(forCount count: Int) async -> Bool {
        await wait { $0.count >= count }
    }

    /// Waits, as ``wait(forCount:)``, until what came meets `condition`.
    func wait(until met: @escaping @Sendable ([Element]) -> Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                let deadline = Date() + 60
                condition.lock()
                while !met(all), condition.wait(until: deadline) {}
                let reached = met(all)
                condition.unlock()
                continuation.resume(returning: reached)
            }
        }
    }
}

/// Suites in a real etcd: what an operator sees, what reaches observers, and no lost writes.
@Suite(.serialized) struct EtcdSuiteTests {
    @Test func passesTheBackendConformanceChecks() throws {
        let server = try EtcdServer()
        // NB: held for the test, so no etcd another test starts can take it.
        let closed = try ReservedPort()
        let closedPort = closed.port
        try BackendConformance(
            makeBackend: { space in EtcdBackend(endpoints: [server.clientURL], prefix: "/\(space)/", cache: .none) },
            makeUnreachableBackend: { space in
                EtcdBackend(
                    endpoints: [URL(string: "http://127.0.0.1:\(closedPort)")!],
                    prefix: "/\(space)/",
                    timeout: .seconds(2),
                    cache: .none
                )
            }
        )
        .run()
        withExtendedLifetime((server, closed)) {}
    }

    @Test func settingsAreReadableTextInEtcdAndAnOperatorsPutReachesObserversOnce() async throws {
        let server = try EtcdServer()
        let suite = Defaults.Suite(etcd: [server.clientURL], prefix: "/config/billing/", cache: .none)
        let logLevel = Defaults.Key<String>("logLevel", default: "info", suite: suite)
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        suite[logLevel] = "warning"
        suite[rateLimit] = 250
        try suite.synchronize()
        let listing = try etcdctl(server, ["get", "--prefix", "/config/billing/"])
        #expect(listing == "/config/billing/logLevel\n\"warning\"\n/config/billing/rateLimit\n250\n")

        let told = Received<Defaults.KeyChange<String>>()
        let observation = Defaults.observe(logLevel, options: []) { told.append($0) }
        _ = try etcdctl(server, ["put", "/config/billing/logLevel", "\"debug\""])
        #expect(await told.wait(forCount: 1))
        #expect(told.all == [Defaults.KeyChange(oldValue: "warning", newValue: "debug")])
        #expect(suite[logLevel] == "debug")
        // The suite's own writes, then an operator's: one event each, and the own ones are not
        // taken back in over the later one.
        let events = Received<Int>()
        let suiteObservation = Defaults.observe(suite: suite, options: []) { events.append(suite[rateLimit]) }
        suite[rateLimit] = 300
        try suite.synchronize()
        suite[rateLimit] = 301
        try suite.synchronize()
        _ = try etcdctl(server, ["put", "/config/billing/marker", "1"])
        #expect(await events.wait(forCount: 3))
        #expect(events.all == [300, 301, 301])
        #expect(suite.storedValue(named: "marker") == .number("1"))
        _ = (observation, suiteObservation)
    }

    @Test func oneEtcdTransactionOfThreeKeysIsOneEventOfThreeKeys() async throws {
        let server = try EtcdServer()
        let suite = Defaults.Suite(etcd: [server.clientURL], prefix: "/config/app/", cache: .none)
        let keys = ["a", "b", "c"].map { Defaults.Key<Int>($0, default: 0, suite: suite) }
        let events = Received<[Int]>()
        let observation = Defaults.observe(keys: keys, options: []) { events.append(keys.map { suite[$0] }) }
        let helper = try await runHelper(
            server,
            [
                "write", server.clientURL.absoluteString, "/config/app/", "a=1", "b=2", "c=3",
            ]
        )
        #expect(helper.status == 0, "\(helper.output)")
        #expect(await events.wait(forCount: 1))
        #expect(events.all == [[1, 2, 3]])
        #expect(suite.storedValue(named: "b") == .number("2"))
        _ = observation
    }

    @Test func fourProcessesIncrementingInExclusiveTransactionsLoseNothing() async throws {
        let server = try EtcdServer()
        let endpoints = server.clientURL.absoluteString
        let results = try await runHelpers(server, count: 4) { _ in
            ["increment", endpoints, "/config/counter/", "count", "250"]
        }
        for result in results { #expect(result.status == 0, "\(result.output)") }
        let fresh = Defaults.Suite(etcd: [server.clientURL], prefix: "/config/counter/", cache: .none)
        #expect(fresh.storedValue(named: "count") == .number("1000"))
    }

    @Test func tenProcessesWritingFiveHundredDistinctKeysEachLoseNone() async throws {
        let server = try EtcdServer()
        let endpoints = server.clientURL.absoluteString
        let results = try await runHelpers(server, count: 10) { index in
            ["write-burst", endpoints, "/config/many/", "p\(index)", "500"]
        }
        for result in results { #expect(result.status == 0, "\(result.output)") }
        let stored = Defaults.Suite(etcd: [server.clientURL], prefix: "/config/many/", cache: .none).storedValues()
        #expect(stored.count == 5_000)
        for process in 0..<10 {
            for index in 0..<500 where stored["p\(process)-\(index)"] != .number(String(index)) {
                Issue.record("p\(process)-\(index) is \(String(describing: stored["p\(process)-\(index)"]))")
            }
        }
    }

    @Test func aValueThatIsNotJSONOrNotOfItsTypeIsReportedReadsTheDefaultAtStartAndTheLastGoodValueLater() async throws
    {
        let server = try EtcdServer()
        _ = try etcdctl(server, ["put", "/config/typo/logLevel", "debug"])
        let problems = Received<String>()
        let suite = Defaults.Suite(etcd: [server.clientURL], prefix: "/config/typo/", cache: .none) {
            problems.append("\($0)")
        }
        let logLevel = Defaults.Key<String>("logLevel", default: "info", suite: suite)
        #expect(suite[logLevel] == "info")
        #expect(await problems.wait(forCount: 1))
        #expect(problems.all.first?.contains("/config/typo/logLevel is not JSON") == true, "\(problems.all)")
        // Mended by the operator: the value arrives.
        let told = Received<String>()
        let observation = Defaults.observe(logLevel, options: []) { told.append($0.newValue) }
        _ = try etcdctl(server, ["put", "/config/typo/logLevel", "\"debug\""])
        #expect(await told.wait(forCount: 1))
        #expect(suite[logLevel] == "debug")

        // A typo while the suite runs: reported; the last good value stays, and the next good one
        // is taken (an operator's slip must not send a fleet back to its defaults).
        _ = try etcdctl(server, ["put", "/config/typo/logLevel", "warning"])
        #expect(await problems.wait(forCount: 2))
        #expect(problems.all.last?.contains("/config/typo/logLevel is not JSON") == true, "\(problems.all)")
        #expect(suite[logLevel] == "debug")
        _ = try etcdctl(server, ["put", "/config/typo/logLevel", "\"warning\""])
        #expect(await told.wait(forCount: 2))
        #expect(told.all == ["debug", "warning"])

        // JSON of another type (a number for text): the same, by the store's own policy.
        _ = try etcdctl(server, ["put", "/config/typo/logLevel", "5"])
        #expect(await problems.wait(forCount: 3))
        #expect(
            problems.all.last?
                .contains(#""logLevel" was changed elsewhere to 5, which is not a value of type Swift.String"#)
                == true,
            "\(problems.all)"
        )
        #expect(suite[logLevel] == "warning")
        _ = try etcdctl(server, ["put", "/config/typo/logLevel", "\"error\""])
        #expect(await told.wait(forCount: 3))
        #expect(told.all == ["debug", "warning", "error"])
        #expect(problems.all.count == 3, "\(problems.all)")
        _ = observation
    }
}

/// The example service, run as a person would: three instances against one etcd, each reloading
/// once per change whoever made it, and once for a burst.
@Suite(.serialized) struct EtcdServiceExampleTests {
    @Test func threeInstancesEachReloadOncePerChangeAndOncePerBurst() async throws {
        let server = try EtcdServer()
        let environment = [
            "ETCD_ENDPOINTS": server.clientURL.absoluteString,
            "XDG_CACHE_HOME": server.directory.appendingPathComponent("cache").path,
        ]
        let set = try await runProduct("etcd-service", ["--set", "250"], environment: environment)
        #expect(set.output == "rateLimit=250 written\n", "\(set.output)")

        let instances = try (0..<3)
            .map { _ in
                try RunningProduct("etcd-service", ["--reloads", "4"], environment: environment)
            }
        defer { for instance in instances { instance.stop() } }
        /// The next line of every instance.
        func nextLines() async -> [String?] {
            var lines: [String?] = []
            for instance in instances { lines.append(await instance.nextLine()) }
            return lines
        }
        #expect(await nextLines() == Array(repeating: "rateLimit=250 logLevel=info", count: 3))

        // An operator's put.
        _ = try etcdctl(server, ["put", "/config/billing/rateLimit", "400"])
        #expect(await nextLines() == Array(repeating: "reloaded (rateLimit): rateLimit=400 logLevel=info", count: 3))

        // An operator's `defaults write`.
        let suite = "etcd://127.0.0.1:\(server.clientURL.port!)/config/billing/"
        #expect(try await runDefaults(["write", suite, "logLevel", "--string", "debug"]).status == 0)
        #expect(await nextLines() == Array(repeating: "reloaded (logLevel): rateLimit=400 logLevel=debug", count: 3))

        // A burst: five commits in a row, five etcd revisions. NB: the instances are held up
        // (SIGSTOP) meanwhile, so the burst reaches each at once however long a commit takes on a
        // loaded machine: on the real clock, a commit that took half a second would split it.
        for instance in instances { instance.send(SIGSTOP) }
        // NB: let go also if the burst throws, so stopping the instances never waits on them.
        defer { for instance in instances { instance.send(SIGCONT) } }
        let writer = Defaults.Suite(etcd: [server.clientURL], prefix: "/config/billing/", cache: .none)
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: writer)
        let logLevel = Defaults.Key<String>("logLevel", default: "info", suite: writer)
        for value in 1...5 {
            writer[rateLimit] = value
            if value == 5 { writer[logLevel] = "warning" }
            try writer.synchronize()
        }
        for instance in instances { instance.send(SIGCONT) }
        #expect(
            await nextLines()
                == Array(repeating: "reloaded (logLevel,rateLimit): rateLimit=5 logLevel=warning", count: 3)
        )

        // Another instance: and that reload is the fourth, so each instance ends, having printed
        // nothing else (a second reload for the burst would have come before this one).
        let other = try await runProduct("etcd-service", ["--set", "500"], environment: environment)
        #expect(other.status == 0)
        #expect(await nextLines() == Array(repeating: "reloaded (rateLimit): rateLimit=500 logLevel=warning", count: 3))
        for instance in instances {
            #expect(await instance.exitStatus() == 0)
            #expect(instance.rest() == "")
        }
    }
}
