import Defaults
import DefaultsObservation
import Foundation
import Testing

// @testable: counts watch connections and holds the watch across faults
// (`watchConnectionsForTesting`, `holdWatchForTesting`).
@testable import DefaultsEtcd

/// The faults real clusters have, beyond a crash: a member that stalls, a member cut off from its
/// quorum, an answer lost after the work was done, and a quiet period longer than any timeout.
@Suite struct EtcdProductionFaultTests {
    /// The member a suite watches from is stopped with SIGSTOP (the kernel still takes its
    /// connections; nothing answers): a change made through another member still arrives, within
    /// one and a half heartbeats and a reconnection, and a write is stored once.
    @Test func aStalledMemberIsLeftWithinSecondsAndNoChangeIsMissed() async throws {
        let cluster = try EtcdCluster()
        let leader = try cluster.leader()
        let stalled = try #require(cluster.members.first { $0 !== leader })
        let others = cluster.members.filter { $0 !== stalled }.map(\.clientURL)
        let prefix = "/config/stall/"
        let problems = Received<String>()
        let backend = EtcdBackend(
            endpoints: [stalled.clientURL] + others,
            prefix: prefix,
            timeout: .seconds(2),
            cache: .none,
            heartbeat: .seconds(1)
        )
        let suite = Defaults.Suite(backend: backend) { problems.append($0.description) }
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        let level = Defaults.Key<String>("level", default: "info", suite: suite)
        let told = Received<Int>()
        let observation = Defaults.observe(rateLimit, options: []) { told.append($0.newValue) }
        _ = try etcdctl(endpoints: others, ["put", "\(prefix)rateLimit", "200"])
        #expect(await told.wait(forCount: 1))

        let writer = Defaults.Suite(
            backend: EtcdBackend(
                endpoints: [stalled.clientURL] + others,
                prefix: prefix,
                timeout: .seconds(2),
                cache: .none
            )
        )
        let writerLevel = Defaults.Key<String>("level", default: "info", suite: writer)
        #expect(writer[writerLevel] == "info")

        stalled.stall()
        defer { stalled.resume() }
        let stalledAt = ContinuousClock.now
        _ = try etcdctl(endpoints: others, ["put", "\(prefix)rateLimit", "300"])
        #expect(await told.wait(forCount: 2))
        let observedAfter = ContinuousClock.now - stalledAt
        #expect(told.all == [200, 300])
        // NB: the bound the design gives: one and a half heartbeats (1 s each here) and a reconnection; the
        // rest is room for a loaded machine.
        #expect(observedAfter < .seconds(10), "observed \(observedAfter) after the stall")

        // A second suite, opened before the stall, still talks to the stalled member first: its
        // write times out there, is found not applied, and goes to the next member, once.
        let writing = ContinuousClock.now
        writer[writerLevel] = "debug"
        try writer.synchronize()
        let storedAfter = ContinuousClock.now - writing
        #expect(storedAfter < .seconds(10), "stored \(storedAfter) after the write")
        let stored = try etcdctl(endpoints: others, ["get", "\(prefix)level", "-w", "json"])
        #expect(stored.contains("\"version\":1"), "\(stored)")
        #expect(await suite.waitForValue(level, "debug"))

        // Resumed, the member finds the request it held, whose connection was closed meanwhile.
        stalled.resume()
        _ = try etcdctl(endpoints: [stalled.clientURL], ["put", "\(prefix)rateLimit", "400"])
        #expect(await told.wait(forCount: 3))
        let after = try etcdctl(endpoints: [stalled.clientURL], ["get", "\(prefix)level", "-w", "json"])
        #expect(after.contains("\"version\":1"), "\(after)")
        #expect(problems.all.isEmpty, "\(problems.all)")
        observation.invalidate()
    }

