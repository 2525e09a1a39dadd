import Defaults
import Foundation
import Testing

/// Reading and writing keys: defaults, subscripts, optionals and `isDefaultValue`.
@Suite struct KeyAccessTests {
    @Test func readingWithNothingStoredReturnsTheStaticDefault() {
        let suite = Defaults.Suite.inMemory()
        let quality = Defaults.Key<Double>("quality", default: 0.8, suite: suite)
        let title = Defaults.Key<String>("title", default: "untitled", suite: suite)
        #expect(Defaults[quality] == 0.8)
        #expect(suite[quality] == 0.8)
        #expect(Defaults[title] == "untitled")
        #expect(suite.storedValue(named: "quality") == nil)
    }

    @Test func optionalKeyDefaultsToNil() {
        let suite = Defaults.Suite.inMemory()
        let name = Defaults.Key<String?>("name", suite: suite)
        #expect(name.defaultValue == nil)
        #expect(Defaults[name] == nil)
        Defaults[name] = "unicorn"
        #expect(Defaults[name] == "unicorn")
        #expect(suite[name] == "unicorn")
    }

    @Test func dynamicDefaultIsNotCalledWhenTheKeyIsCreated() {
        let suite = Defaults.Suite.inMemory()
        let calls = StoreCounter()
        let key = Defaults.Key<Int>("dynamic", suite: suite) {
            calls.increment()
            return 7
        }
        #expect(calls.count == 0)
        #expect(key.name == "dynamic")
        #expect(calls.count == 0)
    }

    @Test func dynamicDefaultIsCalledOnEveryReadWhileNothingIsStored() {
        let suite = Defaults.Suite.inMemory()
        let calls = StoreCounter()
        let key = Defaults.Key<Int>("dynamic", suite: suite) { 100 + calls.increment() }
        #expect(Defaults[key] == 101)
        #expect(Defaults[key] == 102)
        #expect(suite[key] == 103)
        #expect(calls.count == 3)
    }

    @Test func dynamicDefaultIsNotCalledWhileAValueIsStoredAndReturnsAfterReset() {
        let suite = Defaults.Suite.inMemory()
        let calls = StoreCounter()
        let key = Defaults.Key<Int>("dynamic", suite: suite) {
            calls.increment()
            return -1
        }
        Defaults[key] = 5
        let callsAfterWrite = calls.count
        for _ in 0..<10 { #expect(Defaults[key] == 5) }
        #expect(calls.count == callsAfterWrite, "the dynamic default ran while a value was stored")

        key.reset()
        #expect(Defaults[key] == -1)
        #expect(calls.count == callsAfterWrite + 1)
    }

    @Test func dynamicDefaultValueCanChangeBetweenReads() {
        let suite = Defaults.Suite.inMemory()
        let calls = StoreCounter()
        let key = Defaults.Key<String>("stamp", suite: suite) { "read-\(calls.increment())" }
        let first = Defaults[key]
        let second = Defaults[key]
        #expect(first != second)
    }

    @Test func staticSubscriptAndSuiteSubscriptReadAndWriteTheSameValue() {
        let suite = Defaults.Suite.inMemory()
        let count = Defaults.Key<Int>("count", default: 0, suite: suite)
        Defaults[count] = 3
        #expect(suite[count] == 3)
        suite[count] = 4
        #expect(Defaults[count] == 4)
        Defaults[count] += 1
        #expect(suite[count] == 5)
        suite[count] += 10
        #expect(Defaults[count] == 15)
    }

    @Test func suiteSubscriptUsesTheSuiteItIsCalledOnNotTheKeysSuite() {
        let home = Defaults.Suite.inMemory()
        let other = Defaults.Suite.inMemory()
        let count = Defaults.Key<Int>("count", default: 0, suite: home)
        other[count] = 9
        #expect(other[count] == 9)
        #expect(home[count] == 0)
        #expect(Defaults[count] == 0)
    }

    @Test func keysOfDifferentTypesAreIndependent() {
        let suite = Defaults.Suite.inMemory()
        let number = Defaults.Key<Int>("number", default: 1, suite: suite)
        let text = Defaults.Key<String>("text", default: "a", suite: suite)
        let list = Defaults.Key<[String]>("list", default: [], suite: suite)
        Defaults[number] = 2
        Defaults[text] = "b"
        Defaults[list] = ["x", "y"]
        #expect(Defaults[number] == 2)
        #expect(Defaults[text] == "b")
        #expect(Defaults[list] == ["x", "y"])
    }

    @Test func writingNilToAnOptionalKeyRemovesTheStoredValue() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let nickname = Defaults.Key<String?>("nickname", suite: suite)
            let other = Defaults.Key<Int>("other", default: 0, suite: suite)
            Defaults[nickname] = "unicorn"
            Defaults[other] = 1
            try suite.synchronize()
            #expect(try storeFileObject(file)["nickname"] as? String == "unicorn")

            Defaults[nickname] = nil
            #expect(Defaults[nickname] == nil)
            #expect(suite.storedValue(named: "nickname") == nil)
            try suite.synchronize()
            let object = try storeFileObject(file)
            #expect(object["nickname"] == nil, "nil must remove the key, not store null")
            #expect(object.keys.sorted() == ["other"])
        }
    }

    @Test func resettingAnOptionalKeyRemovesTheStoredValue() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let nickname = Defaults.Key<String?>("nickname", suite: suite)
            Defaults[nickname] = "unicorn"
            try suite.synchronize()
            nickname.reset()
            #expect(Defaults[nickname] == nil)
            try suite.synchronize()
            #expect(try storeFileObject(file).isEmpty)
        }
    }

    @Test func isDefaultValueFollowsTheReadValue() {
        let suite = Defaults.Suite.inMemory()
        let quality = Defaults.Key<Double>("quality", default: 0.8, suite: suite)
        #expect(quality.isDefaultValue)

        Defaults[quality] = 0.5
        #expect(!quality.isDefaultValue)

        Defaults[quality] = 0.8
        #expect(suite.storedValue(named: "quality") != nil, "a value equal to the default is still stored")
        #expect(quality.isDefaultValue)

        Defaults[quality] = 0.1
        quality.reset()
        #expect(quality.isDefaultValue)
    }

    @Test func isDefaultValueOfAnOptionalKey() {
        let suite = Defaults.Suite.inMemory()
        let name = Defaults.Key<String?>("name", suite: suite)
        #expect(name.isDefaultValue)
        Defaults[name] = "x"
        #expect(!name.isDefaultValue)
        Defaults[name] = nil
        #expect(name.isDefaultValue)
    }

    @Test func aKeyNeedNotLiveInKeys() {
        let suite = Defaults.Suite.inMemory()
        #expect(Defaults[Defaults.Key<Bool>("isUnicorn", default: true, suite: suite)])
        Defaults[Defaults.Key<Bool>("isUnicorn", default: true, suite: suite)] = false
        #expect(!Defaults[Defaults.Key<Bool>("isUnicorn", default: true, suite: suite)])
    }

    @Test func aStoredValueOfAnotherTypeReadsAsTheDefaultAndStaysStored() {
        let suite = Defaults.Suite.inMemory()
        let asText = Defaults.Key<String>("shared", default: "none", suite: suite)
        let asNumber = Defaults.Key<Int>("shared", default: -1, suite: suite)
        Defaults[asText] = "hello"
        #expect(Defaults[asNumber] == -1)
        #expect(Defaults[asText] == "hello")
        #expect(suite.storedValue(named: "shared") != nil)
    }
}
