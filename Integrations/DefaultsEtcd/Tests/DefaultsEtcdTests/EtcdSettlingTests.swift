import Defaults
import Foundation
import Testing

// @testable: holds the watch (`holdWatchForTesting`), so a write settles by reading back.
@testable import DefaultsEtcd

/// Settling a write whose answer was lost, where it is hardest: a commit in pieces, a create held
/// until after its key was removed, a refusal after the loss, a removal since, a history etcd
/// compacted, a value that does not parse, a commit that changed nothing.
///
/// Each interleaving is made by the test's own proxy (it holds a request, loses an answer, stalls)
/// or by holding the watch, and waited for: none depends on timing. One at a time: each starts a
/// member and a proxy, and the whole run starts its tests at once on two cores, where a test that
/// times a stalled member's replacement shares them.
@Suite(.serialized) struct EtcdSettlingTests {
    /// A backend over `endpoints` whose calls give up after 2 s, and a suite over it that tells
    /// `problems` of each problem.
    static func suite(
        _ endpoints: [URL],
        prefix: String,
        maxOperationsPerTransaction: Int = 128,
        credentials: EtcdCredentials? = nil,
        problems: Received<String> = Received()
    ) -> (EtcdBackend, Defaults.Suite) {
        let backend = EtcdBackend(
            endpoints: endpoints,
            prefix: prefix,
            timeout: .seconds(2),
            cache: .none,
            maxOperationsPerTransaction: maxOperationsPerTransaction,
            heartbeat: .seconds(1),
            credentials: credentials
        )
        return (backend, Defaults.Suite(backend: backend) { problems.append($0.description) })
    }

    /// A commit in two pieces whose second piece's answer was lost: sent again, the first piece is
    /// not stored a second time, nor over what another client wrote to one of its keys since.
    @Test func aPieceStoredBeforeALaterPieceFailedIsNotStoredAgain() async throws {
        let server = try EtcdServer()
        let proxy = try AnswerDroppingProxy(to: server.clientURL)
        defer { proxy.close() }
        let prefix = "/config/pieces/"
        // Three operations a transaction: two keys a piece, and the compare of the backend's own key.
        let (_, suite) = Self.suite([proxy.url], prefix: prefix, maxOperationsPerTransaction: 3)
        let keys = ["a", "b", "c", "d"].map { Defaults.Key<Int>($0, default: 0, suite: suite) }
        #expect(suite[keys[0]] == 0)

        proxy.dropAnswers(1, then: .everything, afterPassing: 1)
        for (index, key) in keys.enumerated() { suite[key] = index + 1 }
        let failure = await #expect(throws: Defaults.StorageError.self) {
            try await offThePool { try suite.synchronize() }
        }
        #expect(failure?.description.contains("may or may not be stored") == true, "\(String(describing: failure))")
        #expect(try stored(server, "\(prefix)a")?.version == 1)
        _ = try etcdctl(server, ["put", "\(prefix)a", "99"])
        proxy.resume()

