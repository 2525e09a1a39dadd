import Configuration
import DefaultsConfiguration
import Foundation
import Testing

/// A secret key's name has one answer through the provider: the secret's file, or no value (the
/// key's default), under every name the key mapping tries, flat or nested; always marked secret,
/// and never printed by a `ConfigReader`'s access log.
@Suite struct SecretTests {
    /// A settings file that plants values under the secret's name, flat and nested, and a
    /// credentials folder holding `fileText` as the secret's file (none when `nil`).
    private struct Fixture {
        let settings: URL
        let credentials: URL
        let suite: Defaults.Suite

        init(in directory: URL, fileText: String?) throws {
            settings = directory.appendingPathComponent("settings.json")
            try save(
                #"""
                {"database": {"password": "planted-nested", "host": "db"}, "database.password": "planted-flat",
                 "service": {"database": {"password": "planted-deep"}}}
                """#,
                to: settings
            )
            credentials = directory.appendingPathComponent("credentials", isDirectory: true)
            try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
            if let fileText {
                try Data(fileText.utf8).write(to: credentials.appendingPathComponent("database.password"))
            }
            suite = Defaults.Suite(fileURL: settings) { _ in }
            suite.readSecrets(from: credentials)
            _ = Defaults.Key<String>(secret: "database.password", default: "the default", suite: suite)
        }
    }

    /// The mappings a provider may use: every one tries the secret's name, flat or nested.
    static let mappings: [(String, DefaultsProvider.KeyMapping)] = [
        ("dotted", .dotted),
        ("nested only", DefaultsProvider.KeyMapping { key in [key.components] }),
        (
            "nested first",
            DefaultsProvider.KeyMapping { key in [key.components, [key.components.joined(separator: ".")]] }
        ),
    ]

    private static func lookUp(
        _ provider: DefaultsProvider
    ) throws -> [(String, LookupResult)] {
        [
            ("value", try provider.value(forKey: ["database", "password"], type: .string)),
            ("snapshot", try provider.snapshot().value(forKey: ["database", "password"], type: .string)),
        ]
    }

    /// Issue 51, item 3: with no credential file and `{"database": {"password": "planted-by-hand"}}`
    /// in the settings, the provider answered the planted text, not marked secret.
    @Test func withoutAFileNoNameTheMappingTriesAnswersASecret() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, fileText: nil)
            for (name, mapping) in Self.mappings {
                let provider = DefaultsProvider(suite: fixture.suite, keyMapping: mapping)
                for (how, result) in try Self.lookUp(provider) {
                    #expect(result.value == nil, "\(name), \(how): \(String(describing: result.value))")
                }
            }
            // Beside it, a member of the object is still read.
            let provider = DefaultsProvider(suite: fixture.suite)
            #expect(try provider.value(forKey: ["database", "host"], type: .string).value?.content == .string("db"))
        }
    }

    @Test func withAFileEveryNameTheMappingTriesAnswersTheFileMarkedSecret() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, fileText: "from-the-file\n")
            for (name, mapping) in Self.mappings {
                let provider = DefaultsProvider(suite: fixture.suite, keyMapping: mapping)
                for (how, result) in try Self.lookUp(provider) {
                    #expect(result.value?.content == .string("from-the-file"), "\(name), \(how)")
                    #expect(result.value?.isSecret == true, "\(name), \(how)")
                }
            }
            // Nested under another section, the name is another key's: not the secret's.
            let sectioned = DefaultsProvider(
                suite: fixture.suite,
                keyMapping: DefaultsProvider.KeyMapping { key in [["service"] + key.components] }
            )
            let other = try sectioned.value(forKey: ["database", "password"], type: .string)
            #expect(other.value?.content == .string("planted-deep"))
            #expect(other.value?.isSecret == false)
        }
    }

    @Test func aWatcherOfASecretsNestedNameSeesTheSecretsFile() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, fileText: "first")
            let provider = DefaultsProvider(
                suite: fixture.suite,
                keyMapping: DefaultsProvider.KeyMapping { [$0.components] }
            )
            let file = fixture.credentials.appendingPathComponent("database.password")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await provider.watchValue(forKey: ["database", "password"], type: .string) { updates in
                        var iterator = updates.makeAsyncIterator()
                        #expect(try await iterator.next()?.get().value?.content == .string("first"))
                        // The secret's file changes: the watcher of its nested name is told.
                        try Data("second".utf8).write(to: file, options: .atomic)
                        #expect(try await iterator.next()?.get().value?.content == .string("second"))
                    }
                }
                // A deadline that only stops a hang: the watch ends when its task is cancelled.
                group.addTask { try await Task.sleep(for: .seconds(120)) }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    /// A snapshot's values leave a secret out under its every name, and it still answers the secret.
    ///
    /// Probe finding 3c: `DefaultsSnapshot.values`, public, held the secret's text under its name,
    /// unmarked, and what the settings file planted under its nested name. Both are left out; the
    /// snapshot still answers the secret, and the members beside it.
    @Test func aSnapshotsValuesLeaveASecretOutUnderEveryNameAndItStillAnswersIt() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, fileText: "from-the-file")
            let snapshot = try #require(DefaultsProvider(suite: fixture.suite).snapshot() as? DefaultsSnapshot)
            #expect(snapshot.values["database.password"] == nil, "\(snapshot.values)")
            #expect(snapshot.values["database"] == .object(["host": .string("db")]), "\(snapshot.values)")
            #expect(
                snapshot.values["service"] == .object(["database": .object(["password": .string("planted-deep")])]),
                "another key's nesting is not the secret's"
            )
            let answer = try snapshot.value(forKey: ["database", "password"], type: .string)
            #expect(answer.value?.content == .string("from-the-file"))
            #expect(answer.value?.isSecret == true)
            #expect(try snapshot.value(forKey: ["database", "host"], type: .string).value?.content == .string("db"))
        }
    }

    /// The hunt: the secret's text, and the texts planted under its name.
    ///
    /// Counted in everything the provider and a `ConfigReader` over it print: zero.
    @Test func theSecretsTextIsInNoOutputOfTheProviderOrItsReader() async throws {
        try await withTemporaryDirectory { directory in
            let secret = "S3cret-hunt-" + UUID().uuidString
            let fixture = try Fixture(in: directory, fileText: secret)
            let logFile = directory.appendingPathComponent("access.log")
            var printed: [String] = []
            do {
                let accessLog = try FileAccessLogger(filePath: .init(stringLiteral: logFile.path))
                for (_, mapping) in Self.mappings {
                    let provider = DefaultsProvider(suite: fixture.suite, keyMapping: mapping)
                    let reader = ConfigReader(providers: [provider], accessReporter: accessLog)
                    #expect(reader.string(forKey: "database.password") == secret)
                    #expect(reader.string(forKey: "database.password", isSecret: false) == secret)
                    _ = reader.int(forKey: "database.password")
                    let snapshot = provider.snapshot()
                    printed.append(String(describing: snapshot))
                    printed.append(String(describing: provider))
                    // A lookup of the wrong type throws; its message names the key, not the value.
                    do {
                        _ = try provider.value(forKey: ["database", "password"], type: .int)
                    } catch {
                        printed.append(String(describing: error))
                    }
                    var dumped = ""
                    dump(snapshot, to: &dumped)
                    printed.append(dumped)
                    // Probe finding 3c: a snapshot's public values held the secret's text.
                    let values = try #require(snapshot as? DefaultsSnapshot).values
                    printed.append(String(describing: values))
                    dumped = ""
                    dump(values, to: &dumped)
                    printed.append(dumped)
                }
            }
            let log = try String(contentsOf: logFile, encoding: .utf8)
            #expect(log.contains("database.password"), "the log names the key")
            printed.append(log)
            #expect(try !String(contentsOf: fixture.settings, encoding: .utf8).contains(secret))
            for text in [secret, "planted-flat", "planted-nested"] {
                let count = printed.reduce(0) { $0 + $1.components(separatedBy: text).count - 1 }
                #expect(count == 0, "\(text) printed \(count) times: \(printed.filter { $0.contains(text) })")
            }
        }
    }
}
