import Configuration
import DefaultsConfiguration
import Foundation
import Testing

/// Every stored value converts to every `ConfigType` exactly as swift-configuration's own JSON
/// provider converts the same JSON read from a file: the same content, or an error where it fails.
@Suite struct ValueConversionTests {
    /// JSON values of every shape, edge cases of Foundation's number handling among them.
    static let values = [
        #""Hello""#, #""""#, #""bWFnaWM=""#, #""not base64!""#, #""42""#, #""true""#,
        "0", "-0", "1", "42", "-7", "1.0", "-0.0", "1e2", "2.5E+1", "3.14", "-1.5e-3", "0.1", "1e-320",
        "9007199254740993", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
        "18446744073709551615", "12345678901234567890123", "1.7976931348623157e308",
        "true", "false", "null",
        "[]", #"["a", "b"]"#, #"["bWFnaWM=", "bWFnaWMy"]"#, #"["bWFnaWM=", "%%"]"#, "[1, 2]", "[1, 2.5]",
        "[0.5, 1e2]", "[true, false]", "[1, true]", "[2, 0, -1]", #"["a", 1]"#, #"[1, "a"]"#, "[null]", "[1, null]",
        "[[1]]", #"[{"a": 1}]"#, "[9223372036854775808]", #"{"a": 1}"#, "{}",
    ]

    static let types: [ConfigType] = [
        .string, .int, .double, .bool, .bytes, .stringArray, .intArray, .doubleArray, .boolArray, .byteChunkArray,
    ]

    @Test(arguments: values)
    func convertsAsSwiftConfigurationsJSONProvider(_ value: String) async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("settings.json")
            try save(#"{"k": \#(value)}"#, to: file)
            let provider = DefaultsProvider(suite: Defaults.Suite(fileURL: file))
            let data = Data(#"{"k": \#(value)}"#.utf8)
            let reference = Result {
                try JSONSnapshot(data: data.bytes, providerName: "reference", parsingOptions: .default)
            }
            for type in Self.types {
                let ours = Result { try provider.value(forKey: ["k"], type: type).value?.content }
                let theirs = reference.flatMap { snapshot in
                    Result { try snapshot.value(forKey: ["k"], type: type).value?.content }
                }
                switch (ours, theirs) {
                case (.success(let ours), .success(let theirs)):
                    #expect(ours == theirs, "\(value) as \(type)")
                case (.failure(let error), .failure):
                    #expect(error is DefaultsProviderError, "\(value) as \(type)")
                default:
                    Issue.record("\(value) as \(type): ours \(ours), swift-configuration's \(theirs)")
                }
            }
        }
    }

    /// The one known difference: Foundation bridges the decimal it makes of an integer below
    /// `Int.min` to a wrong `Int` (-9223372036854775807 for -9223372036854775809); here such a
    /// number has no `Int`, as one above `Int.max` has none in both.
    @Test func anIntegerBelowIntMinHasNoInt() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("settings.json")
            try save(#"{"wide": -9223372036854775809}"#, to: file)
            let provider = DefaultsProvider(suite: Defaults.Suite(fileURL: file))
            #expect(throws: DefaultsProviderError.self) { try provider.value(forKey: ["wide"], type: .int) }
            #expect(
                try provider.value(forKey: ["wide"], type: .double).value?.content == .double(-9.223372036854775808e18)
            )
        }
    }

    @Test func aWrongShapeFailsThatKeyOnlyAndNamesNoValue() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("settings.json")
            try save(#"{"password": "hunter2", "mixed": [1, "a"], "port": 8080}"#, to: file)
            let provider = DefaultsProvider(suite: Defaults.Suite(fileURL: file))
            #expect(throws: DefaultsProviderError.self) { try provider.value(forKey: ["password"], type: .int) }
            #expect(throws: DefaultsProviderError.self) { try provider.value(forKey: ["mixed"], type: .intArray) }
            #expect(try provider.value(forKey: ["port"], type: .int).value?.content == .int(8080))
            do {
                _ = try provider.value(forKey: ["password"], type: .int)
            } catch {
                #expect("\(error)".contains("'password'"))
                #expect(!"\(error)".contains("hunter2"))
            }
            // Through a reader: the error is reported and the default answers.
            let config = ConfigReader(provider: provider)
            #expect(config.int(forKey: "password", default: 1) == 1)
            #expect(throws: (any Error).self) { try config.requiredInt(forKey: "password") }
        }
    }

    @Test func secretsAreMarkedAsTheSpecifierSays() async throws {
        let suite = Defaults.Suite.inMemory()
        suite[Defaults.Key<String>("db.password", default: "", suite: suite)] = "hunter2"
        suite[Defaults.Key<String>("db.user", default: "", suite: suite)] = "app"
        let provider = DefaultsProvider(suite: suite, secretsSpecifier: .specific(["db.password"]))
        #expect(try provider.value(forKey: ["db", "password"], type: .string).value?.isSecret == true)
        #expect(try provider.value(forKey: ["db", "user"], type: .string).value?.isSecret == false)
    }

    @Test func aSecretKeysValueIsMarkedSecretWhateverTheSpecifierSays() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("SecretProvider-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("hunter2\n".utf8).write(to: directory.appendingPathComponent("db.password"))
        let suite = Defaults.Suite.inMemory()
        suite.readSecrets(from: directory)
        _ = Defaults.Key<String>(secret: "db.password", suite: suite)
        suite[Defaults.Key<String>("db.user", default: "", suite: suite)] = "app"
        let provider = DefaultsProvider(suite: suite)
        let password = try provider.value(forKey: ["db", "password"], type: .string).value
        #expect(password?.isSecret == true)
        #expect(password?.content == .string("hunter2"))
        #expect(try provider.value(forKey: ["db", "user"], type: .string).value?.isSecret == false)
        let snapshot = provider.snapshot()
        #expect(try snapshot.value(forKey: ["db", "password"], type: .string).value?.isSecret == true)
        #expect(try snapshot.value(forKey: ["db", "user"], type: .string).value?.isSecret == false)
        // Read through a reader as any value is.
        let config = ConfigReader(provider: provider)
        #expect(config.string(forKey: "db.password") == "hunter2")
        // A mapping that tries another top-level name first, where nothing matches, still marks
        // the secret it finds.
        suite.setStoredValues(["service": .object(["port": .number("1")])])
        let mapped = DefaultsProvider(
            suite: suite,
            keyMapping: .init(paths: { key in [["service"] + key.components, [key.components.joined(separator: ".")]] })
        )
        let found = try mapped.value(forKey: ["db", "password"], type: .string).value
        #expect(found?.content == .string("hunter2"))
        #expect(found?.isSecret == true)
    }

    @Test func bytesDecodeWithTheDecoderGiven() throws {
        let suite = Defaults.Suite.inMemory()
        suite[Defaults.Key<String>("key", default: "", suite: suite)] = "6d61676963"
        let provider = DefaultsProvider(suite: suite, bytesDecoder: .hex)
        #expect(try provider.value(forKey: ["key"], type: .bytes).value?.content == .bytes(Array("magic".utf8)))
    }
}
