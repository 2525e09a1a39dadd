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
            // NB: written before the folder goes: when any UserDefaults of the process
            // synchronizes, Foundation writes every one with changes, and would make the folder
            // again for this one.
            defer { userDefaults.synchronize() }
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
                // NB: when another test synchronizes its UserDefaults, Foundation may read this
                // file again too, and then this process reads what another one would.
                let expected = [sample.expected, sample.expectedInAnotherProcess ?? sample.expected]
                #expect(expected.contains(sample.read(suite)), "\(sample.name) read back")
                #expect(expected.contains(sample.read(reader)), "\(sample.name) read by a second suite")
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
            // keeps it, after a UTF-8 byte-order mark that tells it from bytes, as the migration
            // article says.
            let stored = try #require(userDefaults.object(forKey: "holes") as? Data)
            #expect(Array(stored) == [0xEF, 0xBB, 0xBF] + Array("[1,null,2]".utf8))
            // Unmarked, as earlier versions stored it: still read by a key whose type is not Data.
            userDefaults.set(Data("[3,null]".utf8), forKey: "old")
            #expect(suite[Defaults.Key<[Int?]>("old", default: [], suite: suite)] == [3, nil])
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

    @Test func aDateMillisecondsCannotHoldIsStoredAsADate() async throws {
        try await withUserDefaults { userDefaults, _ in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let now = Date(timeIntervalSinceReferenceDate: 785_500_000.123_456_789)
            suite[Defaults.Key<Date?>("now", suite: suite)] = now
            suite[Defaults.Key<[Date]>("list", default: [], suite: suite)] = [now]
            suite[Defaults.Key<Defaults.AnySerializable>("any", default: 0, suite: suite)] = .init(now)
            #expect(userDefaults.object(forKey: "now") is Date)
            #expect((userDefaults.object(forKey: "list") as? [Any])?.first is Date)
            #expect(userDefaults.object(forKey: "any") is Date)
            // NB: exact until Foundation reads its file again (any UserDefaults' synchronize may
            // make it), then to the second.
            let read = Defaults.Suite(userDefaults: userDefaults)[Defaults.Key<Date?>("now", suite: suite)]
            #expect(read == now || read == Date(timeIntervalSinceReferenceDate: 785_500_000))
        }
    }

    @Test func bytesThatReadAsJSONStayBytes() async throws {
        try await withUserDefaults { userDefaults, _ in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let key = Defaults.Key<Defaults.AnySerializable>("bytes", default: 0, suite: suite)
            for text in ["1", "[]", "\"x\"", "null", #"{"a":1}"#] {
                suite[key] = .init(Data(text.utf8))
                #expect(Defaults.Suite(userDefaults: userDefaults)[key].get(Data.self) == Data(text.utf8), "\(text)")
            }
            // Bytes other code stores are bytes too, whatever they hold.
            userDefaults.set(Data(#"{"a":1}"#.utf8), forKey: "bytes")
            #expect(suite[key].get(Data.self) == Data(#"{"a":1}"#.utf8))
        }
    }

    @Test func aValueWrittenInATransactionIsStoredAsItsOwnType() async throws {
        try await withUserDefaults { userDefaults, _ in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let key = Defaults.Key<Defaults.AnySerializable>("stamp", default: 0, suite: suite)
            suite[key] = "hello"
            suite.transaction {
                suite[key] = .init(PropertyListSamples.date)
                _ = suite[key]  // reads what the UserDefaults holds: still "hello"
            }
            #expect(userDefaults.object(forKey: "stamp") as? Date == PropertyListSamples.date)
            suite[key] = .init(Float(0.5))
            suite.transaction {
                suite[key] = 3
                _ = suite[key]
            }
            #expect(PropertyListSamples.describe(propertyList: userDefaults.object(forKey: "stamp")) == "Integer(3)")
            #expect(Defaults.Suite(userDefaults: userDefaults)[key] == 3)
        }
    }

    @Test func equalPartsReadAsDifferentTypesKeepTheirOwn() async throws {
        try await withUserDefaults { userDefaults, _ in
            userDefaults.set([Float(0.5), 0.5 as Double, Data([0, 1, 2]), "AAEC"] as [Any], forKey: "mixed")
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let key = Defaults.Key<[Defaults.AnySerializable]>("mixed", default: [], suite: suite)
            let before = PropertyListSamples.describe(propertyList: userDefaults.object(forKey: "mixed"))
            var value = suite[key]
            value.append(1)
            suite[key] = value
            let after = PropertyListSamples.describe(propertyList: userDefaults.object(forKey: "mixed"))
            #expect(after == String(before.dropLast()) + ", Integer(1)]")
            #expect(after.contains("Data(AAEC), String(\"AAEC\")"))
        }
    }

    @Test func partsOfAMixedValueMovedAroundKeepTheirOwnTypes() async throws {
        try await withUserDefaults { userDefaults, _ in
            userDefaults.set([Float(1.5), 2, PropertyListSamples.date] as [Any], forKey: "mixed")
            let suite = Defaults.Suite(userDefaults: userDefaults)
            let key = Defaults.Key<[Defaults.AnySerializable]>("mixed", default: [], suite: suite)
            var value = suite[key]
            value.removeFirst()
            value.append("2001")
            suite[key] = value
            let stored = PropertyListSamples.describe(propertyList: userDefaults.object(forKey: "mixed"))
            #expect(
                stored == PropertyListSamples.describe(propertyList: [2, PropertyListSamples.date, "2001"] as [Any])
            )
            #expect(Defaults.Suite(userDefaults: userDefaults)[key] == value)
        }
    }

    @Test func aValueOtherCodeStoredAsAnotherTypeIsStoredAgainAsTheKeysType() async throws {
        try await withUserDefaults { userDefaults, _ in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            userDefaults.set("AAEC", forKey: "bytes")  // base64 of [0, 1, 2], as a string
            let key = Defaults.Key<Data?>("bytes", suite: suite)
            #expect(suite[key] == Data([0, 1, 2]))
            suite[key] = Data([0, 1, 2])
            #expect(userDefaults.object(forKey: "bytes") as? Data == Data([0, 1, 2]))
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

    /// Asks through a generic, as a bridge of one's own does.
    private func isNative<Value: Defaults.Serializable>(_ type: Value.Type) -> Bool { Value.isNativelySupportedType }

    @Test func isNativelySupportedTypeSaysWhatAUserDefaultsHoldsAsItself() {
        #expect(isNative(Int8.self) && isNative(Date.self) && isNative(CGFloat.self) && isNative([String: [Data]].self))
        #expect(!isNative(URL.self) && !isNative(PropertyListSamples.Window.self) && !isNative([UUID].self))
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
        // NB: the literal becomes a Double: without the type it is an Int, stored as "1".
        any.set(1, type: Double.self)
        #expect(any.description == "1.0")
        try await withUserDefaults { userDefaults, _ in
            let suite = Defaults.Suite(userDefaults: userDefaults)
            var stamp = Defaults.AnySerializable(0)
            stamp.set(PropertyListSamples.date, type: Date.self)
            suite[Defaults.Key<Defaults.AnySerializable>("stamp", default: 0, suite: suite)] = stamp
            #expect(userDefaults.object(forKey: "stamp") as? Date == PropertyListSamples.date)
        }
    }
}
