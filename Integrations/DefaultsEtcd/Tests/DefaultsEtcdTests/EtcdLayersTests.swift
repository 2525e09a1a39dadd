import Configuration
import Defaults
import DefaultsConfiguration
import DefaultsEtcd
import DefaultsObservation
import Foundation
import Testing

/// A service's settings held by `@Default`, as a model class holds them.
final class BillingService {
    @Default<Int> var rateLimit: Int

    init(key: Defaults.Key<Int>) {
        _rateLimit = Default(key)
    }
}

/// What sits above the backend works over an etcd suite as over a file: `@Default`,
/// `withoutPropagation`, overrides, transactions, and swift-configuration's reader.
@Suite(.serialized) struct EtcdLayersTests {
    private let prefix = "/config/billing/"

    /// The value etcd holds for `name`, as `etcdctl` prints it; empty when there is none.
    private func stored(_ server: EtcdServer, _ name: String) throws -> String {
        try etcdctl(server, ["get", "--print-value-only", prefix + name])
    }

    @Test func defaultPropertyWrapperReadsWritesObservesAndResetsEtcd() async throws {
        let server = try EtcdServer()
        let suite = Defaults.Suite(etcd: [server.clientURL], prefix: prefix, cache: .none)
        let service = BillingService(key: Defaults.Key<Int>("rateLimit", default: 100, suite: suite))
        #expect(service.rateLimit == 100)
        #expect(service.$rateLimit.isDefaultValue)

        service.rateLimit = 250
        try suite.synchronize()
        #expect(try stored(server, "rateLimit") == "250\n")

        let seen = Received<Int>()
        let observation = service.$rateLimit.observe(options: []) { seen.append($0.newValue) }
        _ = try etcdctl(server, ["put", prefix + "rateLimit", "300"])
        #expect(await seen.wait(forCount: 1))
        #expect(service.rateLimit == 300)

        // A reset removes the key from etcd, so the program's default is read again.
        service.$rateLimit.reset()
        try suite.synchronize()
        #expect(try stored(server, "rateLimit") == "")
        #expect(try etcdctl(server, ["get", "--prefix", "--keys-only", prefix]) == "")
        #expect(service.rateLimit == 100)
        #expect(seen.all == [300, 100])
        observation.invalidate()
    }

    @Test func aWriteWithoutPropagationIsStoredInEtcdAndToldToNoObserver() async throws {
        let server = try EtcdServer()
        let suite = Defaults.Suite(etcd: [server.clientURL], prefix: prefix, cache: .none)
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        let told = Received<Int>()
        let observation = Defaults.observe(rateLimit, options: []) { told.append($0.newValue) }
        let streamed = Received<Int>()
        let stream = Defaults.updates(rateLimit, initial: false)
        let consumer = Task {
            for await value in stream { streamed.append(value) }
        }

        Defaults.withoutPropagation { suite[rateLimit] = 5 }
        try suite.synchronize()
        #expect(try stored(server, "rateLimit") == "5\n", "the suppressed write still reaches etcd")
        #expect(suite[rateLimit] == 5)

        // The next write is told; the suppressed one came before it and was told to nobody.
        suite[rateLimit] = 6
        #expect(await told.wait(forCount: 1))
        #expect(await streamed.wait(forCount: 1))
        #expect(told.all == [6])
        #expect(streamed.all == [6])
        consumer.cancel()
        observation.invalidate()
    }