    /// Two of three members die: the survivor, without a quorum, ends the watch it serves.
    ///
    /// (The suite asks for a leader.) The suite says so once, and goes on when the others return.
    @Test func aMemberCutOffFromItsQuorumEndsItsWatchAndTheSuiteGoesOnWhenTheOthersReturn() async throws {
        let cluster = try EtcdCluster()
        let survivor = cluster.members[0]
        let prefix = "/config/quorum/"
        let problems = Received<String>()
        let backend = EtcdBackend(endpoints: cluster.endpoints, prefix: prefix, cache: .none)
        let suite = Defaults.Suite(backend: backend) { problems.append($0.description) }
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        let told = Received<Int>()
        let observation = Defaults.observe(rateLimit, options: []) { told.append($0.newValue) }
        _ = try etcdctl(endpoints: [survivor.clientURL], ["put", "\(prefix)rateLimit", "200"])
        #expect(await told.wait(forCount: 1))
        #expect(backend.watchConnectionsForTesting == 1)

        cluster.members[1].kill()
        cluster.members[2].kill()
        // The survivor ends the watch (about 3.4 s after the quorum is gone); the others refuse
        // connections; every member has failed: one report.
        #expect(await problems.wait(forCount: 1))
        #expect(problems.all.first?.contains("the watch of etcd stopped") == true, "\(problems.all)")

        cluster.members[1].stop()
        cluster.members[2].stop()
        try cluster.members[1].start()
        try cluster.members[2].start()
        try cluster.waitForQuorum(of: cluster.endpoints)
        _ = try etcdctl(endpoints: [cluster.members[1].clientURL], ["put", "\(prefix)rateLimit", "300"])
        #expect(await told.wait(forCount: 2))
        #expect(told.all == [200, 300])
        #expect(problems.all.count == 1, "\(problems.all)")
        observation.invalidate()
    }

    /// Exclusive transactions whose answers are lost after etcd applied them: each is found
    /// applied, never sent again, and its closure never runs twice.
    @Test func anExclusiveTransactionWhoseAnswerIsLostIsAppliedOnce() async throws {
        let server = try EtcdServer()
        let proxy = try AnswerDroppingProxy(to: server.clientURL)
        defer { proxy.close() }
        let prefix = "/config/lost/"
        // NB: the proxy twice: a call that failed at one endpoint goes to the next, and every
        // transaction must pass the proxy.
        let backend = EtcdBackend(endpoints: [proxy.url, proxy.url], prefix: prefix, cache: .none)
        let suite = Defaults.Suite(backend: backend)
        let counter = Defaults.Key<Int>("counter", default: 0, suite: suite)
        let runs = Received<Int>()
        for round in 0..<12 {
            // NB: every other transaction's answer is lost.
            if round.isMultiple(of: 2) { proxy.dropAnswers(1) }
            try suite.exclusiveTransaction {
                runs.append(round)
                suite[counter] += 1
            }
        }
        #expect(proxy.droppedCount == 6)
        #expect(runs.all == Array(0..<12))
        #expect(suite[counter] == 12)
        #expect(try etcdctl(server, ["get", "\(prefix)counter", "--print-value-only"]) == "12\n")
        // The backend's own key, the prefix itself, names the last exclusive transaction; it is no
        // setting.
        #expect(suite.storedValues().keys.sorted() == ["counter"])
        let own = try etcdctl(server, ["get", prefix, "--print-value-only"])
        #expect(own.hasPrefix("{\"commit\":"), "\(own)")
    }

    /// A plain commit whose answer is lost is not sent again: etcd has it once.
    @Test func aCommitWhoseAnswerIsLostIsStoredOnce() async throws {
        let server = try EtcdServer()
        let proxy = try AnswerDroppingProxy(to: server.clientURL)
        defer { proxy.close() }
        let prefix = "/config/lostplain/"
        let suite = Defaults.Suite(
            backend: EtcdBackend(endpoints: [proxy.url, server.clientURL], prefix: prefix, cache: .none)
        )
        proxy.dropAnswers(1)
        suite[Defaults.Key<Int>("limit", default: 0, suite: suite)] = 7
        try suite.synchronize()
        #expect(proxy.droppedCount == 1)
        let stored = try etcdctl(server, ["get", "\(prefix)limit", "-w", "json"])
        #expect(stored.contains("\"version\":1"), "\(stored)")
        // Finding out put the backend's own key, the prefix itself, which no setting names.
        #expect(try etcdctl(server, ["get", "--prefix", "--keys-only", prefix]) == "\(prefix)\n\n\(prefix)limit\n\n")
        #expect(try etcdctl(server, ["get", prefix, "--print-value-only"]).hasPrefix("{\"fence\":"))
    }

