import DefaultsObservation
import DefaultsTestSupport
import Foundation
import Synchronization
import Testing

/// Subscriptions whose owner or consumer went away leave the registry without a write to their
/// key, within the documented bound.
///
/// NB: serialized, and the only suite that keeps many tied observations alive: the sweep's
/// threshold grows with the tied observations alive anywhere in the process.
@Suite(.serialized) struct SubscriptionCleanupTests {
    let suite = Defaults.Suite.inMemory()
    var theme: Defaults.Key<String> { .init("theme", default: "light", suite: suite) }

    /// Something a handler captures, counting how many are alive.
    final class Capture: Sendable {
        static let alive = Atomic<Int>(0)
        init() { Self.alive.add(1, ordering: .relaxed) }
        deinit { Self.alive.subtract(1, ordering: .relaxed) }
    }

    /// A view-model of the kind the issue describes: it observes `theme` in `init` and ties the
    /// observation to itself.
    final class ViewModel: Sendable {
        init(observing key: Defaults.Key<String>, capturing capture: Capture, calls: Calls) {
            Defaults.observe(key, options: []) { _ in
                withExtendedLifetime(capture) { _ = calls.count.add(1, ordering: .relaxed) }
            }
            .tieToLifetime(of: self)
        }
    }

    final class Calls: Sendable {
        let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
    }

    final class Weak {
        weak var capture: Capture?
        init(_ capture: Capture) { self.capture = capture }
    }

    /// What a loop of made-and-released owners leaves; read once the loop has ended.
    struct Outcome: @unchecked Sendable {  // built on one thread, read after it finished
        var worstDead = 0
        var kept: [ViewModel] = []
        var captures: [Weak] = []
    }

    @Test func aHundredThousandReleasedOwnersOfANeverWrittenKeyLeaveAtMostTheFloor() async {
        let floor = Defaults.observerSweepFloor
        let calls = Calls()
        let (suite, theme) = (suite, theme)
        // NB: off the cooperative pool: seconds of work under the sanitizers, which would starve
        // the tasks of tests running beside this one.
        var outcome = await offThePool {
            var outcome = Outcome()
            for index in 0..<100_000 {
                do {
                    let capture = Capture()
                    outcome.captures.append(Weak(capture))
                    let model = ViewModel(observing: theme, capturing: capture, calls: calls)
                    // Every 200th view-model stays alive: 500 live observers at the end.
                    if index % 200 == 0 { outcome.kept.append(model) }
                }
                // Every view-model made so far is gone here, but those kept.
                let dead = Defaults.observerEntryCount(for: suite) - outcome.kept.count
                outcome.worstDead = max(outcome.worstDead, dead)
            }
            return outcome
        }
        let (worstDead, captures) = (outcome.worstDead, outcome.captures)
        let entries = Defaults.observerEntryCount(for: suite)
        #expect(worstDead <= max(floor, outcome.kept.count))
        #expect(entries - outcome.kept.count <= max(floor, outcome.kept.count))
        // What the swept observations captured is freed: only the captures of entries still held
        // (the live ones and the dead ones since the last sweep) are alive.
        let aliveCaptures = captures.count(where: { $0.capture != nil })
        #expect(aliveCaptures == entries)
        #expect(calls.value == 0)
        // The live ones still work.
        Defaults[theme] = "dark"
        #expect(calls.value == outcome.kept.count)
        #expect(Defaults.observerEntryCount(for: suite) == outcome.kept.count)
        #expect(captures.count(where: { $0.capture != nil }) == outcome.kept.count)
        outcome.kept.removeAll()
        Defaults[theme] = "light"
        #expect(Defaults.observerEntryCount(for: suite) == 0)
        #expect(captures.allSatisfy { $0.capture == nil })
    }

