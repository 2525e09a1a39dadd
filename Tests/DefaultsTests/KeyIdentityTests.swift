import Defaults
import Foundation
import Testing

/// Keys are equal and hash alike by name and suite instance.
@Suite struct KeyIdentityTests {
    @Test func sameNameAndSuiteAreEqualEvenAsDifferentInstances() {
        let suite = Defaults.Suite.inMemory()
        let first = Defaults.Key<Int>("count", default: 0, suite: suite)
        let second = Defaults.Key<Int>("count", default: 5, suite: suite)
        #expect(first !== second)
        #expect(first == second)
        #expect(first.hashValue == second.hashValue)
        #expect(Set<Defaults.Keys>([first, second]).count == 1)
    }

    @Test func sameNameOnDifferentSuitesDiffers() {
        let first = Defaults.Key<Int>("count", default: 0, suite: .inMemory())
        let second = Defaults.Key<Int>("count", default: 0, suite: .inMemory())
        #expect(first != second)
        #expect(Set<Defaults.Keys>([first, second]).count == 2)
    }

    @Test func differentNamesOnTheSameSuiteDiffer() {
        let suite = Defaults.Suite.inMemory()
        let first = Defaults.Key<Int>("a", default: 0, suite: suite)
        let second = Defaults.Key<Int>("b", default: 0, suite: suite)
        #expect(first != second)
        #expect(Set<Defaults.Keys>([first, second]).count == 2)
    }

    @Test func equalityIgnoresTheValueType() {
        let suite = Defaults.Suite.inMemory()
        let asNumber: Defaults.Keys = Defaults.Key<Int>("shared", default: 0, suite: suite)
        let asText: Defaults.Keys = Defaults.Key<String>("shared", default: "", suite: suite)
        #expect(asNumber == asText)
        #expect(asNumber.hashValue == asText.hashValue)
    }

    @Test func keysWorkAsDictionaryKeys() {
        let suite = Defaults.Suite.inMemory()
        var labels: [Defaults.Keys: String] = [:]
        labels[Defaults.Key<Int>("a", default: 0, suite: suite)] = "first"
        labels[Defaults.Key<Int>("a", default: 1, suite: suite)] = "second"
        labels[Defaults.Key<Int>("b", default: 0, suite: suite)] = "other"
        #expect(labels.count == 2)
        #expect(labels[Defaults.Key<Int>("a", default: 0, suite: suite)] == "second")
    }

    @Test func keyExposesNameSuiteAndDefault() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Double>("quality", default: 0.8, suite: suite)
        #expect(key.name == "quality")
        #expect(key.suite === suite)
        #expect(key.defaultValue == 0.8)
    }
}