    @Test func aCommitWhoseCompareFailedAndWhoseAnswerIsLostIsSentAgainNotTakenAsApplied() async throws {
        let server = try EtcdServer()
        let proxy = try AnswerDroppingProxy(to: server.clientURL)
        defer { proxy.close() }
        let prefix = "/config/lostconflict/"
        _ = try etcdctl(server, ["put", "\(prefix)limit", "1"])
        let backend = EtcdBackend(endpoints: [proxy.url], prefix: prefix, cache: .none)
        let suite = Defaults.Suite(backend: backend)
        let limit = Defaults.Key<Int>("limit", default: 0, suite: suite)
        #expect(suite[limit] == 1)
        // Another party writes the key, and this suite does not hear of it before it commits: its
        // commit's compare fails, and the answer saying so is lost. The key then holds another
        // value written since the commit was sent, as it would if the commit had been applied and
        // written over; its history says it was not.
        backend.holdWatchForTesting()
        _ = try etcdctl(server, ["put", "\(prefix)limit", "2"])
        proxy.dropAnswers(1)
        suite[limit] = 3
        try suite.synchronize()
        #expect(proxy.droppedCount == 1)
        #expect(try etcdctl(server, ["get", "\(prefix)limit", "--print-value-only"]) == "3\n")
        let stored = try etcdctl(server, ["get", "\(prefix)limit", "-w", "json"])
        #expect(stored.contains("\"version\":3"), "\(stored)")
        backend.releaseWatchForTesting()
        _ = try etcdctl(server, ["put", "\(prefix)marker", "1"])
        #expect(await suite.waitForValue(Defaults.Key<Int>("marker", default: 0, suite: suite), 1))
        #expect(suite[limit] == 3)
    }

    /// etcd's database full (its NOSPACE alarm): a write is refused as what it is, and the value
    /// stays in memory for when an operator has freed space.
    @Test func aFullDatabaseIsSaidAsSuch() async throws {
        let server = try EtcdServer(arguments: ["--quota-backend-bytes", "200000"])
        let prefix = "/config/full/"
        let suite = Defaults.Suite(
            backend: EtcdBackend(endpoints: [server.clientURL], prefix: prefix, cache: .none)
        ) { _ in }
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        // NB: an operator's puts fill it; etcd raises the alarm once a commit passes the quota.
        let filler = String(repeating: "x", count: 60_000)
        var index = 0
        while (try? etcdctl(server, ["put", "/filler/\(index)", filler])) != nil, index < 50 { index += 1 }
        #expect(index < 50, "the quota never filled")
        suite[rateLimit] = 400
        let failure = #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
        #expect(
            failure?.description.contains("etcd's database is full (its NOSPACE alarm is raised") == true,
            "\(String(describing: failure))"
        )
        #expect(suite[rateLimit] == 400)
    }

    /// A healthy cluster where nothing changes for longer than any timeout: no report, and the
    /// watch never had to connect again.
    @Test func aQuietHealthyClusterReportsNothingHoweverLongItStaysQuiet() async throws {
        let server = try EtcdServer()
        let prefix = "/config/quiet/"
        let problems = Received<String>()
        let backend = EtcdBackend(endpoints: [server.clientURL], prefix: prefix, cache: .none)
        let suite = Defaults.Suite(backend: backend) { problems.append($0.description) }
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        let told = Received<Int>()
        let observation = Defaults.observe(rateLimit, options: []) { told.append($0.newValue) }
        _ = try etcdctl(server, ["put", "\(prefix)rateLimit", "200"])
        #expect(await told.wait(forCount: 1))
        // NB: the quiet is what is tested: 100 s, longer than async-http-client's 90 s idle timeout
        // that used to end the watch with a report.
        try await Task.sleep(for: .seconds(100))
        _ = try etcdctl(server, ["put", "\(prefix)rateLimit", "300"])
        #expect(await told.wait(forCount: 2))
        #expect(problems.all.isEmpty, "\(problems.all)")
        #expect(backend.watchConnectionsForTesting == 1)
        observation.invalidate()
    }
}

extension Defaults.Suite {
    /// Waits until `key` reads `value`, its observers told (up to 60 s, a deadline against a hang).
    func waitForValue<Value: Defaults.Serializable & Equatable & Sendable>(
        _ key: Defaults.Key<Value>,
        _ value: Value
    ) async -> Bool {
        let seen = Received<Value>()
        let observation = Defaults.observe(key) { seen.append($0.newValue) }
        defer { observation.invalidate() }
        while seen.all.last != value {
            guard await seen.wait(forCount: seen.all.count + 1) else { return self[key] == value }
        }
        return true
    }
}
