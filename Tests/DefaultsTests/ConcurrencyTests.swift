import Defaults
import Dispatch
import Foundation
import Testing

/// Many threads reading and writing one suite at once, and bursts of writes.
///
/// Serialized: these tests keep every core busy, and the coalescing test needs its burst of writes
/// not to be slowed by the others (the machine may have two cores). The transaction test records
/// events through the process-wide change sinks.
@Suite(.serialized) struct ConcurrencyTests {
    /// A value that can tell when it was read half-written: `checksum` is derived from the rest.
    struct Payload: Codable, Equatable, Defaults.Serializable {
        var id: Int
        var name: String
        var items: [Int]
        var ratio: Double
        var checksum: Int

        init(id: Int) {
            self.id = id
            self.name = "payload-\(id)"
            self.items = Array(0..<(id % 17))
            self.ratio = Double(id) / 8
            self.checksum = Self.checksum(id: id, name: name, items: items, ratio: ratio)
        }

        static func checksum(id: Int, name: String, items: [Int], ratio: Double) -> Int {
            id &* 31 &+ name.utf8.count &* 7 &+ items.reduce(0, &+) &+ Int(ratio * 8)
        }

        var isComplete: Bool {
            self == Payload(id: id) && checksum == Self.checksum(id: id, name: name, items: items, ratio: ratio)
        }
    }

    @Test func concurrentWritesToOneKeyLeaveOneOfTheWrittenValues() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let key = Defaults.Key<Int>("contended", default: -1, suite: suite)
            let writes = 1_000

            DispatchQueue.concurrentPerform(iterations: writes) { index in
                Defaults[key] = index
            }

            let final = Defaults[key]
            #expect((0..<writes).contains(final))
            try suite.synchronize()
            #expect(try storeFileObject(file)["contended"] as? Int == final)
            #expect(try storeDirectoryListing(directory) == ["settings.json", "settings.json.lock"])
        }
    }

    @Test func aHundredKeysWrittenConcurrentlyAreAllKept() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let keys = (0..<100).map { Defaults.Key<String>("key-\($0)", default: "", suite: suite) }

            DispatchQueue.concurrentPerform(iterations: keys.count) { index in
                Defaults[keys[index]] = "value-\(index)"
            }

            for (index, key) in keys.enumerated() {
                #expect(Defaults[key] == "value-\(index)")
            }
            try suite.synchronize()
            let object = try storeFileObject(file)
            #expect(object.count == 100)
            for index in keys.indices {
                #expect(object["key-\(index)"] as? String == "value-\(index)")
            }
        }
    }

    @Test func concurrentReadersAndWritersOfACodableKeyAlwaysReadACompleteValue() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let initial = Payload(id: 0)
            let key = Defaults.Key<Payload>("payload", default: initial, suite: suite)
            let broken = StoreLog<Payload>()
            let roundsPerThread = 300

            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for round in 0..<roundsPerThread {
                    if thread.isMultiple(of: 2) {
                        Defaults[key] = Payload(id: thread * roundsPerThread + round + 1)
                    } else {
                        let read = Defaults[key]
                        if !read.isComplete { broken.append(read) }
                    }
                }
            }

            #expect(broken.all.isEmpty, "\(broken.all.count) reads returned an incomplete value")
            let final = Defaults[key]
            #expect(final.isComplete)
            #expect(final != initial)
            try suite.synchronize()
            let reopened = try storeSuiteOnACopy(of: file)
            #expect(Defaults[Defaults.Key<Payload>("payload", default: initial, suite: reopened)] == final)
        }
    }

    @Test func concurrentTransactionsAndRemoveAllNeverCorruptTheFile() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let keys = (0..<10).map { Defaults.Key<Int>("k\($0)", default: 0, suite: suite) }

            DispatchQueue.concurrentPerform(iterations: 200) { index in
                switch index % 10 {
                case 0:
                    suite.removeAll()
                case 1:
                    try? suite.synchronize()
                default:
                    suite.transaction {
                        for key in keys { Defaults[key] = index }
                    }
                }
            }

            try suite.synchronize()
            let object = try storeFileObject(file)
            let values = Set(object.values.compactMap { $0 as? Int })
            #expect(values.count <= 1, "a transaction writes every key with one value: \(object)")
            #expect(object.isEmpty || object.count == keys.count)
            #expect(try storeDirectoryListing(directory) == ["settings.json", "settings.json.lock"])
            let memory = Set(keys.map { Defaults[$0] })
            #expect(memory.count == 1)
        }
    }

    @Test func aBurstOfWritesMakesAtMostOneReplacementPerCoalescingDelay() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let key = Defaults.Key<Int>("counter", default: 0, suite: suite)
            let started = ContinuousClock.now
            for value in 1...10_000 {
                Defaults[key] = value
            }
            try suite.synchronize()
            let elapsed = ContinuousClock.now - started
            // NB: a bound on the rate, not on speed: however slow the machine, the timer writes at
            // most once per delay, and `synchronize()` once more (plus one for a timer that was
            // already running when the clock started).
            let delays = Int(elapsed / Defaults.Suite.coalescingDelay)
            let count = suite.fileReplacementCount
            #expect(count >= 1)
            #expect(count <= delays + 2, "10,000 writes in \(elapsed) made \(count) files")
            #expect(try storeFileObject(file)["counter"] as? Int == 10_000)
        }
    }

    @Test func readersNeverSeeHalfATransaction() {
        let suite = Defaults.Suite.inMemory()
        let a = Defaults.Key<Int>("a", default: 0, suite: suite)
        let b = Defaults.Key<Int>("b", default: 0, suite: suite)
        let recorder = StoreChangeRecorder(suite)
        defer { recorder.stop() }
        let rounds = 1_000
        let writerDone = StoreFlag()
        let torn = StoreCounter()
        let readCounts = StoreLog<Int>()

        let readers = (0..<2)
            .map { _ in
                StoreThread {
                    var count = 0
                    while !writerDone.isSet || count < 100 {
                        // NB: a transaction reads one consistent snapshot, so both keys come from the same commit.
                        let (x, y) = suite.transaction { (Defaults[a], Defaults[b]) }
                        if x != y { torn.increment() }
                        count += 1
                    }
                    readCounts.append(count)
                }
            }
        let writer = StoreThread {
            for value in 1...rounds {
                suite.transaction {
                    Defaults[a] = value
                    Defaults[b] = value
                }
            }
            writerDone.set()
        }
        writer.join()
        for reader in readers { reader.join() }
        let reads = readCounts.all.reduce(0, +)

        #expect(torn.count == 0, "\(torn.count) of \(reads) reads saw half a transaction")
        #expect(Defaults[a] == rounds && Defaults[b] == rounds)
        let keySets = recorder.changedKeySets
        #expect(keySets.count == rounds)
        #expect(keySets.allSatisfy { $0 == ["a", "b"] }, "every transaction must arrive as one event with both keys")
        let consistentEvents = recorder.events.allSatisfy { $0.changes["a"]?.new == $0.changes["b"]?.new }
        #expect(consistentEvents)
    }
}
