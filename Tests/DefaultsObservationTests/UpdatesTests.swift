import DefaultsObservation
import Testing

@Suite struct UpdatesTests {
    let suite = Defaults.Suite.inMemory()
    var quality: Defaults.Key<Double> { .init("quality", default: 0.8, suite: suite) }
    var name: Defaults.Key<String?> { .init("name", suite: suite) }

    @Test func startsWithTheCurrentValueThenYieldsChanges() async {
        var iterator = Defaults.updates(quality).makeAsyncIterator()
        #expect(await iterator.next() == 0.8)
        Defaults[quality] = 0.5
        #expect(await iterator.next() == 0.5)
        quality.reset()
        #expect(await iterator.next() == 0.8)
    }

    @Test func withoutInitialWaitsForTheFirstChange() async {
        var iterator = Defaults.updates(quality, initial: false).makeAsyncIterator()
        Defaults[quality] = 0.1
        #expect(await iterator.next() == 0.1)
    }

    @Test func aSlowConsumerGetsOnlyTheNewestValue() async {
        var iterator = Defaults.updates(quality, initial: false).makeAsyncIterator()
        for value in [0.1, 0.2, 0.3] { Defaults[quality] = value }
        #expect(await iterator.next() == 0.3)
        Defaults[quality] = 0.4
        #expect(await iterator.next() == 0.4)
    }

    @Test func severalKeysYieldATupleOfFreshValues() async {
        var iterator = Defaults.updates(quality, name).makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.0 == 0.8 && first?.1 == nil)
        suite.transaction {
            Defaults[quality] = 0.2
            Defaults[name] = "Ada"
        }
        let second = await iterator.next()
        #expect(second?.0 == 0.2 && second?.1 == "Ada")
        Defaults[name] = "Grace"
        let third = await iterator.next()
        #expect(third?.0 == 0.2 && third?.1 == "Grace")
    }

    @Test func aListOfKeysYieldsAnEventWhenOneOfThemChanges() async {
        var iterator = Defaults.updates([quality, name]).makeAsyncIterator()
        #expect(await iterator.next() != nil)
        Defaults[name] = "x"
        #expect(await iterator.next() != nil)
    }

    @Test func endingTheConsumingTaskRemovesTheSubscription() async {
        let stream = Defaults.updates(quality, initial: false)
        #expect(Defaults.observerEntryCount(for: suite) == 1)
        let consumer = Task {
            var received: [Double] = []
            for await value in stream { received.append(value) }
            return received
        }
        consumer.cancel()
        _ = await consumer.value
        #expect(Defaults.observerEntryCount(for: suite) == 0)
    }

    @Test func droppingTheStreamRemovesTheSubscription() async {
        do {
            var iterator = Defaults.updates(quality).makeAsyncIterator()
            #expect(await iterator.next() == 0.8)
            #expect(Defaults.observerEntryCount(for: suite) == 1)
        }
        #expect(Defaults.observerEntryCount(for: suite) == 0)
    }

    @Test func aConsumerThatStopsAfterOneValueLeavesTheRegistry() async {
        let task = Task {
            for await value in Defaults.updates(quality) { return value }
            return -1
        }
        #expect(await task.value == 0.8)
        #expect(Defaults.observerEntryCount(for: suite) == 0)
    }
}