        try await offThePool { try suite.synchronize() }
        let a = try stored(server, "\(prefix)a")
        #expect(a?.value == "99", "\(String(describing: a))")
        #expect(a?.version == 2, "\(String(describing: a))")
        for name in ["b", "c", "d"] {
            let other = try stored(server, "\(prefix)\(name)")
            #expect(other?.version == 1, "\(name): \(String(describing: other))")
        }
        #expect(suite[keys[0]] == 99)
    }

    /// A removal of everything in two pieces whose second piece's answer was lost: sent again, it
    /// removes nothing another client wrote after the removal was stored.
    @Test func aRemovalSentAgainLeavesWhatOthersWroteSinceItWasStored() async throws {
        let server = try EtcdServer()
        let proxy = try AnswerDroppingProxy(to: server.clientURL)
        defer { proxy.close() }
        let prefix = "/config/halfremoved/"
        for name in ["a", "b", "c", "d"] { _ = try etcdctl(server, ["put", "\(prefix)\(name)", "1"]) }
        let (_, suite) = Self.suite([proxy.url], prefix: prefix, maxOperationsPerTransaction: 3)
        let a = Defaults.Key<Int>("a", default: 0, suite: suite)
        #expect(suite[a] == 1)

        proxy.dropAnswers(1, then: .everything, afterPassing: 1)
        suite.removeAll()
        let failure = await #expect(throws: Defaults.StorageError.self) {
            try await offThePool { try suite.synchronize() }
        }
        #expect(failure?.description.contains("may or may not be stored") == true, "\(String(describing: failure))")
        _ = try etcdctl(server, ["put", "\(prefix)a", "9"])
        _ = try etcdctl(server, ["put", "\(prefix)e", "5"])
        proxy.resume()

        try await offThePool { try suite.synchronize() }
        #expect(try stored(server, "\(prefix)a")?.value == "9")
        #expect(try stored(server, "\(prefix)e")?.value == "5")
        for name in ["b", "c", "d"] { #expect(try stored(server, "\(prefix)\(name)") == nil, "\(name)") }
        #expect(suite[a] == 9)
    }

    /// A create a member held while the suite stored it through another is not applied when the
    /// member goes on after the key was removed: a compare of the key alone would hold again (a
    /// removed key is at version 0, as one never created).
    @Test func aHeldCreateIsNotAppliedAfterTheKeyWasRemoved() async throws {
        let server = try EtcdServer()
        let proxy = try AnswerDroppingProxy(to: server.clientURL)
        defer { proxy.close() }
        let prefix = "/config/created/"
        let (_, suite) = Self.suite([proxy.url, server.clientURL], prefix: prefix)
        let limit = Defaults.Key<Int>("limit", default: 0, suite: suite)
        #expect(suite[limit] == 0)

        // The proxy holds the create; the suite gives up on it, finds it not applied through the
        // member itself, and stores it there.
        proxy.stall(.allButWatches)
        suite[limit] = 7
        try await offThePool { try suite.synchronize() }
        #expect(try stored(server, "\(prefix)limit")?.value == "7")
        limit.reset()
        try await offThePool { try suite.synchronize() }
        #expect(try stored(server, "\(prefix)limit") == nil)

        // The held create reaches etcd, which answers it to nobody.
        proxy.resume()
        #expect(await proxy.waitUntilDropped(1))
        let after = try stored(server, "\(prefix)limit")
        #expect(after == nil, "\(String(describing: after))")
        #expect(suite[limit] == 0)
    }

    /// A write held while the suite's commit of it was refused (its user may write the key but not
    /// the backend's own key, which finding out puts), then applied: the suite, put back to what
    /// etcd held, hears of it through the watch.
    @Test func aHeldWriteAppliedAfterItsCommitWasRefusedReachesTheSuite() async throws {
        let server = try EtcdServer()
        let prefix = "/config/refused/"
        let root = ["--user", "root:root-pw"]
        for command in [
            ["user", "add", "root:root-pw"], ["user", "grant-role", "root", "root"], ["role", "add", "onekey"],
            ["role", "grant-permission", "onekey", "--prefix=true", "read", prefix],
            ["role", "grant-permission", "onekey", "readwrite", "\(prefix)limit"],
            ["user", "add", "writer:writer-pw"], ["user", "grant-role", "writer", "onekey"], ["auth", "enable"],
        ] {
            _ = try etcdctl(server, command)
        }
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let password = try write("writer-pw\n", to: "password", in: folder)
        let proxy = try AnswerDroppingProxy(to: server.clientURL)
        defer { proxy.close() }
        let (_, suite) = Self.suite(
            [proxy.url, server.clientURL],
            prefix: prefix,
            credentials: EtcdCredentials(user: "writer", passwordFile: password)
        )
        let limit = Defaults.Key<Int>("limit", default: 0, suite: suite)
        #expect(suite[limit] == 0)

        proxy.stall(.allButWatches)
        suite[limit] = 7
        let failure = await #expect(throws: Defaults.StorageError.self) {
            try await offThePool { try suite.synchronize() }
        }
        #expect(failure?.description.contains("may not write") == true, "\(String(describing: failure))")
        #expect(suite[limit] == 0)

        proxy.resume()
        #expect(await proxy.waitUntilDropped(1))
        #expect(try etcdctl(server, root + ["get", "\(prefix)limit", "--print-value-only"]) == "7\n")
        #expect(await suite.waitForValue(limit, 7))
    }

    /// A write whose answer was lost, applied, then the key removed by another client before the
    /// suite found out: the write is found in the key's history, not sent again over the removal.
    @Test func aWriteFoundAppliedIsNotSentAgainOverALaterRemoval() async throws {
        let server = try EtcdServer()
        let proxy = try AnswerDroppingProxy(to: server.clientURL)
        defer { proxy.close() }
        let prefix = "/config/removed/"
        _ = try etcdctl(server, ["put", "\(prefix)limit", "1"])
        let (backend, suite) = Self.suite([proxy.url], prefix: prefix)
        let limit = Defaults.Key<Int>("limit", default: 0, suite: suite)
        #expect(suite[limit] == 1)
        // The watch delivers nothing: only the history can say the write was applied.
        backend.holdWatchForTesting()

        proxy.dropAnswers(1, then: .everything)
        suite[limit] = 5
        let failure = await #expect(throws: Defaults.StorageError.self) {
            try await offThePool { try suite.synchronize() }
        }
        #expect(failure?.description.contains("may or may not be stored") == true, "\(String(describing: failure))")
        #expect(try stored(server, "\(prefix)limit")?.value == "5")
        _ = try etcdctl(server, ["del", "\(prefix)limit"])
        proxy.resume()

        try await offThePool { try suite.synchronize() }
        let after = try stored(server, "\(prefix)limit")
        #expect(after == nil, "\(String(describing: after))")
        #expect(suite[limit] == 0)
    }

    /// A write whose history etcd compacted before the suite could find it out: not sent again,
    /// and the error handler is told which key, without its value.
    @Test func aWriteWhoseHistoryWasCompactedIsReportedNotSentAgain() async throws {
        let server = try EtcdServer()
        let proxy = try AnswerDroppingProxy(to: server.clientURL)
        defer { proxy.close() }
        let prefix = "/config/compacted/"
        let problems = Received<String>()
        let (backend, suite) = Self.suite([proxy.url], prefix: prefix, problems: problems)
        let limit = Defaults.Key<Int>("limit", default: 0, suite: suite)
        #expect(suite[limit] == 0)
        backend.holdWatchForTesting()

        proxy.dropAnswers(1, then: .everything)
        suite[limit] = 5
        let failure = await #expect(throws: Defaults.StorageError.self) {
            try await offThePool { try suite.synchronize() }
        }
        #expect(failure?.description.contains("may or may not be stored") == true, "\(String(describing: failure))")
        _ = try etcdctl(server, ["put", "\(prefix)limit", "6"])
        let revision = try #require(try stored(server, "\(prefix)limit")).modRevision
        _ = try etcdctl(server, ["compact", String(revision)])
        proxy.resume()

        try await offThePool { try suite.synchronize() }
        #expect(
            await problems.wait { $0.contains { $0.contains("compacted") && $0.contains("limit") } },
            "\(problems.all)"
        )
        let after = try stored(server, "\(prefix)limit")
        #expect(after?.value == "6", "\(String(describing: after))")
        #expect(after?.version == 2, "\(String(describing: after))")
        #expect(suite[limit] == 6)
    }

    /// A removal of everything whose answer was lost, and whose outcome could not be found out:
    /// said to be one that may or may not be stored, not "out of reach".
    @Test func aRemovalWhoseAnswerWasLostMayOrMayNotBeStored() async throws {
        let server = try EtcdServer()
        let proxy = try AnswerDroppingProxy(to: server.clientURL)
        defer { proxy.close() }
        let prefix = "/config/removal/"
        _ = try etcdctl(server, ["put", "\(prefix)a", "1"])
        let (_, suite) = Self.suite([proxy.url], prefix: prefix)
        let a = Defaults.Key<Int>("a", default: 0, suite: suite)
        #expect(suite[a] == 1)

        proxy.dropAnswers(1, then: .everything)
        suite.removeAll()
        let failure = await #expect(throws: Defaults.StorageError.self) {
            try await offThePool { try suite.synchronize() }
        }
        #expect(failure?.description.contains("may or may not be stored") == true, "\(String(describing: failure))")
        proxy.resume()
        try await offThePool { try suite.synchronize() }
        #expect(try stored(server, "\(prefix)a") == nil)
    }

    /// A write found applied whose key holds a value that does not parse by then: the suite keeps
    /// the value it wrote (the last good one), as it does when the watch brings such a value.
    @Test func aWriteFoundAppliedUnderAValueThatDoesNotParseKeepsTheLastGoodValue() async throws {
        let server = try EtcdServer()
        let proxy = try AnswerDroppingProxy(to: server.clientURL)
        defer { proxy.close() }
        let prefix = "/config/unparsed/"
        let (backend, suite) = Self.suite([proxy.url], prefix: prefix)
        let limit = Defaults.Key<Int>("limit", default: 0, suite: suite)
        #expect(suite[limit] == 0)
        backend.holdWatchForTesting()

        proxy.dropAnswers(1, then: .everything)
        suite[limit] = 5
        _ = await #expect(throws: Defaults.StorageError.self) { try await offThePool { try suite.synchronize() } }
        _ = try etcdctl(server, ["put", "\(prefix)limit", "not json{"])
        proxy.resume()

        try await offThePool { try suite.synchronize() }
        #expect(suite[limit] == 5)
        #expect(try stored(server, "\(prefix)limit")?.version == 2)
    }

    /// A commit that changed nothing (it removed a key another client had removed) is answered
    /// with the newest revision, another client's the watch has not passed yet: the watch still
    /// reports that revision.
    @Test func aCommitThatChangedNothingDoesNotHideAnotherClientsRevision() async throws {
        let server = try EtcdServer()
        let prefix = "/config/nothing/"
        _ = try etcdctl(server, ["put", "\(prefix)gone", "1"])
        let (backend, suite) = Self.suite([server.clientURL], prefix: prefix)
        let gone = Defaults.Key<Int>("gone", default: 0, suite: suite)
        let other = Defaults.Key<Int>("other", default: 0, suite: suite)
        let marker = Defaults.Key<Int>("marker", default: 0, suite: suite)
        #expect(suite[gone] == 1)

        backend.holdWatchForTesting()
        _ = try etcdctl(server, ["del", "\(prefix)gone"])
        _ = try etcdctl(server, ["put", "\(prefix)other", "5"])
        gone.reset()
        try await offThePool { try suite.synchronize() }
        backend.releaseWatchForTesting()
        _ = try etcdctl(server, ["put", "\(prefix)marker", "1"])
        #expect(await suite.waitForValue(marker, 1))
        #expect(suite[other] == 5)
    }

    /// The compare of the backend's own key counts against etcd's `--max-txn-ops`: an exclusive
    /// transaction that reads as many keys as fit, and writes one more, is one etcd takes.
    @Test func anExclusiveTransactionAtEtcdsLimitIsOneEtcdTakes() async throws {
        let server = try EtcdServer(arguments: ["--max-txn-ops", "3"])
        let prefix = "/config/limit/"
        _ = try etcdctl(server, ["put", "\(prefix)a", "1"])
        _ = try etcdctl(server, ["put", "\(prefix)b", "2"])
        let (_, suite) = Self.suite([server.clientURL], prefix: prefix, maxOperationsPerTransaction: 3)
        let (a, b, sum) = (
            Defaults.Key<Int>("a", default: 0, suite: suite), Defaults.Key<Int>("b", default: 0, suite: suite),
            Defaults.Key<Int>("sum", default: 0, suite: suite)
        )
        try await offThePool { try suite.exclusiveTransaction { suite[sum] = suite[a] + suite[b] } }
        #expect(try etcdctl(server, ["get", "\(prefix)sum", "--print-value-only"]) == "3\n")
    }
}
