import Defaults
import Foundation
import Testing

/// `reset` in all its spellings, and `removeAll`.
@Suite struct KeyResetTests {
    @Test func resetKeysOfDifferentValueTypesInOneCall() {
        let suite = Defaults.Suite.inMemory()
        let number = Defaults.Key<Int>("number", default: 1, suite: suite)
        let text = Defaults.Key<String>("text", default: "a", suite: suite)
        let flag = Defaults.Key<Bool?>("flag", suite: suite)
        let untouched = Defaults.Key<Double>("untouched", default: 0, suite: suite)
        Defaults[number] = 2
        Defaults[text] = "b"
        Defaults[flag] = true
        Defaults[untouched] = 9.5

        Defaults.reset(number, text, flag)

        #expect(Defaults[number] == 1)
        #expect(Defaults[text] == "a")
        #expect(Defaults[flag] == nil)
        #expect(Defaults[untouched] == 9.5)
        #expect(suite.storedValue(named: "number") == nil)
        #expect(suite.storedValue(named: "text") == nil)
        #expect(suite.storedValue(named: "flag") == nil)
    }

    @Test func resetAnArrayOfKeys() {
        let suite = Defaults.Suite.inMemory()
        let number = Defaults.Key<Int>("number", default: 1, suite: suite)
        let list = Defaults.Key<[String]>("list", default: ["default"], suite: suite)
        let untouched = Defaults.Key<String>("untouched", default: "", suite: suite)
        Defaults[number] = 2
        Defaults[list] = ["changed"]
        Defaults[untouched] = "kept"

        Defaults.reset([number, list])

        #expect(Defaults[number] == 1)
        #expect(Defaults[list] == ["default"])
        #expect(Defaults[untouched] == "kept")
    }

    @Test func resetKeysFromSeveralSuites() {
        let first = Defaults.Suite.inMemory()
        let second = Defaults.Suite.inMemory()
        let a = Defaults.Key<Int>("a", default: 0, suite: first)
        let b = Defaults.Key<Int>("a", default: 0, suite: second)
        let c = Defaults.Key<Int>("c", default: 0, suite: second)
        Defaults[a] = 1
        Defaults[b] = 2
        Defaults[c] = 3

        Defaults.reset(a, c)

        #expect(Defaults[a] == 0)
        #expect(Defaults[b] == 2)
        #expect(Defaults[c] == 0)
    }

    @Test func resetByNameInASuite() {
        let suite = Defaults.Suite.inMemory()
        let name = Defaults.Key<String>("name", default: "n", suite: suite)
        let other = Defaults.Key<Int>("other", default: 0, suite: suite)
        let kept = Defaults.Key<Int>("kept", default: 0, suite: suite)
        Defaults[name] = "changed"
        Defaults[other] = 5
        Defaults[kept] = 6

        Defaults.reset("name", "other", suite: suite)

        #expect(Defaults[name] == "n")
        #expect(Defaults[other] == 0)
        #expect(Defaults[kept] == 6)
    }

    @Test func resetByNameDoesNotTouchAnotherSuite() {
        let suite = Defaults.Suite.inMemory()
        let elsewhere = Defaults.Suite.inMemory()
        let here = Defaults.Key<Int>("name", default: 0, suite: suite)
        let there = Defaults.Key<Int>("name", default: 0, suite: elsewhere)
        Defaults[here] = 1
        Defaults[there] = 2

        Defaults.reset(["name"], suite: suite)

        #expect(Defaults[here] == 0)
        #expect(Defaults[there] == 2)
    }

    @Test func keyResetRemovesOnlyThatKey() {
        let suite = Defaults.Suite.inMemory()
        let first = Defaults.Key<Int>("first", default: 10, suite: suite)
        let second = Defaults.Key<Int>("second", default: 20, suite: suite)
        Defaults[first] = 11
        Defaults[second] = 21

        first.reset()

        #expect(Defaults[first] == 10)
        #expect(Defaults[second] == 21)
    }

    @Test func resetOfAKeyWithNothingStoredIsHarmless() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("never", default: 3, suite: suite)
        key.reset()
        Defaults.reset(key)
        #expect(Defaults[key] == 3)
    }

    @Test func removeAllRemovesEveryValueIncludingUnnamedKeys() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"unnamed" : {"deep" : [1, 2]}, "count" : 4}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let count = Defaults.Key<Int>("count", default: 0, suite: suite)
            let text = Defaults.Key<String>("text", default: "t", suite: suite)
            #expect(Defaults[count] == 4)
            #expect(suite.storedValue(named: "unnamed") != nil)
            Defaults[text] = "written"

            Defaults.removeAll(suite: suite)

            #expect(Defaults[count] == 0)
            #expect(Defaults[text] == "t")
            #expect(suite.storedValue(named: "unnamed") == nil)
            try suite.synchronize()
            #expect(try storeFileObject(file).isEmpty)
        }
    }

    @Test func suiteRemoveAllLeavesOtherSuitesAlone() {
        let suite = Defaults.Suite.inMemory()
        let other = Defaults.Suite.inMemory()
        let here = Defaults.Key<Int>("n", default: 0, suite: suite)
        let there = Defaults.Key<Int>("n", default: 0, suite: other)
        Defaults[here] = 1
        Defaults[there] = 2

        suite.removeAll()

        #expect(Defaults[here] == 0)
        #expect(Defaults[there] == 2)
    }
}
