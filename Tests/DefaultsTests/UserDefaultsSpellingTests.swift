// @testable: checks the cache of `UserDefaults` adapters stays bounded (`UserDefaultsAdapters`).
@testable import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// The `UserDefaults` spellings of the API that code written for sindresorhus/Defaults uses: keys
/// made with `suite: UserDefaults`, the subscript on `UserDefaults`, `reset` and `removeAll`.
///
/// Each writes through one spelling and reads through another. Here with instances other than
/// `UserDefaults.standard`, which reach an adapter over the instance; `UserDefaults.standard`
/// means the standard suite, which only a helper process with its own `XDG_CONFIG_HOME` may touch
/// (`UserDefaultsStandardSpellingTests`).
@Suite struct UserDefaultsSpellingTests {
    /// Runs `body` with a `UserDefaults` of a domain no other test uses, and empties the domain after.
    private func withUserDefaults(_ body: (UserDefaults) throws -> Void) throws {
        let domain = "DefaultsSpellingTests.\(UUID().uuidString)"
        let userDefaults = try #require(UserDefaults(suiteName: domain))
        defer { UserDefaults.standard.removePersistentDomain(forName: domain) }
        try body(userDefaults)
    }

    @Test func aKeyWithADefaultStoresInTheUserDefaults() throws {
        try withUserDefaults { userDefaults in
            let count = Defaults.Key<Int>("count", default: 1, suite: userDefaults)
            #expect(Defaults[count] == 1)
            Defaults[count] = 5
            #expect(userDefaults.integer(forKey: "count") == 5)
            userDefaults.set(9, forKey: "count")
            #expect(Defaults[count] == 9)
        }
    }

    @Test func aKeyWithADynamicDefaultStoresInTheUserDefaults() throws {
        try withUserDefaults { userDefaults in
            let calls = StoreCounter()
            let level = Defaults.Key<Int>("level", suite: userDefaults) {
                _ = calls.increment()
                return 3
            }
            #expect(calls.count == 0, "the default is not computed when the key is made")
            #expect(Defaults[level] == 3)
            userDefaults[level] = 4
            #expect(userDefaults.integer(forKey: "level") == 4)
            #expect(Defaults[level] == 4)
        }
    }

    @Test func anOptionalKeyStoresInTheUserDefaults() throws {
        try withUserDefaults { userDefaults in
            let nickname = Defaults.Key<String?>("nickname", suite: userDefaults)
            #expect(Defaults[nickname] == nil)
            userDefaults.set("unicorn", forKey: "nickname")
            #expect(Defaults[nickname] == "unicorn")
            Defaults[nickname] = nil
            #expect(userDefaults.object(forKey: "nickname") == nil)
        }
    }

    @Test func theSubscriptOnUserDefaultsReadsAndWritesThatInstance() throws {
        try withUserDefaults { userDefaults in
            let flag = Defaults.Key<Bool>("flag", default: true, suite: userDefaults)
            #expect(userDefaults[flag] == true)
            userDefaults[flag] = false
            #expect(userDefaults.object(forKey: "flag") as? Bool == false)
            #expect(Defaults[flag] == false)

            // As in sindresorhus/Defaults, the instance decides, not the key's own suite.
            let elsewhere = Defaults.Suite.inMemory()
            let inMemory = Defaults.Key<Int>("number", default: 0, suite: elsewhere)
            userDefaults[inMemory] = 12
            #expect(userDefaults.integer(forKey: "number") == 12)
            #expect(elsewhere[inMemory] == 0)
        }
    }

    @Test func resetByNameRemovesOnlyThoseNamesFromTheUserDefaults() throws {
        try withUserDefaults { userDefaults in
            for name in ["a", "b", "c", "d"] { userDefaults.set(1, forKey: name) }
            Defaults.reset("a", "b", suite: userDefaults)
            Defaults.reset(["c"], suite: userDefaults)
            #expect(userDefaults.object(forKey: "a") == nil)
            #expect(userDefaults.object(forKey: "b") == nil)
            #expect(userDefaults.object(forKey: "c") == nil)
            #expect(userDefaults.integer(forKey: "d") == 1)
            #expect(Defaults[Defaults.Key<Int>("a", default: 7, suite: userDefaults)] == 7)
        }
    }

    @Test func removeAllEmptiesTheUserDefaults() throws {
        try withUserDefaults { userDefaults in
            let first = Defaults.Key<Int>("first", default: 0, suite: userDefaults)
            let second = Defaults.Key<String>("second", default: "", suite: userDefaults)
            Defaults[first] = 1
            Defaults[second] = "two"
            userDefaults.set("set by other code", forKey: "third")
            Defaults.removeAll(suite: userDefaults)
            #expect(userDefaults.object(forKey: "third") == nil)
            #expect(userDefaults.object(forKey: "first") == nil)
            #expect(userDefaults.object(forKey: "second") == nil)
            #expect(Defaults[first] == 0)
        }
    }

