import Configuration
import ConfigurationTesting
import DefaultsConfiguration
import Foundation
import Testing

/// swift-configuration's own conformance suite for providers, against a suite in a real file
/// holding the values it expects, laid out both ways the default key mapping reads.
@Suite struct ProviderCompatTests {
    private static let magic = Data("magic".utf8)
    private static let magic2 = Data("magic2".utf8)

    @Test func passesWithTypedValuesUnderDottedTopLevelKeys() async throws {
        try await withTemporaryDirectory { directory in
            let suite = Defaults.Suite(fileURL: directory.appendingPathComponent("settings.json"))
            // Written through typed keys, as a program using the suite would: `Data` is stored as
            // base64 text, arrays as JSON arrays.
            func set<Value: Defaults.Serializable>(_ name: String, _ value: Value, default empty: Value) {
                suite[Defaults.Key<Value>(name, default: empty, suite: suite)] = value
            }
            suite.transaction {
                set("string", "Hello", default: "")
                set("other.string", "Other Hello", default: "")
                set("int", 42, default: 0)
                set("other.int", 24, default: 0)
                set("double", 3.14, default: 0)
                set("other.double", 2.72, default: 0)
                set("bool", true, default: false)
                set("other.bool", false, default: true)
                set("bytes", Self.magic, default: Data())
                set("other.bytes", Self.magic2, default: Data())
                set("stringy.array", ["Hello", "World"], default: [])
                set("other.stringy.array", ["Hello", "Swift"], default: [])
                set("inty.array", [42, 24], default: [])
                set("other.inty.array", [16, 32], default: [])
                set("doubly.array", [3.14, 2.72], default: [])
                set("other.doubly.array", [0.9, 1.8], default: [])
                set("booly.array", [true, false], default: [])
                set("other.booly.array", [false, true, true], default: [])
                set("byteChunky.array", [Self.magic, Self.magic2], default: [])
                set("other.byteChunky.array", [Self.magic, Self.magic2, Self.magic], default: [])
            }
            try suite.synchronize()
            try await ProviderCompatTest(provider: DefaultsProvider(suite: suite)).runTest()
        }
    }

    @Test func passesWithAHandWrittenFileOfNestedObjects() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("settings.json")
            try save(
                """
                {
                  "string" : "Hello",
                  "int" : 42,
                  "double" : 3.14,
                  "bool" : true,
                  "bytes" : "bWFnaWM=",
                  "stringy" : { "array" : ["Hello", "World"] },
                  "inty" : { "array" : [42, 24] },
                  "doubly" : { "array" : [3.14, 2.72] },
                  "booly" : { "array" : [true, false] },
                  "byteChunky" : { "array" : ["bWFnaWM=", "bWFnaWMy"] },
                  "other" : {
                    "string" : "Other Hello",
                    "int" : 24,
                    "double" : 2.72,
                    "bool" : false,
                    "bytes" : "bWFnaWMy",
                    "stringy.array" : ["Hello", "Swift"],
                    "inty" : { "array" : [16, 32] },
                    "doubly" : { "array" : [0.9, 1.8] },
                    "booly" : { "array" : [false, true, true] },
                    "byteChunky" : { "array" : ["bWFnaWM=", "bWFnaWMy", "bWFnaWM="] }
                  },
                  "absent" : null
                }
                """,
                to: file
            )
            let suite = Defaults.Suite(fileURL: file)
            try await ProviderCompatTest(provider: DefaultsProvider(suite: suite)).runTest()
        }
    }
}
