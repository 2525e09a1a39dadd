import DefaultsObservation
import Dispatch
import Foundation
import Synchronization
import Testing

@Suite struct ObserveTests {
    let suite = Defaults.Suite.inMemory()
    var quality: Defaults.Key<Double> { .init("quality", default: 0.8, suite: suite) }
    var name: Defaults.Key<String?> { .init("name", suite: suite) }
    var count: Defaults.Key<Int> { .init("count", default: 0, suite: suite) }

    @Test func initialCallsTheHandlerOnceBeforeObserveReturns() {
        Defaults[quality] = 0.5
        let changes = Recorder<Defaults.KeyChange<Double>>()
        let observation = Defaults.observe(quality) { changes.append($0) }
        #expect(changes.elements == [Defaults.KeyChange(oldValue: 0.5, newValue: 0.5)])
        observation.invalidate()
    }

    @Test func isActiveUntilInvalidatedOrItsTiedOwnerIsGone() {
        let key = Defaults.Key<Int>("active", default: 0, suite: suite)
        let invalidated = Defaults.observe(key, options: []) { _ in }
        #expect(invalidated.isActive)
        invalidated.invalidate()
        #expect(!invalidated.isActive)

        var owner: NSObject? = NSObject()
        let tied = Defaults.observe(key, options: []) { _ in }.tieToLifetime(of: owner!)
        #expect(tied.isActive)
        owner = nil
        // The tie is looked at when one of its keys changes.
        Defaults[key] = 1
        #expect(!tied.isActive)
    }

