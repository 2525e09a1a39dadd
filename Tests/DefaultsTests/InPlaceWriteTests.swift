import Defaults
import Foundation
import Testing

/// Writes of values kept in place, with their JSON made later.
///
/// A write of an `Int`, a `Bool`, a `Double` or a `Date` to a key nobody observes goes into the
/// decoded value kept for the key; its JSON is made only when something reads the stored values (a
/// flush, `storedValues()`, a transaction, an outside change, a new observer). These tests check
/// that nothing reading the stored values ever sees an older value than a read does.
@Suite struct InPlaceWriteTests {
    @Test func theLastOfManyWritesIsWhatTheFileGets() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let count = Defaults.Key<Int>("count", default: 0, suite: suite)
            let ratio = Defaults.Key<Double>("ratio", default: 0, suite: suite)
            let enabled = Defaults.Key<Bool>("enabled", default: false, suite: suite)
            for value in 1...1_000 {
                suite[count] = value
                suite[ratio] = Double(value) / 4
                suite[enabled] = value.isMultiple(of: 2)
            }
            #expect(suite[count] == 1_000)
            try suite.synchronize()
            let reader = try storeSuiteOnACopy(of: file)
            #expect(reader[count] == 1_000)
            #expect(reader[ratio] == 250)
            #expect(reader[enabled] == true)
        }
    }

    @Test func storedValuesShowTheLatestWrite() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        suite[key] = 1
        suite[key] = 2
        suite[key] = 3
        #expect(suite.storedValue(named: "count") == .number("3"))
        suite[key] = 4
        #expect(suite.storedValues()["count"] == .number("4"))
    }

    @Test func aWriteOfTheValueAlreadyThereIsNoChange() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let key = Defaults.Key<Int>("count", default: 0, suite: suite)
            suite[key] = 5
            try suite.synchronize()
            suite[key] = 6
            suite[key] = 5
            suite[key] = 5
            try suite.synchronize()
            #expect(try storeFileText(file).contains(#""count" : 5"#))
        }
    }

    @Test func aValueSpelledOtherwiseInTheFileIsRewrittenInTheLibrarysSpelling() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try Data(#"{"count": 1.0e1}"#.utf8).write(to: file)
            let suite = Defaults.Suite(fileURL: file)
            let key = Defaults.Key<Int>("count", default: 0, suite: suite)
            #expect(suite[key] == 10)
            // The decoded value holds the same bits, but the stored text differs: a change.
            suite[key] = 10
            #expect(suite.storedValue(named: "count") == .number("10"))
            try suite.synchronize()
            #expect(try storeFileText(file).contains(#""count" : 10"#))
        }
    }

    @Test func negativeZeroIsAChangeFromZero() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Double>("offset", default: 1, suite: suite)
        suite[key] = 0
        suite[key] = 0.5
        suite[key] = -0.0
        #expect(suite[key].sign == .minus)
        #expect(suite.storedValue(named: "offset") == Double(-0.0).jsonValueForTest)
    }

    @Test func aTransactionSeesWritesMadeBeforeIt() throws {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        suite[key] = 1
        suite[key] = 2
        suite.transaction {
            #expect(suite[key] == 2)
            suite[key] = suite[key] + 1
        }
        #expect(suite[key] == 3)
        #expect(suite.storedValue(named: "count") == .number("3"))
    }

    @Test func removeAllRemovesKeysWrittenInPlace() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let key = Defaults.Key<Int>("count", default: 7, suite: suite)
            suite[key] = 1
            suite[key] = 2
            suite.removeAll()
            #expect(suite[key] == 7)
            #expect(suite.storedValue(named: "count") == nil)
            try suite.synchronize()
            #expect(try storeFileText(file).contains("count") == false)
        }
    }

    @Test func aResetAfterWritesInPlaceBringsTheDefaultBack() throws {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 7, suite: suite)
        suite[key] = 1
        suite[key] = 2
        key.reset()
        #expect(suite[key] == 7)
        #expect(suite.storedValue(named: "count") == nil)
        suite[key] = 3
        #expect(suite[key] == 3)
        #expect(suite.storedValue(named: "count") == .number("3"))
    }

    @Test func aReadAsAnotherTypeSeesTheLatestWrite() {
        let suite = Defaults.Suite.inMemory()
        let asInt = Defaults.Key<Int>("count", default: 0, suite: suite)
        let asDouble = Defaults.Key<Double>("count", default: 0, suite: suite)
        suite[asInt] = 1
        suite[asInt] = 2
        // Decoding as Double replaces the kept Int: the Int's JSON must be stored first.
        #expect(suite[asDouble] == 2)
        suite[asInt] = 3
        #expect(suite[asDouble] == 3)
        #expect(suite[asInt] == 3)
    }

    @Test func anOutsideChangeLeavesAKeyWrittenInPlaceAndNotYetFlushed() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let mine = Defaults.Key<Int>("mine", default: 0, suite: suite)
            let theirs = Defaults.Key<Int>("theirs", default: 0, suite: suite)
            // NB: "not yet flushed" is the point: the timer armed by the first write would commit
            // 3 before the other writer's file whenever the first `synchronize()` took longer than
            // the coalescing delay, and that writer's 1 would then rightly win.
            try suite.holdingTimedCommits {
                suite[mine] = 1
                try suite.synchronize()
                suite[mine] = 2
                suite[mine] = 3
                // Another writer replaces the file with the old "mine" and a new key; the flush
                // catches up with the file under its lock, whether the watcher did already or not.
                try Data(#"{"mine": 1, "theirs": 9}"#.utf8).write(to: file)
                try suite.synchronize()
            }
            #expect(suite[theirs] == 9)
            #expect(suite[mine] == 3)
            let reader = try storeSuiteOnACopy(of: file)
            #expect(reader[mine] == 3)
            #expect(reader[theirs] == 9)
        }
    }

    @Test func readersOnOtherThreadsNeverSeeAValueNoOneWrote() async {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("pattern", default: 0, suite: suite)
        // Every value written has the same bits in both halves; a torn or reused box would not.
        let values = (1...4).map { Int(bitPattern: UInt(0x0001_0001) &* UInt($0) &* 0x1_0000_0001) }
        suite[key] = values[0]
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for index in 0..<50_000 { suite[key] = values[index % values.count] }
                return true
            }
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<50_000 where !values.contains(suite[key]) { return false }
                    return true
                }
            }
            for await result in group { #expect(result) }
        }
    }
}

extension Double {
    /// How the library stores this value, read back through an in-memory suite's general path.
    fileprivate var jsonValueForTest: Defaults.JSONValue? {
        let suite = Defaults.Suite.inMemory()
        // A key with an observer-free general path: the first write of a key makes its JSON at once.
        suite[Defaults.Key<Double>("value", default: 1, suite: suite)] = self
        return suite.storedValue(named: "value")
    }
}
