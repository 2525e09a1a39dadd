import Defaults
import DefaultsObservation
import Foundation
import Testing

// @testable: waits for the cache file's writes and holds the watch across compaction
// (`EtcdCache.waitForWrites()`, `holdWatchForTesting`).
@testable import DefaultsEtcd

/// etcd out of reach, back again, and a watch that was away while history was compacted.
@Suite(.serialized) struct EtcdFaultTests {
    @Test func aSuiteOpenedWhileEtcdIsDownStartsFromTheLastValuesSeenKeepsItsWritesAndCatchesUp() async throws {
        let server = try EtcdServer()
        let cache = server.directory.appendingPathComponent("cache/settings.json")
        let prefix = "/config/svc/"
        do {
            let backend = EtcdBackend(endpoints: [server.clientURL], prefix: prefix, cache: .file(cache))
            let first = Defaults.Suite(backend: backend)
            first[Defaults.Key<Int>("rateLimit", default: 100, suite: first)] = 250
            try first.synchronize()
            backend.cache?.waitForWrites()
        }
        server.stop()

        let problems = Received<String>()
        let backend = EtcdBackend(
            endpoints: [server.clientURL],
            prefix: prefix,
            // NB: not shorter: the suite goes on after etcd is back, on a machine that may be loaded.
            timeout: .seconds(30),
            cache: .file(cache)
        )
        let suite = Defaults.Suite(backend: backend) { problems.append($0.description) }
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        let logLevel = Defaults.Key<String>("logLevel", default: "info", suite: suite)
        #expect(suite[rateLimit] == 250)
        #expect(await problems.wait(forCount: 1))
        #expect(problems.all.first?.contains("starting from the values last seen") == true, "\(problems.all)")
        // A write while etcd is away is kept in memory, and synchronize() throws until it is stored.
        suite[logLevel] = "debug"
        #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
        #expect(suite[logLevel] == "debug")

        let told = Received<Int>()
        let observation = Defaults.observe(rateLimit, options: []) { told.append($0.newValue) }
        try server.start()
        _ = try etcdctl(server, ["put", "\(prefix)rateLimit", "400"])
        #expect(await told.wait(forCount: 1))
        #expect(told.all == [400])
        #expect(suite[rateLimit] == 400)
        try suite.synchronize()
        #expect(try etcdctl(server, ["get", "\(prefix)logLevel", "--print-value-only"]) == "\"debug\"\n")
        _ = observation
    }