    @Test func keysMadeWithOneInstanceShareOneAdapterAndAreEqual() throws {
        try withUserDefaults { userDefaults in
            try withUserDefaults { other in
                let first = Defaults.Key<Int>("count", default: 0, suite: userDefaults)
                let second = Defaults.Key<Int>("count", default: 0, suite: userDefaults)
                let optional = Defaults.Key<Int?>("count", suite: userDefaults)
                #expect(first.suite === second.suite)
                #expect(first.suite === optional.suite)
                #expect(first == second)
                #expect(first.hashValue == second.hashValue)
                #expect(Set<Defaults.Keys>([first, second, optional]).count == 1)

                let onOther = Defaults.Key<Int>("count", default: 0, suite: other)
                #expect(onOther != first)
                #expect(onOther.suite !== first.suite)
            }
        }
    }

    @Test func anInstanceKeepsItsAdapterWhileItLives() throws {
        try withUserDefaults { userDefaults in
            weak var firstAdapter: Defaults.Suite?
            do {
                let key = Defaults.Key<Int>("count", default: 0, suite: userDefaults)
                firstAdapter = key.suite
            }
            // No key holds it now, and still the next key gets the same one.
            let again = Defaults.Key<Int>("count", default: 0, suite: userDefaults)
            #expect(firstAdapter != nil)
            #expect(again.suite === firstAdapter)
        }
    }

    @Test func anInstanceThatIsGoneIsReleasedWhenTheNextOneArrives() throws {
        weak var weakUserDefaults: UserDefaults?
        weak var weakAdapter: Defaults.Suite?
        let domain = "DefaultsSpellingTests.\(UUID().uuidString)"
        defer { UserDefaults.standard.removePersistentDomain(forName: domain) }
        do {
            let userDefaults = try #require(UserDefaults(suiteName: domain))
            let key = Defaults.Key<Int>("count", default: 0, suite: userDefaults)
            userDefaults[key] = 1
            weakUserDefaults = userDefaults
            weakAdapter = key.suite
        }
        let next = try #require(UserDefaults(suiteName: domain))
        next[Defaults.Key<Int>("count", default: 0, suite: next)] = 2
        #expect(weakAdapter == nil)
        #expect(weakUserDefaults == nil)
    }

    @Test func anInstanceHeldOnlyByAKeyStays() throws {
        let domain = "DefaultsSpellingTests.\(UUID().uuidString)"
        defer { UserDefaults.standard.removePersistentDomain(forName: domain) }
        weak var weakUserDefaults: UserDefaults?
        let key = try { () throws -> Defaults.Key<Int> in
            let userDefaults = try #require(UserDefaults(suiteName: domain))
            weakUserDefaults = userDefaults
            return Defaults.Key<Int>("count", default: 0, suite: userDefaults)
        }()
        let other = try #require(UserDefaults(suiteName: "\(domain).other"))
        defer { UserDefaults.standard.removePersistentDomain(forName: "\(domain).other") }
        other[Defaults.Key<Int>("count", default: 0, suite: other)] = 1
        Defaults[key] = 5
        #expect(weakUserDefaults?.integer(forKey: "count") == 5)
    }

    @Test func theTableOfAdaptersDoesNotGrowWithInstancesThatAreGone() throws {
        let domain = "DefaultsSpellingTests.\(UUID().uuidString)"
        defer { UserDefaults.standard.removePersistentDomain(forName: domain) }
        for _ in 0..<500 {
            let userDefaults = try #require(UserDefaults(suiteName: domain))
            userDefaults[Defaults.Key<Int>("count", default: 0, suite: userDefaults)] = 1
        }
        // NB: other tests may hold a few adapters meanwhile; 500 dead entries would be far above this.
        #expect(UserDefaultsAdapters.shared.entryCount < 100)
    }

    @Test func threadsAskingAtOnceGetOneAdapter() async throws {
        let domain = "DefaultsSpellingTests.\(UUID().uuidString)"
        defer { UserDefaults.standard.removePersistentDomain(forName: domain) }
        nonisolated(unsafe) let userDefaults = try #require(UserDefaults(suiteName: domain))  // it locks itself
        // NB: the threads are joined off the cooperative pool, which other tests need meanwhile.
        let adapters = await offThePool {
            let adapters = StoreLog<ObjectIdentifier>()
            let threads = (0..<8)
                .map { _ in
                    StoreThread {
                        for _ in 0..<200 {
                            let key = Defaults.Key<Int>("n", default: 0, suite: userDefaults)
                            adapters.append(ObjectIdentifier(key.suite))
                        }
                    }
                }
            for thread in threads { thread.join() }
            return adapters.all
        }
        #expect(adapters.count == 1_600)
        #expect(Set(adapters).count == 1)
    }
}
