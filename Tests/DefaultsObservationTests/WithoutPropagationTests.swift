import DefaultsObservation
import Dispatch
import Synchronization
import Testing

@Suite struct WithoutPropagationTests {
    let suite = Defaults.Suite.inMemory()
    var key: Defaults.Key<Int> { .init("a", default: 0, suite: suite) }

    @Test func writesInsideAreStoredButNotDelivered() {
        let calls = Atomic<Int>(0)
        let observation = Defaults.observe(key, options: []) { _ in calls.add(1, ordering: .relaxed) }
        let result = Defaults.withoutPropagation {
            Defaults[key] = 5
            return "done"
        }
        #expect(result == "done")
        #expect(Defaults[key] == 5)
        #expect(calls.load(ordering: .relaxed) == 0)
        observation.invalidate()
    }

    @Test func anObserverWritingItsOwnKeyInsideIsCalledOncePerOutsideWrite() {
        let calls = Atomic<Int>(0)
        let key = key
        let observation = Defaults.observe(key, options: []) { change in
            calls.add(1, ordering: .relaxed)
            Defaults.withoutPropagation { Defaults[key] = change.newValue * 10 }
        }
        Defaults[key] = 1
        #expect(Defaults[key] == 10)
        Defaults[key] = 2
        #expect(Defaults[key] == 20)
        #expect(calls.load(ordering: .relaxed) == 2)
        observation.invalidate()
    }

    @Test func itRethrowsAndNests() throws {
        struct Failure: Error {}
        let calls = Atomic<Int>(0)
        let observation = Defaults.observe(key, options: []) { _ in calls.add(1, ordering: .relaxed) }
        #expect(throws: Failure.self) {
            try Defaults.withoutPropagation {
                Defaults[key] = 1
                throw Failure()
            }
        }
        Defaults.withoutPropagation {
            Defaults.withoutPropagation { Defaults[key] = 2 }
            Defaults[key] = 3
        }
        #expect(calls.load(ordering: .relaxed) == 0)
        Defaults[key] = 4
        #expect(calls.load(ordering: .relaxed) == 1)
        observation.invalidate()
    }

    @Test func aWriteFromAnotherThreadAtTheSameTimeStillPropagates() {
        let calls = Recorder<Int>()
        let observation = Defaults.observe(key, options: []) { calls.append($0.newValue) }
        let other = Defaults.Key<Int>("b", default: 0, suite: suite)
        let otherObservation = Defaults.observe(other, options: []) { calls.append($0.newValue) }
        let inside = DispatchSemaphore(value: 0)
        let written = DispatchSemaphore(value: 0)
        DispatchQueue.global()
            .async {
                inside.wait()
                Defaults[other] = 99
                written.signal()
            }
        Defaults.withoutPropagation {
            Defaults[key] = 1
            inside.signal()
            written.wait()
        }
        #expect(calls.elements == [99])
        observation.invalidate()
        otherObservation.invalidate()
    }

    /// A task started inside the scope inherits it, and its writes stay silent after the scope
    /// has ended; a write of this task after the scope propagates. (The store reads the scope's
    /// task-local only once a scope was ever entered, and never forgets that one was: a count of
    /// the scopes open would say "none" while the task writes.)
    @Test func aTaskStartedInsideWritesSilentlyAfterTheScopeEnded() async {
        let calls = Atomic<Int>(0)
        let key = key
        let observation = Defaults.observe(key, options: []) { _ in calls.add(1, ordering: .relaxed) }
        let (started, go) = AsyncStream.makeStream(of: Void.self)
        let task = Defaults.withoutPropagation {
            Task {
                for await _ in started { break }
                Defaults[key] = 7
            }
        }
        go.yield()
        await task.value
        #expect(Defaults[key] == 7)
        #expect(calls.load(ordering: .relaxed) == 0)
        Defaults[key] = 8
        #expect(calls.load(ordering: .relaxed) == 1)
        observation.invalidate()
    }

    @Test func theAsyncOverloadHoldsAcrossASuspension() async {
        let calls = Atomic<Int>(0)
        let observation = Defaults.observe(key, options: []) { _ in calls.add(1, ordering: .relaxed) }
        let value = await Defaults.withoutPropagation {
            Defaults[key] = 1
            await Task.yield()
            let fromChild = await Task { Defaults[key] }.value
            Defaults[key] = 2
            return fromChild
        }
        #expect(value == 1)
        #expect(calls.load(ordering: .relaxed) == 0)
        Defaults[key] = 3
        #expect(calls.load(ordering: .relaxed) == 1)
        observation.invalidate()
    }

    @Test func itSilencesUpdatesStreamsToo() async {
        var iterator = Defaults.updates(key, initial: false).makeAsyncIterator()
        Defaults.withoutPropagation { Defaults[key] = 1 }
        Defaults[key] = 2
        #expect(await iterator.next() == 2)
    }
}

@Suite struct WithoutPropagationInTransactionTests {
    let suite = Defaults.Suite.inMemory()
    var a: Defaults.Key<Int> { .init("a", default: 0, suite: suite) }
    var b: Defaults.Key<Int> { .init("b", default: 0, suite: suite) }

    @Test func aSuppressedWriteInsideATransactionIsNotDeliveredButTheOthersAre() {
        let seenA = Recorder<Int>()
        let seenB = Recorder<Int>()
        let calls = Recorder<Void>()
        let observeA = Defaults.observe(a, options: []) { seenA.append($0.newValue) }
        let observeB = Defaults.observe(b, options: []) { seenB.append($0.newValue) }
        let both = Defaults.observe(keys: a, b, options: []) { calls.append(()) }
        suite.transaction {
            Defaults.withoutPropagation { Defaults[a] = 1 }
            Defaults[b] = 2
        }
        #expect(Defaults[a] == 1 && Defaults[b] == 2)
        #expect(seenA.elements.isEmpty)
        #expect(seenB.elements == [2])
        #expect(calls.count == 1)
        // The last write to a key decides: a suppressed write later written normally propagates.
        suite.transaction {
            Defaults.withoutPropagation { Defaults[a] = 3 }
            Defaults[a] = 4
        }
        #expect(seenA.elements == [4])
        for observation in [observeA, observeB, both] { observation.invalidate() }
    }

    @Test func aTransactionRunInsideWithoutPropagationIsSilent() {
        let calls = Recorder<Void>()
        let observation = Defaults.observe(keys: a, b, options: []) { calls.append(()) }
        Defaults.withoutPropagation {
            suite.transaction {
                Defaults[a] = 1
                Defaults[b] = 1
            }
        }
        #expect(calls.count == 0)
        #expect(Defaults[a] == 1)
        observation.invalidate()
    }

    @Test func aTaskStartedInsideATransactionWritesAfterItEnds() async {
        let seen = Recorder<Int>()
        let observation = Defaults.observe(a, options: []) { seen.append($0.newValue) }
        let (started, gate) = AsyncStream.makeStream(of: Void.self)
        let task = suite.transaction {
            Task { [a] in
                for await _ in started { break }
                Defaults[a] = 7  // after the transaction committed: must not vanish
                return Defaults[a]
            }
        }
        gate.yield()
        #expect(await task.value == 7)
        #expect(Defaults[a] == 7)
        #expect(seen.elements == [7])
        observation.invalidate()
    }
}