    @Test func releasedOwnersOfDebouncedObservationsLeaveUnderTheSameBound() async {
        let floor = Defaults.observerSweepFloor
        let calls = Atomic<Int>(0)
        let (suite, theme) = (suite, theme)
        // NB: off the cooperative pool, as above.
        let outcome = await offThePool {
            var outcome = Outcome()
            for _ in 0..<5_000 {
                do {
                    let owner = NSObject()
                    let capture = Capture()
                    outcome.captures.append(Weak(capture))
                    Defaults.observe(keys: theme, debounce: .milliseconds(50)) { _ in
                        withExtendedLifetime(capture) { _ = calls.add(1, ordering: .relaxed) }
                    }
                    .tieToLifetime(of: owner)
                }
                // Every owner made so far is gone here.
                outcome.worstDead = max(outcome.worstDead, Defaults.observerEntryCount(for: suite))
            }
            return outcome
        }
        #expect(outcome.worstDead <= floor)
        #expect(outcome.captures.count(where: { $0.capture != nil }) == Defaults.observerEntryCount(for: suite))
        #expect(calls.load(ordering: .relaxed) == 0)
    }

    @Test func updatesStreamsWhoseConsumersWentAwayLeaveAtOnce() async {
        for _ in 0..<5_000 {
            let capture = Capture()
            var iterator = Defaults.updates(theme).makeAsyncIterator()
            let first = await iterator.next()
            withExtendedLifetime(capture) { #expect(first == "light") }
            // The stream and its iterator go out of scope here, never iterated to the end.
        }
        #expect(Defaults.observerEntryCount(for: suite) == 0)
    }

    @Test func anUpdatesLoopWhoseTaskIsCancelledLeaves() async {
        let started = AsyncStream.makeStream(of: Void.self)
        let theme = theme
        let task = Task {
            var first = true
            for await _ in Defaults.updates(theme) where first {
                first = false
                started.continuation.yield()
            }
        }
        var iterator = started.stream.makeAsyncIterator()
        await iterator.next()
        #expect(Defaults.observerEntryCount(for: suite) == 1)
        task.cancel()
        await task.value
        #expect(Defaults.observerEntryCount(for: suite) == 0)
    }

    @Test func tiesOfLiveOwnersSurviveEverySweep() {
        let calls = Atomic<Int>(0)
        let owners = (0..<3_000).map { _ in NSObject() }
        for owner in owners {
            Defaults.observe(theme, options: []) { _ in calls.add(1, ordering: .relaxed) }.tieToLifetime(of: owner)
        }
        #expect(Defaults.observerEntryCount(for: suite) == owners.count)
        Defaults[theme] = "dark"
        #expect(calls.load(ordering: .relaxed) == owners.count)
        withExtendedLifetime(owners) {}
    }

    @Test func releasedOwnersLeaveZeroRegistryEntriesAfterTheNextWrite() {
        final class WeakObservation {
            weak var observation: Defaults.Observation?
            init(_ observation: Defaults.Observation) { self.observation = observation }
        }
        let calls = Atomic<Int>(0)
        let keys = (0..<10).map { Defaults.Key<Int>("key\($0)", default: 0, suite: suite) }
        var observations: [WeakObservation] = []
        do {
            var owners: [NSObject] = []
            for index in 0..<10_000 {
                let owner = NSObject()
                owners.append(owner)
                let observation = Defaults.observe(keys[index % 10], options: []) { _ in
                    calls.add(1, ordering: .relaxed)
                }
                observations.append(WeakObservation(observation.tieToLifetime(of: owner)))
            }
            #expect(Defaults.observerEntryCount(for: suite) == 10_000)
            // Tied, the observations live on with nobody else holding them.
            #expect(observations.allSatisfy { $0.observation != nil })
            owners.removeAll()
        }
        for key in keys { Defaults[key] = 1 }
        #expect(calls.load(ordering: .relaxed) == 0)
        #expect(Defaults.observerEntryCount(for: suite) == 0)
        // The memory comes back: every observation (and its subscriber and handler) was freed.
        #expect(observations.allSatisfy { $0.observation == nil })
    }
}
