import Configuration
import DefaultsConfiguration
import Foundation
import Testing

/// Config keys find stored values: a dotted top-level key first, then nested objects; or the
/// caller's own mapping.
@Suite struct KeyMappingTests {
    private func provider(_ json: String, mapping: DefaultsProvider.KeyMapping = .dotted) async throws -> (
        DefaultsProvider, URL
    ) {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("DefaultsConfigurationTests-\(UUID().uuidString)")
        let file = directory.appendingPathComponent("settings.json")
        try save(json, to: file)
        return (DefaultsProvider(suite: Defaults.Suite(fileURL: file), keyMapping: mapping), directory)
    }

    private func int(_ provider: DefaultsProvider, _ key: AbsoluteConfigKey) throws -> Int? {
        guard case .int(let value)? = try provider.value(forKey: key, type: .int).value?.content else { return nil }
        return value
    }

    @Test func dottedKeysReadTopLevelNamesAndNestedObjects() async throws {
        let (provider, directory) = try await provider(
            #"""
            {
              "port" : 1,
              "http.port" : 2,
              "db" : { "port" : 3, "pool.size" : 4, "replica" : { "port" : 5 } },
              "cache" : { "ttl" : { "seconds" : 6 } }
            }
            """#
        )
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try int(provider, ["port"]) == 1)
        #expect(try int(provider, ["http", "port"]) == 2)
        #expect(try int(provider, ["db", "port"]) == 3)
        #expect(try int(provider, ["db", "pool", "size"]) == 4)
        #expect(try int(provider, ["db", "replica", "port"]) == 5)
        #expect(try int(provider, ["cache", "ttl", "seconds"]) == 6)
        #expect(try int(provider, ["db", "absent"]) == nil)
        #expect(try int(provider, []) == nil)
        // An object is not a value: its leaves are.
        #expect(try provider.value(forKey: ["db"], type: .string).value == nil)
        #expect(try provider.value(forKey: ["db"], type: .int).value == nil)
    }

    @Test func aTopLevelKeyWinsOverANestedOneAndNullFallsThrough() async throws {
        let (provider, directory) = try await provider(
            #"{"http.port" : 1, "http" : {"port" : 2, "host" : "a"}, "http.host" : null}"#
        )
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try int(provider, ["http", "port"]) == 1)
        #expect(try provider.value(forKey: ["http", "host"], type: .string).value?.content == .string("a"))
    }

    @Test func theCallersOwnMappingIsUsed() async throws {
        let upperSnake = DefaultsProvider.KeyMapping.flat { $0.components.joined(separator: "_").uppercased() }
        let (flat, first) = try await provider(#"{"HTTP_PORT" : 7, "http.port" : 1}"#, mapping: upperSnake)
        defer { try? FileManager.default.removeItem(at: first) }
        #expect(try int(flat, ["http", "port"]) == 7)

        let underSection = DefaultsProvider.KeyMapping { [["service"] + $0.components] }
        let (nested, second) = try await provider(#"{"service" : {"http" : {"port" : 8}}}"#, mapping: underSection)
        defer { try? FileManager.default.removeItem(at: second) }
        #expect(try int(nested, ["http", "port"]) == 8)
        #expect(try int(nested, ["service", "http", "port"]) == nil)
    }

    @Test func theDottedMappingListsItsPathsInOrder() {
        #expect(DefaultsProvider.KeyMapping.dotted.paths(for: ["port"]) == [["port"]])
        #expect(
            DefaultsProvider.KeyMapping.dotted.paths(for: ["http", "tls", "cert"]) == [
                ["http.tls.cert"], ["http", "tls.cert"], ["http", "tls", "cert"],
            ]
        )
    }

    @Test func theDottedMappingReadsWhatItsListOfPathsSays() throws {
        // The default mapping is resolved without building its paths; this checks it against them.
        let suite = Defaults.Suite.inMemory()
        let raw = { (name: String) in Defaults.Key<Defaults.AnySerializable>(name, default: nil, suite: suite) }
        suite[raw("a")] = ["b": ["c": 1, "c.d": 2, "x": nil], "b.c": 3, "e": "text", "f": [4]]
        suite[raw("a.b")] = ["c": nil, "g": 5]
        suite[raw("a.b.h")] = 6
        suite[raw("z")] = nil
        let listed = DefaultsProvider.KeyMapping { DefaultsProvider.KeyMapping.dotted.paths(for: $0) }
        let fast = DefaultsProvider(suite: suite)
        let slow = DefaultsProvider(suite: suite, keyMapping: listed)
        let keys: [AbsoluteConfigKey] = [
            [], ["a"], ["a", "b"], ["a", "b", "c"], ["a", "b", "c", "d"], ["a", "b", "x"], ["a", "b", "g"],
            ["a", "b", "h"], ["a", "e"], ["a", "e", "f"], ["a", "f"], ["z"], ["z", "y"], ["q", "r", "s"],
        ]
        for key in keys {
            for type in [ConfigType.int, .string, .intArray] {
                let expected = Result { try slow.value(forKey: key, type: type).value }
                let actual = Result { try fast.value(forKey: key, type: type).value }
                switch (actual, expected) {
                case (.success(let actual), .success(let expected)):
                    #expect(actual == expected, "\(key) as \(type)")
                case (.failure, .failure):
                    break
                default:
                    Issue.record("\(key) as \(type): \(actual), listed paths give \(expected)")
                }
            }
        }
        #expect(try fast.value(forKey: ["a", "b", "c"], type: .int).value?.content == .int(3))
        #expect(try fast.value(forKey: ["a", "b", "c", "d"], type: .int).value?.content == .int(2))
    }

    @Test func keysWithEmptyComponentsReadNothingAndWatchWithoutTrapping() async throws {
        let suite = Defaults.Suite.inMemory()
        let provider = DefaultsProvider(suite: suite, keyMapping: .flat { _ in "" })
        #expect(try provider.value(forKey: ["a"], type: .int).value == nil)
        let first = try await provider.watchValue(forKey: ["a"], type: .int) { updates in
            await updates.first { _ in true }
        }
        #expect(try first?.get().value == nil)
    }
}
