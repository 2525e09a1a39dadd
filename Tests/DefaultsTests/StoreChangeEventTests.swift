import Defaults
import Foundation
import Testing

/// The change events every committed change sends through the core's change sinks.
///
/// Serialized because these tests record events through the process-wide sink.
@Suite(.serialized) struct StoreChangeEventTests {
    @Test func anEventListsTheOldAndNewStoredValues() throws {
        let suite = Defaults.Suite.inMemory()
        let count = Defaults.Key<Int>("count", default: 0, suite: suite)
        let name = Defaults.Key<String?>("name", suite: suite)
        let recorder = StoreChangeRecorder(suite)
        defer { recorder.stop() }

        Defaults[count] = 1
        Defaults[count] = 2
        Defaults[name] = "n"
        count.reset()

        let events = recorder.events
        try #require(events.count == 4)
        #expect(events[0].valueChanges == ["count": StoreValueChange(nil, .number("1"))])
        #expect(events[1].valueChanges == ["count": StoreValueChange(.number("1"), .number("2"))])
        #expect(events[2].valueChanges == ["name": StoreValueChange(nil, .string("n"))])
        #expect(events[3].valueChanges == ["count": StoreValueChange(.number("2"), nil)])
        #expect(events.allSatisfy { $0.origin == .local && !$0.isPropagationSuppressed && $0.suite == suite })
    }

    @Test func aWriteOfTheStoredValueMakesNoEventAndNoFileReplacement() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let count = Defaults.Key<Int>("count", default: 0, suite: suite)
            let list = Defaults.Key<[String]>("list", default: [], suite: suite)
            Defaults[count] = 5
            Defaults[list] = ["a", "b"]
            try suite.synchronize()
            let replacements = suite.fileReplacementCount
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }

            Defaults[count] = 5
            Defaults[list] = ["a", "b"]
            Defaults.reset("never-stored", suite: suite)
            try suite.synchronize()

            #expect(recorder.events.isEmpty)
            #expect(suite.fileReplacementCount == replacements)
        }
    }

    @Test func writingTheDefaultWhenNothingIsStoredIsAChange() {
        let suite = Defaults.Suite.inMemory()
        let count = Defaults.Key<Int>("count", default: 0, suite: suite)
        let recorder = StoreChangeRecorder(suite)
        defer { recorder.stop() }
        Defaults[count] = 0
        #expect(recorder.events.map(\.valueChanges) == [["count": StoreValueChange(nil, .number("0"))]])
    }

    @Test func removeAllIsOneEventListingEveryRemovedKey() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"foreign" : true}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            Defaults[Defaults.Key<Int>("a", default: 0, suite: suite)] = 1
            Defaults[Defaults.Key<String>("b", default: "", suite: suite)] = "b"
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }

            suite.removeAll()

            #expect(recorder.changedKeySets == [["a", "b", "foreign"]])
            let event = try #require(recorder.events.first)
            #expect(event.valueChanges["foreign"] == StoreValueChange(.bool(true), nil))
            #expect(event.changes.values.allSatisfy { $0.new == nil })

            suite.removeAll()
            #expect(recorder.events.count == 1, "removing everything from an empty suite is no change")
            try suite.synchronize()
        }
    }

    @Test func resetOfSeveralKeysIsOneEvent() {
        let suite = Defaults.Suite.inMemory()
        let a = Defaults.Key<Int>("a", default: 0, suite: suite)
        let b = Defaults.Key<String>("b", default: "", suite: suite)
        let c = Defaults.Key<Bool>("c", default: false, suite: suite)
        let d = Defaults.Key<Int>("d", default: 0, suite: suite)
        Defaults[a] = 1
        Defaults[b] = "x"
        Defaults[c] = true
        Defaults[d] = 4
        let recorder = StoreChangeRecorder(suite)
        defer { recorder.stop() }

        Defaults.reset(a, b, c)
        #expect(recorder.changedKeySets == [["a", "b", "c"]])

        Defaults[a] = 1
        Defaults[b] = "x"
        Defaults.reset([a, b, d])
        #expect(recorder.changedKeySets.last == ["a", "b", "d"])

        Defaults[a] = 1
        Defaults[c] = true
        Defaults.reset("a", "c", "nothing-here", suite: suite)
        #expect(recorder.changedKeySets.last == ["a", "c"])
        #expect(recorder.events.count == 7)
    }

    @Test func writesInsidePropagationSuppressionAreMarked() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("n", default: 0, suite: suite)
        let recorder = StoreChangeRecorder(suite)
        defer { recorder.stop() }

        Defaults[key] = 1
        Defaults.Propagation.suppressing {
            Defaults[key] = 2
            suite.transaction {
                Defaults[key] = 3
            }
        }
        Defaults[key] = 4

        #expect(recorder.events.map(\.isPropagationSuppressed) == [false, true, true, false])
        #expect(Defaults[key] == 4, "suppressed writes are still stored")
    }

    @Test func suppressionIsScopedToTheWritingThread() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("n", default: 0, suite: suite)
        let recorder = StoreChangeRecorder(suite)
        defer { recorder.stop() }

        Defaults.Propagation.suppressing {
            let other = StoreThread { Defaults[key] = 1 }
            other.join()
        }

        #expect(recorder.events.map(\.isPropagationSuppressed) == [false])
    }

    @Test func eventsOfOneSuiteNameOnlyThatSuite() {
        let suite = Defaults.Suite.inMemory()
        let other = Defaults.Suite.inMemory()
        let recorder = StoreChangeRecorder(suite)
        let otherRecorder = StoreChangeRecorder(other)
        defer {
            recorder.stop()
            otherRecorder.stop()
        }
        Defaults[Defaults.Key<Int>("n", default: 0, suite: suite)] = 1
        Defaults[Defaults.Key<Int>("n", default: 0, suite: other)] = 2
        Defaults[Defaults.Key<Int>("m", default: 0, suite: other)] = 3
        #expect(recorder.events.count == 1)
        #expect(otherRecorder.events.count == 2)
        #expect(otherRecorder.events.allSatisfy { $0.suite == other })
    }

    /// Each write must reach the sink through the same few frames, however many writes came before.
    ///
    /// The stack depth at delivery stands in for the cost of delivery, which a test cannot time.
    @Test func deliveringAnEventDoesNotGetDeeperWithEveryWrite() throws {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("n", default: 0, suite: suite)
        let recorder = StoreChangeRecorder(suite)
        defer { recorder.stop() }
        func write(_ value: Int) { Defaults[key] = value }

        write(1)
        for value in 2...2_000 { write(value) }
        write(2_001)

        let deliveries = recorder.deliveries
        try #require(deliveries.count == 2_001)
        let first = deliveries[0].stackAddress
        let last = deliveries[2_000].stackAddress
        let growth = first > last ? first - last : last - first
        #expect(
            growth < 4_096,
            """
            the change sink was called \(growth) bytes deeper on the stack after 2,000 writes: every write \
            wraps the stored handler again, so delivery gets slower and finally overflows the stack
            """
        )
    }

    @Test func theEventIsDeliveredBeforeTheWriteReturns() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("n", default: 0, suite: suite)
        let recorder = StoreChangeRecorder(suite)
        defer { recorder.stop() }
        for value in 1...50 {
            Defaults[key] = value
            #expect(recorder.events.count == value)
        }
    }
}
