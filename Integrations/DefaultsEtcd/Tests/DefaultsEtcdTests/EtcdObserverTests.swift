import Defaults
import DefaultsEtcd
import DefaultsObservation
import Foundation
import Observation
import Testing

@Observable
final class RateLimitModel: @unchecked Sendable {  // the wrapper is set once, in init; values live in the store
    @ObservationIgnored @ObservableDefault<Int> var rateLimit: Int

    init(key: Defaults.Key<Int>) {
        _rateLimit = ObservableDefault(key)
    }
}

/// An operator's `put`, `txn` and `del` reach every kind of observer of an etcd suite, once each.
@Suite struct EtcdObserverTests {
    @Test func putTxnAndDelEachReachEveryKindOfObserverOnce() async throws {
        let server = try EtcdServer()
        let prefix = "/config/observed/"
        let suite = Defaults.Suite(etcd: [server.clientURL], prefix: prefix, cache: .none)
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        let other = Defaults.Key<Int>("other", default: 0, suite: suite)

        let told = Received<String>()
        let observation = Defaults.observe(rateLimit, options: []) { told.append("observe \($0.newValue)") }
        let keysObservation = Defaults.observe(keys: rateLimit, other, options: []) {
            told.append("observe(keys:) \(suite[rateLimit]) \(suite[other])")
        }
        let suiteObservation = Defaults.observe(suite: suite, options: []) { told.append("observe(suite:)") }
        let debounced = Defaults.observe(keys: rateLimit, debounce: .milliseconds(20)) { _ in
            told.append("debounced \(suite[rateLimit])")
        }
        let stream = Defaults.updates(rateLimit, initial: false)
        let streamed = Task {
            var count = 0
            for await value in stream {
                told.append("updates \(value)")
                count += 1
                if count == 3 { break }
            }
        }
        let model = RateLimitModel(key: rateLimit)

        let operations: [(name: String, run: () throws -> Void, expected: Int)] = [
            ("put", { _ = try etcdctl(server, ["put", "\(prefix)rateLimit", "250"]) }, 250),
            (
                "txn",
                {
                    // One etcd transaction of two keys: one change of both.
                    _ = try etcdctl(
                        endpoints: [server.clientURL],
                        ["txn"],
                        // NB: compares (none), a blank line, the puts, a blank line, the failure
                        // branch (none), a blank line.
                        input: "\nput \(prefix)rateLimit 300\nput \(prefix)other 1\n\n\n"
                    )
                }, 300
            ),
            ("del", { _ = try etcdctl(server, ["del", "\(prefix)rateLimit"]) }, 100),
        ]
        var expected: [String] = []
        for (round, operation) in operations.enumerated() {
            let tracked = Received<Int>()
            withObservationTracking {
                _ = model.rateLimit
            } onChange: {
                tracked.append(0)
            }
            try operation.run()
            let value = operation.expected
            let otherValue = round == 0 ? 0 : 1
            expected += [
                "observe \(value)", "observe(keys:) \(value) \(otherValue)", "observe(suite:)", "debounced \(value)",
                "updates \(value)",
            ]
            #expect(await told.wait(forCount: expected.count), "\(operation.name): \(told.all)")
            #expect(await tracked.wait(forCount: 1), "\(operation.name): withObservationTracking")
            #expect(model.rateLimit == value)
            #expect(Set(told.all) == Set(expected), "\(operation.name)")
            #expect(told.all.count == expected.count, "\(operation.name): \(told.all)")
        }
        await streamed.value
        _ = (observation, keysObservation, suiteObservation, debounced)
    }
}
