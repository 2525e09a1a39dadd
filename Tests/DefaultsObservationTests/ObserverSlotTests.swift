import Defaults
import DefaultsObservation
import DefaultsTestSupport
import Foundation
import Testing

/// Observers hang on their keys in the suite's state, where a write finds them.
///
/// A write of a key reaches its observers through the key's observer slot, with no search of a
/// registry: the only observer itself, or a bucket of the key's observers.
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
                // Observed and left through the first suite, whose state the second one shares.
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

    @Test func keysObservedOnceKeepNothingInTheSuiteOnceTheirObserversLeave() {
        let suite = Defaults.Suite.inMemory()
        let keys = (0..<5_000).map { Defaults.Key<Int>("key-\($0)", default: 0, suite: suite) }
        for key in keys {
            Defaults.observe(key, options: []) { _ in }.invalidate()
        }
        #expect(suite.keyEntryCount == 0)
        // Observed again, they are told as before; two observers of a key, then one, then none.
        let told = Recorder<String>()
        let first = Defaults.observe(keys[0], options: []) { _ in told.append("first") }
        let second = Defaults.observe(keys[0], options: []) { _ in told.append("second") }
        Defaults[keys[0]] = 1
        first.invalidate()
        Defaults[keys[0]] = 2
        second.invalidate()
        Defaults[keys[0]] = 3
        #expect(told.elements.sorted() == ["first", "second", "second"])
        #expect(Defaults.observerEntryCount(for: suite) == 0)
        // Written once, a key keeps its decoded value, and nothing for its observers.
        #expect(suite.keyEntryCount == 1)
    }

    @Test func observersComingAndGoingAreEachToldOfEveryWriteMadeWhileTheyObserve() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        let told = Recorder<String>()
        func observer(_ label: String) -> Defaults.Observation {
            Defaults.observe(key, options: []) { told.append("\(label)\($0.newValue)") }
        }
        // One observer, two, one again (the other one), three, none, one.
        let a = observer("a")
        Defaults[key] = 1
        let b = observer("b")
        Defaults[key] = 2
        a.invalidate()
        Defaults[key] = 3
        let (c, d) = (observer("c"), observer("d"))
        Defaults[key] = 4
        for observation in [b, c, d] { observation.invalidate() }
        Defaults[key] = 5
        let e = observer("e")
        Defaults[key] = 6
        e.invalidate()
        #expect(told.elements.filter { $0.hasSuffix("1") } == ["a1"])
        #expect(Set(told.elements.filter { $0.hasSuffix("2") }) == ["a2", "b2"])
        #expect(told.elements.filter { $0.hasSuffix("3") } == ["b3"])
        #expect(Set(told.elements.filter { $0.hasSuffix("4") }) == ["b4", "c4", "d4"])
        #expect(told.elements.filter { $0.hasSuffix("5") || $0.hasSuffix("6") } == ["e6"])
    }

    @Test func wholeSuiteObserversComingAndGoingAreEachTold() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        let told = Recorder<String>()
        let a = Defaults.observe(suite: suite, options: []) { told.append("a") }
        let b = Defaults.observe(suite: suite, options: []) { told.append("b") }
        Defaults[key] = 1
        a.invalidate()
        Defaults[key] = 2
        b.invalidate()
        Defaults[key] = 3
        #expect(told.elements.sorted() == ["a", "b", "b"])
    }

    @Test func aTieMadeAfterTheObservationStoppedKeepsNothingAlive() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        let owner = NSObject()
        weak var stopped: Defaults.Observation?
        do {
            let observation = Defaults.observe(key, options: []) { _ in }
            observation.invalidate()
            observation.tieToLifetime(of: owner)
            stopped = observation
        }
        #expect(stopped == nil)
        withExtendedLifetime(owner) {}
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
