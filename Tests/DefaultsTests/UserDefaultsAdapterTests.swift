import Defaults
import Foundation
import Testing

/// A suite over Foundation's `UserDefaults`, shared with code that uses it directly.
@Suite struct UserDefaultsAdapterTests {
    struct Window: Codable, Equatable, Defaults.Serializable {
        var width: Int
        var height: Int
        var scale: Double
        var title: String
    }

    /// Runs `body` with a `UserDefaults` of a domain no other test uses, and empties the domain after.
    private func withUserDefaults(_ body: (UserDefaults) throws -> Void) throws {
        let domain = "DefaultsStoreTests.\(UUID().uuidString)"
        let userDefaults = try #require(UserDefaults(suiteName: domain))
        defer { UserDefaults.standard.removePersistentDomain(forName: domain) }
        try body(userDefaults)
    }

    @Test func valuesRoundTripThroughTheAdapter() throws {
        try withUserDefaults { userDefaults in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let number = Defaults.Key<Int>("number", default: 0, suite: suite)
            let text = Defaults.Key<String>("text", default: "", suite: suite)
            let flag = Defaults.Key<Bool>("flag", default: false, suite: suite)
            let list = Defaults.Key<[String]>("list", default: [], suite: suite)
            let window = Defaults.Key<Window>(
                "window",
                default: Window(width: 0, height: 0, scale: 1, title: ""),
                suite: suite
            )
            let stored = Window(width: 800, height: 600, scale: 1.5, title: "Main")

            Defaults[number] = 42
            Defaults[text] = "hello \u{1F984}"
            Defaults[flag] = true
            Defaults[list] = ["a", "b", "c"]
            Defaults[window] = stored

            #expect(Defaults[number] == 42)
            #expect(Defaults[text] == "hello \u{1F984}")
            #expect(Defaults[flag] == true)
            #expect(Defaults[list] == ["a", "b", "c"])
            #expect(Defaults[window] == stored)

            // NB: a second adapter has no values of its own: it reads everything from UserDefaults.
            let second = Defaults.Suite(userDefaults: userDefaults)
            #expect(second[number] == 42)
            #expect(second[text] == "hello \u{1F984}")
            #expect(second[flag] == true)
            #expect(second[list] == ["a", "b", "c"])
            #expect(second[window] == stored)
        }
    }

    @Test func integersAboveIntMaxRoundTrip() throws {
        try withUserDefaults { userDefaults in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let largest = Defaults.Key<UInt64>("largest", default: 0, suite: suite)
            let beyond = Defaults.Key<UInt64>("beyond", default: 0, suite: suite)
            suite[largest] = .max
            suite[beyond] = UInt64(Int.max) + 1
            #expect(suite[largest] == .max)
            #expect(suite[beyond] == UInt64(Int.max) + 1)
            #expect((userDefaults.object(forKey: "largest") as? NSNumber)?.uint64Value == .max)
            // Another adapter over the same UserDefaults reads them too.
            let other = Defaults.Suite(userDefaults: userDefaults)
            #expect(other[Defaults.Key<UInt64>("largest", default: 0, suite: other)] == .max)
        }
    }

    @Test func integersAtTheirExtremesAndNumbersAPropertyListWouldChangeRoundTrip() throws {
        try withUserDefaults { userDefaults in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let largest = Defaults.Key<Int>("largest", default: 0, suite: suite)
            let smallest = Defaults.Key<Int64>("smallest", default: 0, suite: suite)
            suite[largest] = .max
            suite[smallest] = .min
            // Foundation hands these back as Int64 values: read as integers, not through a Double.
            #expect(suite[largest] == .max)
            #expect(suite[smallest] == .min)
            // NB: not `integer(forKey:)`: Foundation on Linux answers 0 for its own Int64 there.
            #expect((userDefaults.object(forKey: "largest") as? NSNumber)?.int64Value == .max)
            // JSON a property list would rewrite is kept as its text.
            suite.setStoredValues(["huge": .number("123456789012345678901234567890"), "exponent": .number("1.5e-7")])
            #expect(suite.storedValue(named: "huge") == .number("123456789012345678901234567890"))
            #expect(suite.storedValue(named: "exponent") == .number("1.5e-7"))
        }
    }

