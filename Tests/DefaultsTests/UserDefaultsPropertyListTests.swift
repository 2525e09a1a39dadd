import Defaults
import DefaultsLaunchOverrideSamples
import DefaultsTestSupport
import Foundation
import Testing

/// A suite over a `UserDefaults` stores every value as sindresorhus/Defaults does on Apple
/// platforms, so a plain `UserDefaults` reader, here or in another process, finds the same types,
/// and every value reads back through a key as it went in.
@Suite struct UserDefaultsPropertyListTests {
    /// Runs `body` with a `UserDefaults` whose file is in a temporary folder (an absolute suite name
    /// is the file's path without ".plist"), and the path.
    private func withUserDefaults(_ body: (UserDefaults, String) async throws -> Void) async throws {
        try await withTemporaryDirectory(prefix: "DefaultsPropertyListTests") { directory in
            let path = directory.appendingPathComponent("prefs").path
            let userDefaults = try #require(UserDefaults(suiteName: path))
            try await body(userDefaults, path)
        }
    }

    @Test func everyTypeNestedTwoDeepRoundTripsAndIsStoredAsSindresorhusDefaultsStoresIt() async throws {
        try await withUserDefaults { userDefaults, _ in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let samples = PropertyListSamples.all
            for sample in samples { sample.write(suite) }
            // NB: a second adapter has nothing of its own: every read asks the UserDefaults.
            let reader = Defaults.Suite(userDefaults: userDefaults)
            for sample in samples {
                #expect(sample.read(suite) == sample.expected, "\(sample.name) read back")
                #expect(sample.read(reader) == sample.expected, "\(sample.name) read by a second suite")
                let stored = PropertyListSamples.describe(propertyList: userDefaults.object(forKey: sample.name))
                #expect(stored == sample.expectedPropertyList, "\(sample.name) as UserDefaults holds it")
            }
        }
    }

