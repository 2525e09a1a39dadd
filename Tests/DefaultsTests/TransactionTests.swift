import Defaults
import Dispatch
import Foundation
import Testing

/// `Suite.transaction`: one change event, at most one file write, all-or-nothing, consistent reads.
///
/// Serialized because these tests record events through the process-wide change sinks.
@Suite(.serialized) struct TransactionTests {
    struct Failure: Error, Equatable {
        var code: Int
    }

    @Test func returnsTheBodysValue() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("n", default: 20, suite: suite)
        let result = suite.transaction { Defaults[key] + 22 }
        #expect(result == 42)
        let text: String = suite.transaction { "done" }
        #expect(text == "done")
    }

    @Test func rethrowsAndAThrowingBodyChangesNothing() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let first = Defaults.Key<Int>("first", default: 0, suite: suite)
            let second = Defaults.Key<String>("second", default: "", suite: suite)
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }

            let error = #expect(throws: Failure.self) {
                try suite.transaction {
                    Defaults[first] = 1
                    Defaults[second] = "two"
                    #expect(Defaults[first] == 1)
                    throw Failure(code: 7)
                }
            }
            #expect(error == Failure(code: 7))
            #expect(Defaults[first] == 0)
            #expect(Defaults[second] == "")
            #expect(suite.storedValue(named: "first") == nil)
            try suite.synchronize()
            #expect(recorder.events.isEmpty)
            #expect(suite.fileReplacementCount == 0)
            #expect(!FileManager.default.fileExists(atPath: file.path))
        }
    }

    @Test func aThrowingBodyKeepsEarlierValues() throws {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("n", default: 0, suite: suite)
        Defaults[key] = 5
        #expect(throws: Failure.self) {
            try suite.transaction {
                Defaults[key] = 6
                suite.removeAll()
                throw Failure(code: 1)
            }
        }
        #expect(Defaults[key] == 5)
    }

    @Test func writesLandTogetherAsOneEventAndOneFileReplacement() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let width = Defaults.Key<Int>("width", default: 0, suite: suite)
            let height = Defaults.Key<Int>("height", default: 0, suite: suite)
            let title = Defaults.Key<String?>("title", suite: suite)
            let unchanged = Defaults.Key<Int>("unchanged", default: 0, suite: suite)
            Defaults[title] = "old"
            Defaults[unchanged] = 3
            try suite.synchronize()
            let replacementsBefore = suite.fileReplacementCount
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }

            suite.transaction {
                Defaults[width] = 800
                Defaults[height] = 600
                Defaults[width] = 1024
                Defaults[title] = nil
                Defaults[unchanged] = 3
            }

            #expect(recorder.events.count == 1)
            let event = try #require(recorder.events.first)
            #expect(Set(event.changes.keys) == ["width", "height", "title"])
            #expect(event.valueChanges["width"] == StoreValueChange(nil, .number("1024")))
            #expect(event.valueChanges["title"] == StoreValueChange(.string("old"), nil))
            #expect(event.origin == .local)
            #expect(event.suite == suite)

            try suite.synchronize()
            #expect(suite.fileReplacementCount - replacementsBefore == 1)
            let object = try storeFileObject(file)
            #expect(object["width"] as? Int == 1024)
            #expect(object["height"] as? Int == 600)
            #expect(object["title"] == nil)
        }
    }

    @Test func aTransactionThatChangesNothingMakesNoEvent() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("n", default: 0, suite: suite)
        Defaults[key] = 1
        let recorder = StoreChangeRecorder(suite)
        defer { recorder.stop() }
        suite.transaction {
            Defaults[key] = 2
            Defaults[key] = 1
        }
        suite.transaction {}
        #expect(recorder.events.isEmpty)
        #expect(Defaults[key] == 1)
    }

    @Test func readsInsideSeeTheBodysWritesAndOtherwiseTheStartingSnapshot() {
        let suite = Defaults.Suite.inMemory()
        let shared = Defaults.Key<Int>("shared", default: 0, suite: suite)
        let outsider = Defaults.Key<String?>("outsider", suite: suite)
        let own = Defaults.Key<Int>("own", default: 0, suite: suite)
        let removed = Defaults.Key<Int>("removed", default: -1, suite: suite)
        Defaults[shared] = 1
        Defaults[removed] = 10

        suite.transaction {
            #expect(Defaults[shared] == 1)
            // NB: a thread of its own does not carry this transaction, so its writes commit directly.
            let other = StoreThread {
                Defaults[shared] = 2
                Defaults[outsider] = "from another thread"
            }
            other.join()
            #expect(Defaults[shared] == 1, "a write committed by another thread is not visible inside")
            #expect(Defaults[outsider] == nil)
            #expect(suite[shared] == 1)

            Defaults[own] = 5
            #expect(Defaults[own] == 5)
            Defaults[own] += 1
            #expect(Defaults[own] == 6)
            removed.reset()
            #expect(Defaults[removed] == -1)
        }

        #expect(Defaults[shared] == 2, "the transaction did not write it, so the other thread's value stays")
        #expect(Defaults[outsider] == "from another thread")
        #expect(Defaults[own] == 6)
        #expect(Defaults[removed] == -1)
    }

    @Test func otherThreadsDoNotSeeTheTransactionBeforeItEnds() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("n", default: 0, suite: suite)
        let seenInside = StoreLog<Int>()
        suite.transaction {
            Defaults[key] = 99
            let reader = StoreThread { seenInside.append(Defaults[key]) }
            reader.join()
        }
        #expect(seenInside.all == [0])
        #expect(Defaults[key] == 99)
    }

    @Test func theTransactionsValueLandsLastWhereBothWriteTheSameKey() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<String>("k", default: "", suite: suite)
        suite.transaction {
            Defaults[key] = "transaction"
            let other = StoreThread { Defaults[key] = "other thread" }
            other.join()
        }
        #expect(Defaults[key] == "transaction")
    }

    @Test func nestedTransactionsFoldIntoTheOuterOne() {
        let suite = Defaults.Suite.inMemory()
        let a = Defaults.Key<Int>("a", default: 0, suite: suite)
        let b = Defaults.Key<Int>("b", default: 0, suite: suite)
        let c = Defaults.Key<Int>("c", default: 0, suite: suite)
        let recorder = StoreChangeRecorder(suite)
        defer { recorder.stop() }
        let seenOutside = StoreLog<Int>()

        let inner: Int = suite.transaction {
            Defaults[a] = 1
            let value = suite.transaction {
                Defaults[b] = 2
                #expect(Defaults[a] == 1)
                return 20
            }
            #expect(recorder.events.isEmpty, "the inner transaction must not commit on its own")
            let reader = StoreThread { seenOutside.append(Defaults[b]) }
            reader.join()
            #expect(Defaults[b] == 2)
            Defaults[c] = 3
            return value
        }

        #expect(inner == 20)
        #expect(seenOutside.all == [0])
        #expect(recorder.changedKeySets == [["a", "b", "c"]])
        #expect(Defaults[a] == 1 && Defaults[b] == 2 && Defaults[c] == 3)
    }

    @Test func aThrowingInnerTransactionDropsOnlyItsOwnWrites() {
        let suite = Defaults.Suite.inMemory()
        let a = Defaults.Key<Int>("a", default: 0, suite: suite)
        let b = Defaults.Key<Int>("b", default: 0, suite: suite)
        let c = Defaults.Key<Int>("c", default: 0, suite: suite)
        let recorder = StoreChangeRecorder(suite)
        defer { recorder.stop() }

        suite.transaction {
            Defaults[a] = 1
            do {
                try suite.transaction {
                    Defaults[a] = 100
                    Defaults[b] = 200
                    suite.removeAll()
                    throw Failure(code: 2)
                }
                Issue.record("the inner transaction should have thrown")
            } catch {
                #expect(error as? Failure == Failure(code: 2))
            }
            #expect(Defaults[a] == 1)
            #expect(Defaults[b] == 0)
            Defaults[c] = 3
        }

        #expect(Defaults[a] == 1)
        #expect(Defaults[b] == 0)
        #expect(Defaults[c] == 3)
        #expect(recorder.changedKeySets == [["a", "c"]])
    }

    @Test func removeAllInsideATransactionIsPartOfIt() {
        let suite = Defaults.Suite.inMemory()
        let a = Defaults.Key<Int>("a", default: 0, suite: suite)
        let b = Defaults.Key<Int>("b", default: 0, suite: suite)
        Defaults[a] = 1
        Defaults[b] = 2
        let recorder = StoreChangeRecorder(suite)
        defer { recorder.stop() }

        suite.transaction {
            suite.removeAll()
            #expect(Defaults[a] == 0)
            Defaults[b] = 5
        }

        #expect(Defaults[a] == 0)
        #expect(Defaults[b] == 5)
        #expect(recorder.changedKeySets == [["a", "b"]])
    }

    @Test func transactionsOnTwoSuitesAreIndependent() {
        let first = Defaults.Suite.inMemory()
        let second = Defaults.Suite.inMemory()
        let one = Defaults.Key<Int>("n", default: 0, suite: first)
        let two = Defaults.Key<Int>("n", default: 0, suite: second)
        let firstRecorder = StoreChangeRecorder(first)
        let secondRecorder = StoreChangeRecorder(second)
        defer {
            firstRecorder.stop()
            secondRecorder.stop()
        }

        first.transaction {
            Defaults[one] = 1
            second.transaction {
                Defaults[two] = 2
                Defaults[one] = 11
            }
            #expect(secondRecorder.events.count == 1, "the inner suite's transaction commits when it ends")
            #expect(firstRecorder.events.isEmpty)
        }

        #expect(Defaults[one] == 11)
        #expect(Defaults[two] == 2)
        #expect(firstRecorder.changedKeySets == [["n"]])
        #expect(secondRecorder.changedKeySets == [["n"]])
    }
}