    @Test func aChangeCarriesTheOldAndNewValues() {
        let changes = Recorder<Defaults.KeyChange<Double>>()
        let observation = Defaults.observe(quality, options: []) { changes.append($0) }
        Defaults[quality] = 0.1
        Defaults[quality] = 0.2
        #expect(
            changes.elements == [
                Defaults.KeyChange(oldValue: 0.8, newValue: 0.1),
                Defaults.KeyChange(oldValue: 0.1, newValue: 0.2),
            ]
        )
        observation.invalidate()
    }

    @Test func afterAResetTheNewValueIsTheDefault() {
        let clockStart = Date(timeIntervalSinceReferenceDate: 1000)
        let since = Defaults.Key<Date>("since", suite: suite) { clockStart }
        Defaults[since] = Date(timeIntervalSinceReferenceDate: 5)
        let changes = Recorder<Defaults.KeyChange<Date>>()
        let observation = Defaults.observe(since, options: []) { changes.append($0) }
        since.reset()
        #expect(changes.elements.map(\.newValue) == [clockStart])
        #expect(changes.elements.map(\.oldValue) == [Date(timeIntervalSinceReferenceDate: 5)])

        let names = Recorder<Defaults.KeyChange<String?>>()
        let nameObservation = Defaults.observe(name, options: []) { names.append($0) }
        Defaults[name] = "Ada"
        Defaults[name] = nil
        #expect(names.elements.map(\.newValue) == ["Ada", nil])
        observation.invalidate()
        nameObservation.invalidate()
    }

    @Test func twoObserversWithInitialAndOneWriteMakeFourCalls() {
        let calls = Atomic<Int>(0)
        let first = Defaults.observe(quality) { _ in calls.add(1, ordering: .relaxed) }
        let second = Defaults.observe(quality) { _ in calls.add(1, ordering: .relaxed) }
        Defaults[quality] = 0.3
        #expect(calls.load(ordering: .relaxed) == 4)
        first.invalidate()
        second.invalidate()
    }

    @Test func tenObserversAndTenWritesMakeExactlyOneHundredCalls() {
        let calls = Atomic<Int>(0)
        let observations = (0..<10)
            .map { _ in
                Defaults.observe(count, options: []) { _ in calls.add(1, ordering: .relaxed) }
            }
        for value in 1...10 { Defaults[count] = value }
        #expect(calls.load(ordering: .relaxed) == 100)
        for observation in observations { observation.invalidate() }
    }

    @Test func oneHundredConcurrentWritesOfDistinctValuesMakeOneHundredAndOneCalls() {
        let values = Recorder<Int>()
        let observation = Defaults.observe(count) { values.append($0.newValue) }
        DispatchQueue.concurrentPerform(iterations: 100) { index in
            Defaults[count] = index + 1
        }
        #expect(values.count == 101)
        #expect(Set(values.elements.dropFirst()) == Set(1...100))
        observation.invalidate()
    }

    @Test func theHandlerRunsOnTheWritingThreadBeforeTheWriteReturns() {
        let threads = Recorder<String>()
        let observation = Defaults.observe(count, options: []) { _ in
            threads.append(Thread.current.description)
        }
        let writer = Thread.current.description
        Defaults[count] = 7
        #expect(threads.elements == [writer])
        observation.invalidate()
    }

    @Test func aWriteOfTheSameValueIsNotDelivered() {
        Defaults[count] = 3
        let calls = Atomic<Int>(0)
        let observation = Defaults.observe(count, options: []) { _ in calls.add(1, ordering: .relaxed) }
        Defaults[count] = 3
        #expect(calls.load(ordering: .relaxed) == 0)
        observation.invalidate()
    }

    @Test func aHandlerMayReadAndWriteTheStore() {
        let doubled = Defaults.Key<Int>("doubled", default: 0, suite: suite)
        let seenByDoubled = Recorder<Int>()
        let doubledObservation = Defaults.observe(doubled, options: []) { seenByDoubled.append($0.newValue) }
        let observation = Defaults.observe(count, options: []) { change in
            Defaults[doubled] = Defaults[count] * 2
        }
        Defaults[count] = 21
        #expect(Defaults[doubled] == 42)
        #expect(seenByDoubled.elements == [42])
        observation.invalidate()
        doubledObservation.invalidate()
    }

    @Test func invalidateStopsDeliveryAndIsIdempotent() {
        let calls = Atomic<Int>(0)
        let observation = Defaults.observe(count, options: []) { _ in calls.add(1, ordering: .relaxed) }
        Defaults[count] = 1
        observation.invalidate()
        observation.invalidate()
        Defaults[count] = 2
        #expect(calls.load(ordering: .relaxed) == 1)
        #expect(Defaults.observerEntryCount(for: suite) == 0)
    }

    @Test func invalidateFromAnotherThreadStopsDelivery() {
        let calls = Atomic<Int>(0)
        let observation = Defaults.observe(count, options: []) { _ in calls.add(1, ordering: .relaxed) }
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global()
            .async {
                observation.invalidate()
                done.signal()
            }
        done.wait()
        Defaults[count] = 5
        #expect(calls.load(ordering: .relaxed) == 0)
    }

    @Test func releasingTheLastReferenceStopsDelivery() {
        let calls = Atomic<Int>(0)
        do {
            let observation = Defaults.observe(count, options: []) { _ in calls.add(1, ordering: .relaxed) }
            Defaults[count] = 1
            _ = observation
        }
        #expect(Defaults.observerEntryCount(for: suite) == 0)
        Defaults[count] = 2
        #expect(calls.load(ordering: .relaxed) == 1)
    }

    @Test func aLifetimeTieKeepsTheObservationAliveWhileTheOwnerLives() {
        let calls = Atomic<Int>(0)
        var owner: NSObject? = NSObject()
        Defaults.observe(count, options: []) { _ in calls.add(1, ordering: .relaxed) }
            .tieToLifetime(of: owner!)
        Defaults[count] = 1
        #expect(calls.load(ordering: .relaxed) == 1)
        owner = nil
        Defaults[count] = 2
        #expect(calls.load(ordering: .relaxed) == 1)
        #expect(Defaults.observerEntryCount(for: suite) == 0)
    }

    @Test func removingTheLifetimeTieLeavesTheObservationRunning() {
        let calls = Atomic<Int>(0)
        var owner: NSObject? = NSObject()
        let observation = Defaults.observe(count, options: []) { _ in calls.add(1, ordering: .relaxed) }
            .tieToLifetime(of: owner!)
        observation.removeLifetimeTie()
        owner = nil
        Defaults[count] = 1
        #expect(calls.load(ordering: .relaxed) == 1)
        observation.invalidate()
        _ = owner
    }

    @Test func observingSeveralKeysMakesOneCallPerTransaction() {
        let calls = Atomic<Int>(0)
        let observation = Defaults.observe(keys: quality, name, count) { calls.add(1, ordering: .relaxed) }
        #expect(calls.load(ordering: .relaxed) == 1)
        suite.transaction {
            Defaults[quality] = 0.1
            Defaults[name] = "x"
            Defaults[count] = 9
        }
        #expect(calls.load(ordering: .relaxed) == 2)
        Defaults[count] = 10
        Defaults.reset(quality, name)
        #expect(calls.load(ordering: .relaxed) == 4)
        Defaults[Defaults.Key<Int>("unrelated", default: 0, suite: suite)] = 1
        #expect(calls.load(ordering: .relaxed) == 4)
        observation.invalidate()
    }

    @Test func observersOfTheSameNameInAnotherSuiteAreNotCalled() {
        let other = Defaults.Suite.inMemory()
        let calls = Atomic<Int>(0)
        let observation = Defaults.observe(count, options: []) { _ in calls.add(1, ordering: .relaxed) }
        Defaults[Defaults.Key<Int>("count", default: 0, suite: other)] = 1
        #expect(calls.load(ordering: .relaxed) == 0)
        observation.invalidate()
    }
}
