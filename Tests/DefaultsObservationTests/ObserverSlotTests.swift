import DefaultsObservation
import DefaultsTestSupport
import Foundation
import Testing

/// Observers hang on their keys in the suite's state, where a write finds them.
///
/// A write of a key reaches its observers through the key's observer slot, with no search of the
/// registry, and a key's bucket of observers stays on the key when its last observer leaves: what
/// must hold whatever buckets the registry keeps.
@Suite struct ObserverSlotTests {
    @Test func aKeyObservedAgainAfterItsLastObserverLeftIsToldOfItsChanges() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        let told = Recorder<Int>()
        for round in 1...3 {
            let observation = Defaults.observe(key, options: []) { told.append($0.newValue) }
            Defaults[key] = round
            observation.invalidate()
            // After the observer left: nobody is told.
            Defaults[key] = -round
        }
        #expect(told.elements == [1, 2, 3])
    }

    @Test func aKeyWhoseObserverLeftKeepsNeitherItsSuiteNorItsFileOpen() throws {
        try withTemporaryDirectory { directory in
            weak var inMemory: Defaults.Suite?
            weak var onFile: Defaults.Suite?
            do {
                let suites = [Defaults.Suite.inMemory(), Defaults.Suite(fileURL: directory.appending(path: "a.json"))]
                (inMemory, onFile) = (suites[0], suites[1])
                for suite in suites {
                    let key = Defaults.Key<Int>("count", default: 0, suite: suite)
                    let observation = Defaults.observe(key, options: []) { _ in }
                    Defaults[key] = 1
                    observation.invalidate()
                }
            }
            #expect(inMemory == nil)
            #expect(onFile == nil)
        }
    }

    @Test func aNewSuiteObservingTheKeyOfAGoneSuiteIsToldOfItsChanges() {
        // NB: suites made and released in turn, so a new suite's state is often made where a gone
        // one's was, with the same identity: the empty bucket left on the gone one's key must not
        // take the new observer.
        for round in 1...500 {
            let suite = Defaults.Suite.inMemory()
            let key = Defaults.Key<Int>("count", default: 0, suite: suite)
            let told = Recorder<Int>()
            let observation = Defaults.observe(key, options: []) { told.append($0.newValue) }
            Defaults[key] = round
            #expect(told.elements == [round])
            observation.invalidate()
        }
    }

    @Test func aKeyOfAFileIsStillObservedThroughASecondSuiteAfterTheFirstIsGone() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "shared.json")
            let second = Defaults.Suite(fileURL: url)
            do {
                // The bucket is made for the first suite, and left empty on the file's state.
                let first = Defaults.Suite(fileURL: url)
                Defaults.observe(Defaults.Key<Int>("count", default: 0, suite: first), options: []) { _ in }
                    .invalidate()
            }
            let key = Defaults.Key<Int>("count", default: 0, suite: second)
            let told = Recorder<Int>()
            let observation = Defaults.observe(key, options: []) { told.append($0.newValue) }
            Defaults[key] = 5
            #expect(told.elements == [5])
            observation.invalidate()
        }
    }

    @Test func emptyBucketsNeverOutnumberTheFloorAndTheBucketsInUse() {
        let suite = Defaults.Suite.inMemory()
        let floor = Defaults.emptyObserverBucketFloor
        var worst = 0
        for index in 0..<5_000 {
            Defaults.observe(Defaults.Key<Int>("key-\(index)", default: 0, suite: suite), options: []) { _ in }
                .invalidate()
            let (all, empty) = Defaults.observerBucketCounts
            worst = max(worst, empty - max(floor, all - empty))
        }
        #expect(worst <= 0)
        // What this suite's state keeps for the keys is no more than the empty buckets left.
        #expect(suite.keyEntryCount <= Defaults.observerBucketCounts.empty)
        #expect(suite.keyEntryCount < 5_000)
        // Keys whose bucket went, and keys whose bucket stayed, are observed again as before.
        let told = Recorder<String>()
        let observations = [0, 4_999]
            .map { index in
                Defaults.observe(Defaults.Key<Int>("key-\(index)", default: 0, suite: suite), options: []) { _ in
                    told.append("key-\(index)")
                }
            }
        suite[Defaults.Key<Int>("key-0", default: 0, suite: suite)] = 1
        suite[Defaults.Key<Int>("key-4999", default: 0, suite: suite)] = 1
        #expect(told.elements == ["key-0", "key-4999"])
        for observation in observations { observation.invalidate() }
    }

    @Test func aSubscriberOfSeveralKeysIsToldOnceForEachWriteOfAny() {
        let suite = Defaults.Suite.inMemory()
        let keys = (0..<3).map { Defaults.Key<Int>("key-\($0)", default: 0, suite: suite) }
        let told = Recorder<Int>()
        // The same key twice: it is watched once.
        let observation = Defaults.observe(keys: keys + [keys[0]], options: []) { told.append(1) }
        for key in keys { Defaults[key] = 1 }
        #expect(told.count == 3)
        observation.invalidate()
    }
}