    @Test func aRunningSuiteRidesOutARestartOfEtcd() async throws {
        let server = try EtcdServer()
        let prefix = "/config/restart/"
        let problems = Received<String>()
        let suite = Defaults.Suite(etcd: [server.clientURL], prefix: prefix, cache: .none) {
            problems.append($0.description)
        }
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        let logLevel = Defaults.Key<String>("logLevel", default: "info", suite: suite)
        let told = Received<Int>()
        let observation = Defaults.observe(rateLimit, options: []) { told.append($0.newValue) }
        let activity = Received<Defaults.Activity>()
        let watchingActivity = Defaults.observeActivity { of, what in if of == suite { activity.append(what) } }
        defer { watchingActivity.cancel() }
        _ = try etcdctl(server, ["put", "\(prefix)rateLimit", "200"])
        #expect(await told.wait(forCount: 1))

        server.stop()
        // A write while etcd is away: kept, reported, and synchronize() throws until it is stored.
        suite[logLevel] = "debug"
        #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
        #expect(await problems.wait(forCount: 1))
        #expect(suite[logLevel] == "debug")

        try server.start()
        // The watch comes back by itself: an operator's put after the restart arrives.
        _ = try etcdctl(server, ["put", "\(prefix)rateLimit", "300"])
        #expect(await told.wait(forCount: 2))
        #expect(told.all == [200, 300])
        #expect(suite[rateLimit] == 300)
        try suite.synchronize()
        #expect(try etcdctl(server, ["get", "\(prefix)logLevel", "--print-value-only"]) == "\"debug\"\n")
        observation.invalidate()
        // What a service counts: the watch came back, the failed commit was tried again until the
        // write was stored, and the operator's two puts came from elsewhere.
        #expect(await activity.wait { $0.contains(.committed(keys: 1)) })
        #expect(
            activity.all.contains {
                guard case .reconnected(let backend) = $0 else { return false }
                return backend.hasPrefix("etcd \(prefix) at ")
            },
            "\(activity.all)"
        )
        #expect(activity.all.contains(.retryingCommit))
        #expect(activity.all.filter { $0 == .changedElsewhere(keys: 1) }.count == 2)
    }

    @Test func aWatchThatMissedCompactedHistoryReloadsAndReportsTheDifferenceAsOneChange() async throws {
        let server = try EtcdServer()
        let prefix = "/config/compacted/"
        let backend = EtcdBackend(endpoints: [server.clientURL], prefix: prefix, cache: .none)
        let suite = Defaults.Suite(backend: backend)
        let keys = ["a", "b", "c"].map { Defaults.Key<Int>($0, default: 0, suite: suite) }
        let events = Received<[Int]>()
        let observation = Defaults.observe(keys: keys, options: []) { events.append(keys.map { suite[$0] }) }
        let activity = Received<Defaults.Activity>()
        let watchingActivity = Defaults.observeActivity { of, what in if of == suite { activity.append(what) } }
        defer { watchingActivity.cancel() }
        // The watch is live: a put arrives as it is made.
        _ = try etcdctl(server, ["put", "\(prefix)c", "9"])
        #expect(await events.wait(forCount: 1))

        backend.holdWatchForTesting()
        _ = try etcdctl(server, ["put", "\(prefix)a", "1"])
        _ = try etcdctl(server, ["put", "\(prefix)b", "2"])
        _ = try etcdctl(server, ["put", "\(prefix)a", "3"])
        _ = try etcdctl(server, ["del", "\(prefix)c"])
        let status = try etcdctl(server, ["get", "\(prefix)a", "-w", "json"])
        let revision = try #require(status.firstMatch(of: /"revision":(\d+)/)?.1)
        _ = try etcdctl(server, ["compact", String(revision)])
        backend.releaseWatchForTesting()

        #expect(await events.wait(forCount: 2))
        #expect(events.all == [[0, 0, 9], [3, 2, 0]])
        _ = observation
        // The watch connected again, and the backend handed its contents over whole: a reload, and
        // one change from elsewhere of the three keys.
        #expect(
            await activity.wait {
                $0.contains(.reloaded(backend: backend.name)) && $0.contains(.reconnected(backend: backend.name))
            },
            "\(activity.all)"
        )
        #expect(activity.all.contains(.changedElsewhere(keys: 3)), "\(activity.all)")
    }
}

/// A cluster restored from a snapshot: its revision goes back.
@Suite struct EtcdRestoreTests {
    @Test func aClusterRestoredFromASnapshotIsReadAgainAndItsDifferenceIsOneChange() async throws {
        let server = try EtcdServer()
        let prefix = "/config/restored/"
        let problems = Received<String>()
        let suite = Defaults.Suite(
            backend: EtcdBackend(endpoints: [server.clientURL], prefix: prefix, cache: .none)
        ) { problems.append($0.description) }
        let keys = ["a", "b"].map { Defaults.Key<Int>($0, default: 0, suite: suite) }
        let events = Received<[Int]>()
        let observation = Defaults.observe(keys: keys, options: []) { events.append(keys.map { suite[$0] }) }
        _ = try etcdctl(server, ["put", "\(prefix)a", "1"])
        #expect(await events.wait(forCount: 1))
        let snapshot = server.directory.appendingPathComponent("backup.db")
        _ = try etcdctl(server, ["snapshot", "save", snapshot.path])
        _ = try etcdctl(server, ["put", "\(prefix)a", "2"])
        _ = try etcdctl(server, ["put", "\(prefix)b", "3"])
        #expect(await events.wait(forCount: 3))

        // The backup's revision is older than any the suite has seen: read again, one change.
        try server.restore(from: snapshot)
        #expect(await events.wait(forCount: 4))
        // A put after the restore, at a revision the suite had seen before it, arrives.
        _ = try etcdctl(server, ["put", "\(prefix)a", "5"])
        #expect(await events.wait(forCount: 5))
        #expect(events.all == [[1, 0], [2, 0], [2, 3], [1, 0], [5, 0]])
        observation.invalidate()
    }
}