    @Test func anotherProcessReadsTheFileWithTheSameTypesAndValues() async throws {
        try await withUserDefaults { userDefaults, path in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let samples = PropertyListSamples.all
            for sample in samples { sample.write(suite) }
            let fraction = Date(timeIntervalSinceReferenceDate: 785_500_000.75)
            let dateKey = Defaults.Key<Date>("date.fraction", default: .distantPast, suite: suite)
            let zeroKey = Defaults.Key<Double>("double.negativeZero", default: 1, suite: suite)
            suite[dateKey] = fraction
            suite[zeroKey] = -0.0
            // Until the UserDefaults synchronizes, both are exact.
            #expect(suite[dateKey] == fraction)
            #expect(suite[zeroKey] == 0 && suite[zeroKey].sign == .minus)
            try suite.synchronize()

            let result = try await HelperProcess.run(["userdefaults-samples", path])
            #expect(result.status == 0, "\(result.errorOutput)")
            let lines = Array(result.lines.prefix(samples.count))
            #expect(lines.count == samples.count)
            for (sample, line) in zip(samples, lines) {
                let value = sample.expectedInAnotherProcess ?? sample.expected
                #expect(line == "\(sample.name) value=\(value) plist=\(sample.expectedPropertyList)")
            }
            // What Foundation on Linux cannot keep in its XML property-list file, as the migration
            // article says: dates to the second (rounded down), and the sign of a negative zero.
            let whole = Date(timeIntervalSinceReferenceDate: 785_500_000)
            #expect(
                Array(result.lines.dropFirst(samples.count)) == [
                    "date.fraction=\(PropertyListSamples.describe(whole))",
                    "double.negativeZero=\(PropertyListSamples.describe(0.0 as Double))",
                ]
            )
        }
    }

    @Test func valuesOtherCodeStoresAsPropertyListTypesAreReadThroughKeys() async throws {
        try await withUserDefaults { userDefaults, _ in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let date = PropertyListSamples.date
            userDefaults.set([true, false], forKey: "bools")
            userDefaults.set(["on": true, "nested": [false]], forKey: "flags")
            userDefaults.set(date, forKey: "date")
            userDefaults.set([date], forKey: "dates")
            userDefaults.set(Data([0x31]), forKey: "data")  // "1": bytes that are also JSON text
            userDefaults.set(Float(0.1), forKey: "float")
            userDefaults.set(Double.nan, forKey: "nan")
            // What sindresorhus/Defaults stores for a Codable value: its JSON text.
            userDefaults.set(#"{"height":2,"width":1}"#, forKey: "size")

            struct Size: Codable, Equatable, Defaults.Serializable {
                var width: Int
                var height: Int
            }
            #expect(suite[Defaults.Key<[Bool]>("bools", default: [], suite: suite)] == [true, false])
            let flags = suite[Defaults.Key<[String: Defaults.AnySerializable]>("flags", default: [:], suite: suite)]
            #expect(flags["on"]?.get(Bool.self) == true)
            #expect(flags["nested"]?.get([Bool].self) == [false])
            #expect(suite[Defaults.Key<Date?>("date", suite: suite)] == date)
            #expect(suite[Defaults.Key<[Date]>("dates", default: [], suite: suite)] == [date])
            #expect(suite[Defaults.Key<Data?>("data", suite: suite)] == Data([0x31]))
            #expect(suite[Defaults.Key<Float>("float", default: 0, suite: suite)] == 0.1)
            #expect(suite[Defaults.Key<Double>("nan", default: 0, suite: suite)].isNaN)
            #expect(suite[Defaults.Key<Size?>("size", suite: suite)] == Size(width: 1, height: 2))
        }
    }

    @Test func aNilInsideAContainerIsKeptAsJSONText() async throws {
        try await withUserDefaults { userDefaults, _ in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let key = Defaults.Key<[Int?]>("holes", default: [], suite: suite)
            suite[key] = [1, nil, 2]
            #expect(suite[key] == [1, nil, 2])
            #expect(Defaults.Suite(userDefaults: userDefaults)[key] == [1, nil, 2])
            // NB: a property list cannot hold nil (sindresorhus/Defaults drops it); the JSON text
            // keeps it, as the migration article says.
            let stored = try #require(userDefaults.object(forKey: "holes") as? Data)
            #expect(String(decoding: stored, as: UTF8.self) == "[1,null,2]")
        }
    }

    @Test func mixedValuesOtherCodeStoredKeepTheirTypesWhenWrittenBack() async throws {
        try await withUserDefaults { userDefaults, _ in
            let date = PropertyListSamples.date
            userDefaults.set(["when": date, "icon": Data([1, 2]), "ratio": 2.0, "on": true], forKey: "mixed")
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let key = Defaults.Key<[String: Defaults.AnySerializable]>("mixed", default: [:], suite: suite)
            var value = suite[key]
            #expect(value["when"]?.get(Date.self) == date)
            value["count"] = 3
            suite[key] = value
            // NB: the JSON of an AnySerializable read back cannot say it held a date; the suite
            // remembers what it read, so other code finds its types where it left them.
            let stored = PropertyListSamples.describe(propertyList: userDefaults.object(forKey: "mixed"))
            let expected: [String: Any] = ["when": date, "icon": Data([1, 2]), "ratio": 2.0, "on": true, "count": 3]
            #expect(stored == PropertyListSamples.describe(propertyList: expected))
            let again = Defaults.Suite(userDefaults: userDefaults)[key]
            #expect(again["when"]?.get(Date.self) == date)
            #expect(again["icon"]?.get(Data.self) == Data([1, 2]))
            #expect(again["ratio"]?.get(Double.self) == 2)
            #expect(again["on"]?.get(Bool.self) == true)
            #expect(again["count"]?.get(Int.self) == 3)
        }
    }

    // MARK: - The spellings a porter meets

    @Test func removeAllOnAUserDefaultsEmptiesIt() async throws {
        try await withUserDefaults { userDefaults, _ in
            let key = Defaults.Key<Int>("count", default: 0, suite: userDefaults)
            Defaults[key] = 3
            userDefaults.set("other code's", forKey: "foreign")
            userDefaults.removeAll()
            #expect(userDefaults.object(forKey: "count") == nil)
            #expect(userDefaults.object(forKey: "foreign") == nil)
            #expect(Defaults[key] == 0)
        }
    }

    @Test func removeAllOnUserDefaultsStandardEmptiesTheStandardFile() async throws {
        try await withTemporaryDirectory(prefix: "DefaultsPropertyListTests") { directory in
            let result = try await HelperProcess.run(
                ["userdefaults-standard", "user-defaults-remove-all"],
                environment: ["XDG_CONFIG_HOME": directory.path]
            )
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(result.lines.last == "removed all: count 0, text none")
            let file = directory.appendingPathComponent("defaults-test-helper/settings.json")
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
            #expect(object?.isEmpty == true)
        }
    }

    @Test func cgFloatIsSerializableAsADouble() throws {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<CGFloat>("scale", default: 1, suite: suite)
        suite[key] = 2.25
        #expect(suite[key] == 2.25)
        #expect(suite.storedValue(named: "scale") == .number("2.25"))
        suite[key] = .nan
        #expect(suite[key].isNaN)
        #expect(CGFloat.isNativelySupportedType)
    }

    @Test func isNativelySupportedTypeSaysWhatAUserDefaultsHoldsAsItself() {
        #expect(Bool.isNativelySupportedType && String.isNativelySupportedType && Int8.isNativelySupportedType)
        #expect(UInt64.isNativelySupportedType && Float.isNativelySupportedType && Double.isNativelySupportedType)
        #expect(Date.isNativelySupportedType && Data.isNativelySupportedType)
        #expect([Date].isNativelySupportedType && [String: [Bool]].isNativelySupportedType)
        #expect(Optional<Int>.isNativelySupportedType)
        #expect(!URL.isNativelySupportedType && !UUID.isNativelySupportedType)
        #expect(![Int: Bool].isNativelySupportedType && ![URL].isNativelySupportedType)
        #expect(!Set<Int>.isNativelySupportedType && !Range<Int>.isNativelySupportedType)
        #expect(
            !PropertyListSamples.Window.isNativelySupportedType && !PropertyListSamples.Theme.isNativelySupportedType
        )
        #expect(!Defaults.AnySerializable.isNativelySupportedType)
    }

    @Test func anySerializableSetWithATypeStoresThatType() async throws {
        var any = Defaults.AnySerializable(0)
        any.set(200, type: UInt8.self)
        #expect(any.get(UInt8.self) == 200)
        any.set(0.5, type: Float.self)
        #expect(any.get(Float.self) == 0.5)
        try await withUserDefaults { userDefaults, _ in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            var stamp = Defaults.AnySerializable(0)
            stamp.set(PropertyListSamples.date, type: Date.self)
            suite[Defaults.Key<Defaults.AnySerializable>("stamp", default: 0, suite: suite)] = stamp
            #expect(userDefaults.object(forKey: "stamp") as? Date == PropertyListSamples.date)
        }
    }
}