    @Test func overridesWinOverEtcdForThisRunOnly() async throws {
        let server = try EtcdServer()
        _ = try etcdctl(server, ["put", prefix + "rateLimit", "250"])
        _ = try etcdctl(server, ["put", prefix + "logLevel", "\"info\""])
        let suite = Defaults.Suite(etcd: [server.clientURL], prefix: prefix, cache: .none)
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        let logLevel = Defaults.Key<String>("logLevel", default: "warning", suite: suite)
        suite.overrideWithEnvironment(prefix: "BILLING_", ["BILLING_RATE_LIMIT": "999", "BILLING_LOG_LEVEL": "debug"])
        suite.overrideWithLaunchArguments(["billing", "-logLevel", "trace"])
        #expect(suite[rateLimit] == 999)
        #expect(suite[logLevel] == "trace", "a launch argument wins over the environment")

        // An operator changes both overridden keys and one the program has no override for:
        // reads of the overridden keys stay, and only the other key is told.
        let burst = Defaults.Key<Int>("burst", default: 10, suite: suite)
        let burstTold = Received<Int>()
        let observation = Defaults.observe(burst, options: []) { burstTold.append($0.newValue) }
        let overriddenTold = Received<Int>()
        let keysObservation = Defaults.observe(keys: rateLimit, logLevel, options: []) { overriddenTold.append(0) }
        _ = try etcdctl(server, ["put", prefix + "logLevel", "\"error\""])
        // NB: one transaction, so the key told last comes in the same event as rateLimit's change.
        _ = try etcdctl(
            endpoints: [server.clientURL],
            ["txn"],
            input: "\nput \(prefix)rateLimit 300\nput \(prefix)burst 7\n\n\n"
        )
        #expect(await burstTold.wait(forCount: 1))
        #expect(burstTold.all == [7])
        #expect(suite[rateLimit] == 999)
        #expect(suite[logLevel] == "trace")
        #expect(overriddenTold.all.isEmpty)

        // Nothing of the overrides was written to etcd.
        #expect(try stored(server, "rateLimit") == "300\n")
        #expect(try stored(server, "logLevel") == "\"error\"\n")
        observation.invalidate()
        keysObservation.invalidate()
    }

    @Test func aTransactionIsOneEtcdRevisionAndOneEvent() async throws {
        let server = try EtcdServer()
        let suite = Defaults.Suite(etcd: [server.clientURL], prefix: prefix, cache: .none)
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        let burst = Defaults.Key<Int>("burst", default: 10, suite: suite)
        let region = Defaults.Key<String>("region", default: "us", suite: suite)
        let told = Received<String>()
        let observation = Defaults.observe(suite: suite, options: []) {
            told.append("\(suite[rateLimit]) \(suite[burst]) \(suite[region])")
        }

        suite.transaction {
            suite[rateLimit] = 500
            suite[burst] = 50
            suite[region] = "eu"
        }
        try suite.synchronize()
        let listing = try etcdctl(server, ["get", "--prefix", prefix, "-w", "json"])
        let revisions = try modRevisions(listing)
        #expect(revisions.count == 3)
        #expect(Set(revisions.values).count == 1, "one etcd transaction: \(revisions)")

        // An operator's put afterwards: its event comes after every event of the transaction.
        _ = try etcdctl(server, ["put", prefix + "region", "\"ap\""])
        #expect(await told.wait(forCount: 2))
        #expect(told.all == ["500 50 eu", "500 50 ap"], "the transaction is one event, never part of it")
        observation.invalidate()
    }

    @Test func configReaderWatchIntFollowsAnEtcdctlPut() async throws {
        let server = try EtcdServer()
        _ = try etcdctl(server, ["put", prefix + "workers", "4"])
        let suite = Defaults.Suite(etcd: [server.clientURL], prefix: prefix, cache: .none)
        let config = ConfigReader(provider: DefaultsProvider(suite: suite))
        #expect(config.int(forKey: "workers") == 4)

        let seen = Received<Int>()
        try await config.watchInt(forKey: "workers", default: 0) { updates in
            let copying = Task {
                for await workers in updates { seen.append(workers) }
            }
            defer { copying.cancel() }
            #expect(await seen.wait(forCount: 1))
            _ = try etcdctl(server, ["put", prefix + "workers", "16"])
            #expect(await seen.wait(forCount: 2))
            _ = try etcdctl(server, ["del", prefix + "workers"])
            #expect(await seen.wait(forCount: 3))
        }
        #expect(seen.all == [4, 16, 0])
    }

    /// The mod revision of each key in `etcdctl get -w json` output, by key.
    private func modRevisions(_ json: String) throws -> [String: Int] {
        struct Listing: Decodable {
            struct KeyValue: Decodable {
                var key: String
                var mod_revision: Int
            }
            var kvs: [KeyValue]
        }
        let listing = try JSONDecoder().decode(Listing.self, from: Data(json.utf8))
        var revisions: [String: Int] = [:]
        for entry in listing.kvs {
            let key = Data(base64Encoded: entry.key).map { String(decoding: $0, as: UTF8.self) } ?? entry.key
            revisions[key] = entry.mod_revision
        }
        return revisions
    }
}