/// A change another party made before this process's own commit of the same key, seen by the watch
/// only after that commit: it must not take the key back to the older value.
@Suite struct EtcdOrderingTests {
    @Test func anOlderChangeSeenAfterTheSuitesOwnCommitOfTheKeyDoesNotUndoIt() async throws {
        let server = try EtcdServer()
        let prefix = "/config/order/"
        let backend = EtcdBackend(endpoints: [server.clientURL], prefix: prefix, cache: .none)
        let suite = Defaults.Suite(backend: backend)
        let level = Defaults.Key<String>("level", default: "info", suite: suite)
        let marker = Defaults.Key<Int>("marker", default: 0, suite: suite)
        let markers = Received<Int>()
        let observation = Defaults.observe(marker, options: []) { markers.append($0.newValue) }
        // The watch is live.
        _ = try etcdctl(server, ["put", "\(prefix)marker", "1"])
        #expect(await markers.wait(forCount: 1))

        backend.holdWatchForTesting()
        _ = try etcdctl(server, ["put", "\(prefix)level", "\"warning\""])
        suite[level] = "debug"
        try suite.synchronize()
        _ = try etcdctl(server, ["put", "\(prefix)marker", "2"])
        backend.releaseWatchForTesting()
        // Once the marker arrives, the watch has passed the other party's older write.
        #expect(await markers.wait(forCount: 2))
        #expect(suite[level] == "debug")
        #expect(try etcdctl(server, ["get", "\(prefix)level", "--print-value-only"]) == "\"debug\"\n")
        _ = observation
    }
}

/// Three members, the leader killed while four processes write: the cluster keeps serving the
/// suites, and every write a process saw committed is there.
@Suite struct EtcdClusterTests {
    @Test func aClusterThatLosesItsLeaderMidStormKeepsServingAndLosesNoCommittedWrite() async throws {
        let cluster = try EtcdCluster()
        let endpoints = cluster.endpoints.map(\.absoluteString).joined(separator: ",")
        let environment = ["XDG_CACHE_HOME": cluster.members[0].directory.appendingPathComponent("cache").path]
        let writers = try (0..<4)
            .map { index in
                try RunningProduct(
                    "etcd-test-helper",
                    ["write-many", endpoints, "/config/storm/", "w\(index)", "150"],
                    environment: environment
                )
            }
        // Mid-storm: once the first writer has 50 writes committed, the leader dies.
        var line = await writers[0].nextLine()
        while let seen = line, seen != "synced 50" { line = await writers[0].nextLine() }
        #expect(line == "synced 50")
        let leader = try cluster.leader()
        leader.kill()
        for writer in writers { #expect(await writer.exitStatus() == 0) }

        let survivors = cluster.members.filter { $0 !== leader }.map(\.clientURL)
        // NB: a suite loads once: not during an election, which a loaded machine may start anew.
        try cluster.waitForQuorum(of: survivors)
        let check = Defaults.Suite(etcd: survivors, prefix: "/config/storm/", cache: .none)
        let stored = check.storedValues()
        #expect(stored.count == 600)
        for writer in 0..<4 {
            for index in 0..<150 where stored["w\(writer)-\(index)"] != .number(String(index)) {
                Issue.record("w\(writer)-\(index) is \(String(describing: stored["w\(writer)-\(index)"]))")
            }
        }
    }
}
