import DefaultsObservation
import DefaultsTestSupport
import Testing

@Suite struct DebounceTests {
    let suite = Defaults.Suite.inMemory()
    var keys: [Defaults.Key<Int>] { (0..<5).map { Defaults.Key<Int>("k\($0)", default: 0, suite: suite) } }

    /// Delivers the debounced callbacks as a stream the test awaits.
    private func observe(
        _ keys: [Defaults._AnyKey],
        clock: ManualClock
    ) -> (Defaults.Observation, AsyncStream<Set<String>>) {
        let (stream, continuation) = AsyncStream.makeStream(of: Set<String>.self)
        let observation = Defaults.observe(keys: keys, debounce: .seconds(1), clock: clock) { changed in
            continuation.yield(Set(changed.map(\.name)))
        }
        return (observation, stream)
    }

    @Test func aTransactionOfFiveKeysIsOneCallbackListingThemAll() async {
        let clock = ManualClock()
        let keys = keys
        let (observation, stream) = observe(keys, clock: clock)
        var callbacks = stream.makeAsyncIterator()
        suite.transaction {
            for (index, key) in keys.enumerated() { Defaults[key] = index + 1 }
        }
        await clock.waitForSleepers()
        clock.advance(by: .seconds(1))
        #expect(await callbacks.next() == Set(keys.map(\.name)))
        #expect(clock.sleeperCount == 0)
        observation.invalidate()
    }

    @Test func aBurstIsOneCallbackOnceTheKeysHaveBeenQuiet() async {
        let clock = ManualClock()
        let keys = keys
        let (observation, stream) = observe(keys, clock: clock)
        var callbacks = stream.makeAsyncIterator()
        for value in 1...100 { Defaults[keys[value % 2]] = value }
        await clock.waitForSleepers()
        // Writes keep arriving: half a period later the timer must sleep again, not fire.
        clock.advance(by: .milliseconds(500))
        Defaults[keys[2]] = 1
        clock.advance(by: .milliseconds(500))
        // The timer woke at 1 s, saw the write at 0.5 s, and sleeps until 1.5 s.
        await clock.waitForSleepers()
        clock.advance(by: .milliseconds(499))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .milliseconds(1))
        #expect(await callbacks.next() == [keys[0].name, keys[1].name, keys[2].name])
        // Nothing is left sleeping, so no second callback can follow for that burst.
        #expect(clock.sleeperCount == 0)
        // The next burst starts a new collection.
        Defaults[keys[4]] = 7
        await clock.waitForSleepers()
        clock.advance(by: .seconds(1))
        #expect(await callbacks.next() == [keys[4].name])
        observation.invalidate()
    }

    @Test func writesToOtherKeysAndSuppressedWritesAreNotCounted() async {
        let clock = ManualClock()
        let keys = keys
        let (observation, stream) = observe([keys[0]], clock: clock)
        var callbacks = stream.makeAsyncIterator()
        Defaults[keys[1]] = 1
        Defaults.withoutPropagation { Defaults[keys[0]] = 1 }
        #expect(clock.sleeperCount == 0)
        Defaults[keys[0]] = 2
        await clock.waitForSleepers()
        clock.advance(by: .seconds(1))
        #expect(await callbacks.next() == [keys[0].name])
        observation.invalidate()
    }

    @Test func invalidatingDropsAPendingCallback() async {
        let clock = ManualClock()
        let keys = keys
        let calls = Recorder<Set<String>>()
        let observation = Defaults.observe(keys: keys, debounce: .seconds(1), clock: clock) { changed in
            calls.append(Set(changed.map(\.name)))
        }
        Defaults[keys[0]] = 1
        await clock.waitForSleepers()
        observation.invalidate()
        // The timer was cancelled, not woken: nothing is left to call the handler.
        #expect(clock.sleeperCount == 0)
        clock.advance(by: .seconds(5))
        Defaults[keys[1]] = 1
        #expect(clock.sleeperCount == 0)
        #expect(calls.count == 0)
        #expect(Defaults.observerEntryCount(for: suite) == 0)
    }
}
