import DefaultsBackendTesting
import DefaultsObservation
import DefaultsTestSupport
import Foundation
import Testing

/// The library's own memory backend: named spaces shared in the process, and spaces of one's own.
@Suite struct InMemoryBackendTests {
    @Test func passesTheConformanceChecks() throws {
        // NB: the checks name fresh spaces of their own, so other tests' spaces are left alone.
        try BackendConformance(makeBackend: { space in Defaults.InMemoryBackend(space: space) }).run()
    }

    @Test func twoSuitesOverOneSpacePlayTwoMachines() async throws {
        let space = "fleet-\(UUID())"
        let here = Defaults.Suite(backend: Defaults.InMemoryBackend(space: space))
        let there = Defaults.Suite(backend: Defaults.InMemoryBackend(space: space))
        #expect(here != there)
        let hereKey = Defaults.Key<String>("logLevel", default: "info", suite: here)
        let thereKey = Defaults.Key<String>("logLevel", default: "info", suite: there)
        let told = EventLog<String>()
        let observation = Defaults.observe(thereKey, options: []) { told.append($0.newValue) }
        here[hereKey] = "debug"
        // Not there before the commit: each suite keeps its own state, as two machines do.
        #expect(there[thereKey] == "info")
        try here.synchronize()
        #expect(await told.wait(forCount: 1))
        #expect(told.all == ["debug"])
        #expect(there[thereKey] == "debug")
        // A suite opened later over the space loads what was committed.
        let later = Defaults.Suite(backend: Defaults.InMemoryBackend(space: space))
        #expect(later.storedValue(named: "logLevel") == .string("debug"))
        _ = observation
    }

    @Test func exclusiveTransactionsOverOneSpaceLoseNoIncrement() throws {
        let space = "counter-\(UUID())"
        let suites = (0..<2).map { _ in Defaults.Suite(backend: Defaults.InMemoryBackend(space: space)) }
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            let suite = suites[index % 2]
            let key = Defaults.Key<Int>("count", default: 0, suite: suite)
            for _ in 0..<100 {
                #expect(throws: Never.self) { try suite.exclusiveTransaction { suite[key] += 1 } }
            }
        }
        let fresh = Defaults.Suite(backend: Defaults.InMemoryBackend(space: space))
        #expect(fresh.storedValue(named: "count") == .number("400"))
    }

    @Test func aSpaceOfItsOwnIsSharedWithNobodyAndGoesWithItsBackend() throws {
        let first = Defaults.InMemoryBackend()
        let second = Defaults.InMemoryBackend()
        #expect(first.space == nil)
        try first.commit(Defaults.BackendChanges(values: ["a": .number("1")]))
        #expect(try first.load().values == ["a": .number("1")])
        #expect(try second.load().values == [:])
        // Every suite over one backend object shares one state, as suites on one file do.
        let suite = Defaults.Suite(backend: first)
        #expect(suite == Defaults.Suite(backend: first))
        #expect(suite.storedValue(named: "a") == .number("1"))
    }

    @Test func namedSpacesAreApart() throws {
        let one = Defaults.InMemoryBackend(space: "one-\(UUID())")
        let other = Defaults.InMemoryBackend(space: "other-\(UUID())")
        try one.commit(Defaults.BackendChanges(values: ["a": .bool(true)]))
        #expect(try other.load().values.isEmpty)
        #expect(one.name.hasPrefix("memory space one-"))
    }
}
