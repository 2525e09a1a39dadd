import DefaultsObservation
import DefaultsTestSupport
import Foundation
import Testing

/// `Defaults.observe(suite:)`: one call per committed change to any key of the suite.
@Suite struct ObserveSuiteTests {
    @Test func eachWriteToAnyKeyIsOneCall() {
        let suite = Defaults.Suite.inMemory()
        let calls = Recorder<Int>()
        let observation = Defaults.observe(suite: suite, options: []) { calls.append(1) }
        suite[Defaults.Key<Int>("a", default: 0, suite: suite)] = 1
        suite[Defaults.Key<String>("b", default: "", suite: suite)] = "x"
        #expect(calls.count == 2)
        suite[Defaults.Key<Int>("a", default: 0, suite: suite)] = 1  // the same value: no change
        #expect(calls.count == 2)
        observation.invalidate()
    }

    @Test func aTransactionAndRemoveAllAreOneCallEach() {
        let suite = Defaults.Suite.inMemory()
        let calls = Recorder<Int>()
        let observation = Defaults.observe(suite: suite, options: []) { calls.append(suite.storedValues().count) }
        suite.transaction {
            for index in 0..<5 { suite[Defaults.Key<Int>("key-\(index)", default: 0, suite: suite)] = index + 1 }
        }
        suite.removeAll()
        #expect(calls.elements == [5, 0])
        observation.invalidate()
    }

    @Test func initialCallsOnceAtOnce() {
        let suite = Defaults.Suite.inMemory()
        let calls = Recorder<Int>()
        let observation = Defaults.observe(suite: suite) { calls.append(1) }
        #expect(calls.count == 1)
        observation.invalidate()
    }

    @Test func otherSuitesAndSuppressedWritesAreNotDelivered() {
        let suite = Defaults.Suite.inMemory()
        let other = Defaults.Suite.inMemory()
        let calls = Recorder<Int>()
        let observation = Defaults.observe(suite: suite, options: []) { calls.append(1) }
        other[Defaults.Key<Int>("a", default: 0, suite: other)] = 1
        Defaults.withoutPropagation { suite[Defaults.Key<Int>("a", default: 0, suite: suite)] = 1 }
        #expect(calls.count == 0)
        observation.invalidate()
    }

    @Test func invalidatingOrReleasingStopsDeliveryAndLeavesNoEntry() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("a", default: 0, suite: suite)
        let calls = Recorder<Int>()
        let observation = Defaults.observe(suite: suite, options: []) { calls.append(1) }
        #expect(Defaults.observerEntryCount(for: suite) == 1)
        observation.invalidate()
        suite[key] = 1
        #expect(calls.count == 0)
        #expect(Defaults.observerEntryCount(for: suite) == 0)
        do {
            _ = Defaults.observe(suite: suite, options: []) { calls.append(1) }
        }
        suite[key] = 2
        #expect(calls.count == 0)
        #expect(Defaults.observerEntryCount(for: suite) == 0)
    }

    @Test func anObservationTiedToAGoneOwnerIsDroppedOnTheNextChange() {
        final class Owner {}
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("a", default: 0, suite: suite)
        let calls = Recorder<Int>()
        do {
            let owner = Owner()
            Defaults.observe(suite: suite, options: []) { calls.append(1) }.tieToLifetime(of: owner)
            suite[key] = 1
        }
        #expect(calls.count == 1)
        suite[key] = 2
        #expect(calls.count == 1)
        #expect(Defaults.observerEntryCount(for: suite) == 0)
    }

    @Test func anEditOfTheFileIsDelivered() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("settings.json")
            try Data(#"{"a" : 1}"#.utf8).write(to: file)
            let suite = Defaults.Suite(fileURL: file)
            let seen = EventLog<[String: Defaults.JSONValue]>()
            let observation = Defaults.observe(suite: suite, options: []) { seen.append(suite.storedValues()) }
            // A key no `Defaults.Key` names, written by a person (saved whole, as an editor does).
            try Data(#"{"a" : 1, "unnamed" : {"nested" : true}}"#.utf8).write(to: file, options: .atomic)
            #expect(await seen.wait(forCount: 1))
            #expect(seen.all.first?["unnamed"] == .object(["nested": .bool(true)]))
            observation.invalidate()
        }
    }
}
