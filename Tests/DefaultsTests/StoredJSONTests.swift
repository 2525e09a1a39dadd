import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// `storedValue(named:)` and `storedValues()`: the suite's JSON as it sits in the file.
@Suite struct StoredJSONTests {
    @Test func valuesReadBackInTheirStoredForm() {
        let suite = Defaults.Suite.inMemory()
        suite[Defaults.Key<Int64>("big", default: 0, suite: suite)] = .max
        suite[Defaults.Key<Double>("ratio", default: 0, suite: suite)] = 0.1
        suite[Defaults.Key<Data>("blob", default: Data(), suite: suite)] = Data([1, 2, 3])
        suite[Defaults.Key<[String: Int]>("http", default: [:], suite: suite)] = ["port": 8080]
        #expect(suite.storedValue(named: "big") == .number("9223372036854775807"))
        #expect(suite.storedValue(named: "ratio") == .number("0.1"))
        #expect(suite.storedValue(named: "blob") == .string("AQID"))
        #expect(suite.storedValue(named: "http") == .object(["port": .number("8080")]))
        #expect(suite.storedValue(named: "absent") == nil)
        #expect(suite.storedValues().count == 4)
    }

    @Test func keysNoKeyNamesAreIncluded() throws {
        try withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("settings.json")
            try Data(#"{"http" : {"port" : 8080}, "log.level" : "debug", "off" : null}"#.utf8).write(to: file)
            let suite = Defaults.Suite(fileURL: file)
            #expect(
                suite.storedValues() == [
                    "http": .object(["port": .number("8080")]), "log.level": .string("debug"), "off": .null,
                ]
            )
        }
    }

    @Test func aTakenDictionaryIsOneStateThatLaterWritesDoNotChange() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        suite[key] = 1
        let before = suite.storedValues()
        suite[key] = 2
        #expect(before["count"] == .number("1"))
        #expect(suite.storedValues()["count"] == .number("2"))
    }
}
