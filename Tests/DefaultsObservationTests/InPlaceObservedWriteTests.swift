import DefaultsObservation
import DefaultsTestSupport
import Dispatch
import Foundation
import Testing

/// Writes of a value with no references to a key with one observer stay in place.
///
/// For an `Int`, a `Double`, a `Bool` or a `Date`, the observer is told with the old and new
/// value's bytes, and no JSON is made until something reads the stored values. What the observer
/// is told, and what is stored, must be exactly what the general path tells and stores.
@Suite struct InPlaceObservedWriteTests {
    private struct Told<Value: Sendable & Equatable>: Sendable, Equatable {
        let old: Value
        let new: Value
    }

    private func recordChanges<Value: Defaults.Serializable & Equatable>(
        of key: Defaults.Key<Value>,
        writing values: [Value]
    ) -> [Told<Value>] {
        let told = Recorder<Told<Value>>()
        let observation = Defaults.observe(key, options: []) { told.append(Told(old: $0.oldValue, new: $0.newValue)) }
        defer { observation.invalidate() }
        for value in values { Defaults[key] = value }
        return told.elements
    }

    @Test func eachChangeIsToldWithItsOldAndNewValueAndAnEqualWriteIsNotAChange() {
        let suite = Defaults.Suite.inMemory()
        let int = Defaults.Key<Int>("int", default: 0, suite: suite)
        #expect(
            recordChanges(of: int, writing: [1, 2, 2, 5, 5, 0])
                == [Told(old: 0, new: 1), Told(old: 1, new: 2), Told(old: 2, new: 5), Told(old: 5, new: 0)]
        )
        let double = Defaults.Key<Double>("double", default: 0.5, suite: suite)
        #expect(
            recordChanges(of: double, writing: [1.25, 1.25, -3])
                == [Told(old: 0.5, new: 1.25), Told(old: 1.25, new: -3)]
        )
        let bool = Defaults.Key<Bool>("bool", default: false, suite: suite)
        #expect(
            recordChanges(of: bool, writing: [true, true, false, true])
                == [Told(old: false, new: true), Told(old: true, new: false), Told(old: false, new: true)]
        )
        let date = Defaults.Key<Date>("date", default: Date(timeIntervalSince1970: 0), suite: suite)
        let later = Date(timeIntervalSince1970: 1_700_000_000.5)
        #expect(
            recordChanges(of: date, writing: [later, later])
                == [Told(old: Date(timeIntervalSince1970: 0), new: later)]
        )
        // What was written in place is what the suite stores, as JSON.
        #expect(suite.storedValues()["int"] == .number("0"))
        #expect(suite.storedValues()["double"] == .number("-3.0"))
        #expect(suite.storedValues()["bool"] == .bool(true))
        #expect(Defaults[date] == later)
    }

    @Test func oneNaNWrittenOverAnotherIsNoChangeAsOnTheGeneralPath() {
        // Every NaN is stored as "NaN", whatever its bits: one observer (a write in place) is told
        // what two (the general path, which compares JSON) are.
        func told(observers: Int) -> [String] {
            let suite = Defaults.Suite.inMemory()
            let key = Defaults.Key<Double>("ratio", default: 0, suite: suite)
            let told = Recorder<String>()
            var observations = [Defaults.observe(key, options: []) { told.append("\($0.oldValue)->\($0.newValue)") }]
            if observers == 2 { observations.append(Defaults.observe(key, options: []) { _ in }) }
            for value in [1, .nan, -Double.nan, Double(nan: 5, signaling: false), 2] { Defaults[key] = value }
            for observation in observations { observation.invalidate() }
            return told.elements
        }
        #expect(told(observers: 1) == ["0.0->1.0", "1.0->nan", "nan->2.0"])
        #expect(told(observers: 2) == told(observers: 1))
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Float>("scale", default: 0, suite: suite)
        #expect(recordChanges(of: key, writing: [1, .nan, -Float.nan, 3]).count == 3)
    }

    @Test func writesOfAnObservedKeyReachTheFileAndAnotherSuiteOnIt() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "observed.json")
            let suite = Defaults.Suite(fileURL: url)
            let key = Defaults.Key<Int>("count", default: 0, suite: suite)
            let told = Recorder<Int>()
            let observation = Defaults.observe(key, options: []) { told.append($0.newValue) }
            for value in 1...100 { Defaults[key] = value }
            try suite.synchronize()
            observation.invalidate()
            #expect(told.elements == Array(1...100))
            let members = try #require(
                JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
            )
            #expect(members["count"] as? Int == 100)
        }
    }

    @Test func anObserverOfTheNameAsAnotherTypeIsToldThroughTheStoredForm() {
        let suite = Defaults.Suite.inMemory()
        let asInt = Defaults.Key<Int>("level", default: 0, suite: suite)
        let asDouble = Defaults.Key<Double>("level", default: 0, suite: suite)
        let told = Recorder<Told<Double>>()
        let observation = Defaults.observe(asDouble, options: []) {
            told.append(Told(old: $0.oldValue, new: $0.newValue))
        }
        defer { observation.invalidate() }
        for value in [3, 3, 4] { Defaults[asInt] = value }
        #expect(told.elements == [Told(old: 0, new: 3), Told(old: 3, new: 4)])
        #expect(Defaults[asDouble] == 4)
    }

    @Test func writesInsideWithoutPropagationAreStoredButNotTold() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        let told = Recorder<Int>()
        let observation = Defaults.observe(key, options: []) { told.append($0.newValue) }
        defer { observation.invalidate() }
        Defaults[key] = 1
        Defaults.withoutPropagation {
            Defaults[key] = 2
            Defaults[key] = 3
        }
        Defaults[key] = 4
        #expect(told.elements == [1, 4])
        #expect(Defaults[key] == 4)
    }

    @Test func anObserverTiedToAnOwnerThatIsGoneIsNotToldAgain() {
        final class Owner {}
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        let told = Recorder<Int>()
        var owner: Owner? = Owner()
        Defaults.observe(key, options: []) { told.append($0.newValue) }.tieToLifetime(of: owner!)
        Defaults[key] = 1
        Defaults[key] = 2
        owner = nil
        Defaults[key] = 3
        Defaults[key] = 4
        #expect(told.elements == [1, 2])
        #expect(Defaults[key] == 4)
    }

    @Test func twoObserversOfTheKeyAreEachToldOfEveryChange() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        let first = Recorder<Int>()
        let second = Recorder<Int>()
        let observations = [
            Defaults.observe(key, options: []) { first.append($0.newValue) },
            Defaults.observe(key, options: []) { second.append($0.newValue) },
        ]
        for value in 1...5 { Defaults[key] = value }
        observations[0].invalidate()
        Defaults[key] = 6
        observations[1].invalidate()
        #expect(first.elements == [1, 2, 3, 4, 5])
        #expect(second.elements == [1, 2, 3, 4, 5, 6])
    }

    @Test func anObserverThatWritesTheKeyItObservesSeesItsOwnWrite() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        let told = Recorder<Told<Int>>()
        // Rounds every odd value up to the next even one, from inside the handler.
        let observation = Defaults.observe(key, options: []) { change in
            told.append(Told(old: change.oldValue, new: change.newValue))
            if change.newValue % 2 == 1 { Defaults[key] = change.newValue + 1 }
        }
        defer { observation.invalidate() }
        Defaults[key] = 1
        Defaults[key] = 3
        #expect(Defaults[key] == 4)
        #expect(
            told.elements == [Told(old: 0, new: 1), Told(old: 1, new: 2), Told(old: 2, new: 3), Told(old: 3, new: 4)]
        )
    }

    @Test func everyChangeFromManyThreadsIsToldOnce() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        let told = Recorder<Int>()
        let observation = Defaults.observe(key, options: []) { told.append($0.newValue) }
        defer { observation.invalidate() }
        // Every write stores a value no other write stores, so each is a change.
        let threads = 4
        let writes = 2_000
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 1...writes { Defaults[key] = thread * 1_000_000 + index }
        }
        let values = told.elements
        #expect(values.count == threads * writes)
        #expect(Set(values).count == threads * writes)
        #expect(values.contains(Defaults[key]))
    }
}