    @Test func falseAndZeroRoundTrip() throws {
        try withUserDefaults { userDefaults in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let flag = Defaults.Key<Bool>("flag", default: true, suite: suite)
            let number = Defaults.Key<Int>("number", default: 7, suite: suite)
            Defaults[flag] = false
            Defaults[number] = 0
            #expect(Defaults[flag] == false)
            #expect(Defaults[number] == 0)
            #expect(Defaults.Suite(userDefaults: userDefaults)[flag] == false)
        }
    }

    @Test func valuesSetByOtherCodeAreRead() throws {
        try withUserDefaults { userDefaults in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let number = Defaults.Key<Int>("external", default: 0, suite: suite)
            let text = Defaults.Key<String>("externalText", default: "", suite: suite)
            let flag = Defaults.Key<Bool>("externalFlag", default: false, suite: suite)
            let list = Defaults.Key<[String]>("externalList", default: [], suite: suite)
            #expect(Defaults[number] == 0)

            userDefaults.set(42, forKey: "external")
            userDefaults.set("from elsewhere", forKey: "externalText")
            userDefaults.set(true, forKey: "externalFlag")
            userDefaults.set(["x", "y"], forKey: "externalList")

            #expect(Defaults[number] == 42)
            #expect(Defaults[text] == "from elsewhere")
            #expect(Defaults[flag] == true)
            #expect(Defaults[list] == ["x", "y"])

            userDefaults.set(43, forKey: "external")
            #expect(Defaults[number] == 43, "a later change by other code is read too")
            userDefaults.removeObject(forKey: "external")
            #expect(Defaults[number] == 0)
        }
    }

    @Test func valuesWrittenThroughTheSuiteAreReadableByOtherCode() throws {
        try withUserDefaults { userDefaults in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            Defaults[Defaults.Key<Int>("number", default: 0, suite: suite)] = 7
            Defaults[Defaults.Key<String>("text", default: "", suite: suite)] = "shared"
            Defaults[Defaults.Key<Bool>("flag", default: false, suite: suite)] = true
            Defaults[Defaults.Key<Double>("ratio", default: 0, suite: suite)] = 0.25
            Defaults[Defaults.Key<[String]>("list", default: [], suite: suite)] = ["p", "q"]

            #expect(userDefaults.integer(forKey: "number") == 7)
            #expect(userDefaults.string(forKey: "text") == "shared")
            #expect(userDefaults.bool(forKey: "flag") == true)
            #expect(userDefaults.double(forKey: "ratio") == 0.25)
            #expect(userDefaults.stringArray(forKey: "list") == ["p", "q"])
        }
    }

    @Test func removingThroughTheSuiteRemovesFromUserDefaults() throws {
        try withUserDefaults { userDefaults in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let number = Defaults.Key<Int>("number", default: 3, suite: suite)
            let text = Defaults.Key<String?>("text", suite: suite)
            let other = Defaults.Key<Int>("other", default: 0, suite: suite)
            Defaults[number] = 7
            Defaults[text] = "t"
            Defaults[other] = 1

            number.reset()
            #expect(userDefaults.object(forKey: "number") == nil)
            #expect(Defaults[number] == 3)

            Defaults[text] = nil
            #expect(userDefaults.object(forKey: "text") == nil)
            #expect(Defaults[text] == nil)

            #expect(userDefaults.integer(forKey: "other") == 1)
            Defaults.reset("other", suite: suite)
            #expect(userDefaults.object(forKey: "other") == nil)
        }
    }

    @Test func synchronizeIsHarmless() throws {
        try withUserDefaults { userDefaults in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            Defaults[Defaults.Key<Int>("number", default: 0, suite: suite)] = 1
            #expect(throws: Never.self) { try suite.synchronize() }
            #expect(suite.fileURL == nil)
        }
    }
}
