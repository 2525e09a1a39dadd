// Secret keys: read from one file per key in a secrets directory, above every other layer, never
// stored, every write refused and reported.
import Defaults
import DefaultsTestSupport
import Foundation
import Testing

@Suite struct SecretTests {
    /// A settings file and a secrets directory beside it, with `files` in the directory.
    private struct Fixture {
        let settings: URL
        let secrets: URL
        let errors = StoreErrorCollector()
        let suite: Defaults.Suite

        init(in directory: URL, settings text: String = "{}", files: [String: String]) throws {
            settings = storeSettingsURL(in: directory)
            try storeWriteFile(settings, Array(text.utf8))
            secrets = directory.appendingPathComponent("secrets", isDirectory: true)
            try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true)
            for (name, contents) in files { try Data(contents.utf8).write(to: secrets.appendingPathComponent(name)) }
            suite = Defaults.Suite(fileURL: settings, errorHandler: errors.handler)
            suite.readSecrets(from: secrets)
        }
    }

    @Test func aSecretIsReadFromItsFileLessOneLineEnding() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(
                in: directory,
                files: ["database.password": "correct horse\n", "token": "a\r\n", "spaced": " two lines\nkept \n\n"]
            )
            let suite = fixture.suite
            let password = Defaults.Key<String>(secret: "database.password", suite: suite)
            #expect(suite[password] == "correct horse")
            #expect(suite[Defaults.Key<String>(secret: "token", suite: suite)] == "a")
            // One line ending goes; the rest, spaces included, is the secret.
            #expect(suite[Defaults.Key<String>(secret: "spaced", suite: suite)] == " two lines\nkept \n")
            #expect(password.isSecret)
            #expect(suite.isSecret(named: "database.password"))
            #expect(!suite.isSecret(named: "greeting"))
            #expect(suite.secretsDirectory == fixture.secrets)
            #expect(
                suite.source(of: password) == .secret(fixture.secrets.appendingPathComponent("database.password"))
            )
            #expect(fixture.errors.errors.isEmpty)
        }
    }

    @Test func withoutAFileASecretReadsItsDefaultAndNothingElseSetsIt() throws {
        try withStoreTemporaryDirectory { directory in
            // The user's file holds values for both names (written before they were secret).
            let fixture = try Fixture(
                in: directory,
                settings: #"{"apiToken": "from the file", "password": "from the file"}"#,
                files: ["password": "from the secret"]
            )
            let suite = fixture.suite
            suite.overrideWithLaunchArguments(["program", "-password", "from argv", "-apiToken", "from argv"])
            suite.overrideWithEnvironment(prefix: "T_", ["T_password": "from env"])
            let password = Defaults.Key<String>(secret: "password", default: "none", suite: suite)
            let token = Defaults.Key<String?>(secret: "apiToken", suite: suite)
            #expect(suite[password] == "from the secret")
            #expect(suite[token] == nil)
            #expect(suite.source(of: token) == .defaultValue)
            // A key declared as an ordinary one reads what the file holds.
            #expect(suite[Defaults.Key<String>("other", default: "d", suite: suite)] == "d")
        }
    }

    @Test func aWriteToASecretIsRefusedReportedAndNeverStored() throws {
        try withStoreTemporaryDirectory { directory in
            let original = #"{"kept": 1}"#
            let fixture = try Fixture(in: directory, settings: original, files: ["password": "hunter2"])
            let suite = fixture.suite
            let password = Defaults.Key<String>(secret: "password", suite: suite)
            suite[password] = "written"
            password.reset()
            suite.setStoredValues(["password": .string("raw")])
            suite.transaction { suite[password] = "in a transaction" }
            #expect(suite[password] == "hunter2")
            #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
            #expect(try storeFileText(fixture.settings) == original)
            let refused = fixture.errors.errors.filter {
                if case .secretKey("password", fixture.secrets.appendingPathComponent("password")) = $0 { return true }
                return false
            }
            // The reset removes nothing there is, so it is no change; the three writes are refused.
            #expect(refused.count == 3)
            #expect(fixture.errors.errors.count == 3)
            // The error names the file, never the value.
            #expect(refused.allSatisfy { !$0.description.contains("hunter2") && $0.description.contains("secret") })
            // Other keys are written as usual.
            suite[Defaults.Key<Int>("kept", default: 0, suite: suite)] = 2
            try suite.synchronize()
            let members = try storeFileObject(fixture.settings)
            #expect(members.count == 1 && members["kept"] as? Int == 2)
        }
    }

    @Test func readingTheDirectoryAgainTellsObserversOfChangedSecrets() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, files: ["password": "first"])
            let suite = fixture.suite
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            // Declared: reads of the name see the secret now, not what was stored (nothing).
            let password = Defaults.Key<String>(secret: "password", suite: suite)
            #expect(suite[password] == "first")
            #expect(await recorder.waitForEvents(1))
            #expect(recorder.events.first?.changes["password"]?.old == nil)
            #expect(recorder.events.first?.changes["password"]?.new == .string("first"))
            // A Kubernetes Secret volume's update: the files are replaced, then read again.
            try Data("second\n".utf8).write(to: fixture.secrets.appendingPathComponent("password"), options: .atomic)
            suite.readSecrets(from: fixture.secrets)
            #expect(await recorder.waitForEvents(2))
            #expect(suite[password] == "second")
            let change = recorder.events.last?.changes["password"]
            #expect(change?.old == .string("first"))
            #expect(change?.new == .string("second"))
            #expect(recorder.events.last?.origin == .external)
            // Another directory, where the file is missing: the default.
            let empty = directory.appendingPathComponent("empty", isDirectory: true)
            try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
            suite.readSecrets(from: empty)
            #expect(await recorder.waitForEvents(3))
            #expect(recorder.events.count == 3)
            #expect(suite[password] == "")
        }
    }

    @Test func aKubernetesSecretVolumeIsFollowedLiveThroughItsDataSwap() async throws {
        try await withTemporaryDirectory { directory in
            var volume = try ConfigMapVolume(
                at: directory.appendingPathComponent("secret-volume", isDirectory: true),
                files: ["password": "first\n", "token": "t1"]
            )
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: storeSettingsURL(in: directory), errorHandler: errors.handler)
            suite.readSecrets(from: volume.directory)
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            let password = Defaults.Key<String>(secret: "password", suite: suite)
            let token = Defaults.Key<String>(secret: "token", suite: suite)
            let missing = Defaults.Key<String?>(secret: "apiKey", suite: suite)
            #expect(suite[password] == "first")
            // Declaring "password" and "token" changed what reads of those names see ("apiKey"
            // has no file yet, and nothing was stored: no change).
            #expect(await recorder.waitForEvents(2))
            let declared = recorder.events.count
            // kubelet's update: a new timestamped directory, `..data` renamed over, the old one gone.
            try volume.update(["password": "second\n", "token": "t1", "apiKey": "k"])
            // Observers are told, with old and new values, and of nothing that did not change.
            func told() -> [String: Defaults.StoredChange] {
                var changes: [String: Defaults.StoredChange] = [:]
                for event in recorder.events.dropFirst(declared) { changes.merge(event.changes) { $1 } }
                return changes
            }
            #expect(await recorder.wait(until: { told()["password"] != nil && told()["apiKey"] != nil }))
            #expect(told()["password"]?.old == .string("first"))
            #expect(told()["password"]?.new == .string("second"))
            #expect(told()["apiKey"]?.new == .string("k"))
            #expect(told()["token"] == nil)
            #expect(suite[password] == "second")
            #expect(suite[missing] == "k")
            #expect(suite[token] == "t1")
            #expect(suite.source(of: password) == .secret(volume.url(of: "password")))
            try volume.update(["password": "third", "token": "t2"])
            #expect(
                await recorder.wait(until: {
                    suite[password] == "third" && suite[token] == "t2" && suite[missing] == nil
                })
            )
            #expect(errors.errors.isEmpty)
        }
    }

    @Test func aValueOfAnotherTypeStoredUnderASecretsNameIsPassedOverUnreported() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(
                in: directory,
                settings: #"{"password": "from the file"}"#,
                files: ["password": "first"]
            )
            let suite = fixture.suite
            let password = Defaults.Key<String>(secret: "password", suite: suite)
            #expect(suite[password] == "first")
            // The secret changes, so no decoded value is kept for the name for a moment...
            try Data("second".utf8).write(to: fixture.secrets.appendingPathComponent("password"), options: .atomic)
            suite.readSecrets(from: fixture.secrets)
            // ...and another process stores a number under it: not the key's type.
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            try storeWriteFile(fixture.settings, Array(#"{"password": 5, "other": 1}"#.utf8))
            #expect(await recorder.wait(until: { suite.storedValue(named: "other") == .number("1") }))
            #expect(suite[password] == "second")
            try FileManager.default.removeItem(at: fixture.secrets.appendingPathComponent("password"))
            suite.readSecrets(from: fixture.secrets)
            #expect(suite[password] == "")
            #expect(fixture.errors.errors.isEmpty, "\(fixture.errors.errors)")
        }
    }

    @Test func removeAllTakesWhatIsStoredUnderASecretsNameWithoutARefusal() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(
                in: directory,
                settings: #"{"password": "left from before", "port": 1}"#,
                files: ["password": "hunter2"]
            )
            let suite = fixture.suite
            let password = Defaults.Key<String>(secret: "password", suite: suite)
            suite.removeAll()
            try suite.synchronize()
            #expect(try storeFileObject(fixture.settings).isEmpty)
            #expect(suite[password] == "hunter2")
            #expect(fixture.errors.errors.isEmpty, "\(fixture.errors.errors)")
        }
    }

    @Test func anUnreadableSecretIsReportedWithoutItsContentsAndReadsTheDefault() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, files: [:])
            // Not UTF-8 text.
            try Data([0x68, 0x75, 0xFF, 0xFE]).write(to: fixture.secrets.appendingPathComponent("binary"))
            let binary = Defaults.Key<String>(secret: "binary", default: "fallback", suite: fixture.suite)
            #expect(fixture.suite[binary] == "fallback")
            #expect(fixture.errors.errors.count == 1)
            guard case .unreadableSecret(let key, let url, _)? = fixture.errors.errors.first else {
                Issue.record("expected unreadableSecret, got \(fixture.errors.errors)")
                return
            }
            #expect(key == "binary")
            #expect(url == fixture.secrets.appendingPathComponent("binary"))
            // Still a secret: writes are refused.
            fixture.suite[binary] = "x"
            #expect(fixture.errors.errors.count == 2)
        }
    }

    @Test func aSecretOverABackendIsNeverCommittedToIt() throws {
        try withStoreTemporaryDirectory { directory in
            let secrets = directory.appendingPathComponent("secrets", isDirectory: true)
            try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true)
            try Data("s3cret".utf8).write(to: secrets.appendingPathComponent("token"))
            let space = "secret-test-\(UUID())"
            // Another program stored a value under the name before it was a secret.
            let writer = Defaults.Suite(backend: Defaults.InMemoryBackend(space: space))
            writer.setStoredValues(["token": .string("planted")])
            try writer.synchronize()
            let backend = Defaults.InMemoryBackend(space: space)
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(backend: backend, errorHandler: errors.handler)
            suite.readSecrets(from: secrets)
            let token = Defaults.Key<String>(secret: "token", suite: suite)
            #expect(suite[token] == "s3cret")
            suite[token] = "other"
            suite[Defaults.Key<Int>("port", default: 0, suite: suite)] = 8080
            #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
            // The value stored before is left as it was, and passed over.
            let stored = try backend.load().values
            #expect(stored == ["port": .number("8080"), "token": .string("planted")])
            #expect(suite[token] == "s3cret")
        }
    }

    @Test func theSchemaMarksASecretAndShowsNoDefault() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, files: [:])
            let key = Defaults.Key<String>(
                secret: "password",
                default: "dev-only",
                suite: fixture.suite,
                summary: "The database password"
            )
            guard case .object(let document) = fixture.suite.schema(for: [key]),
                case .object(let properties)? = document["properties"],
                case .object(let property)? = properties["password"]
            else {
                Issue.record("no property for the key")
                return
            }
            #expect(property["x-secret"] == .bool(true))
            #expect(property["readOnly"] == .bool(true))
            #expect(property["default"] == nil)
            #expect(property["description"] == .string("The database password"))
        }
    }
}
