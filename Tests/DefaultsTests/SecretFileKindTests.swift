// What stands where a secret's file should be: a FIFO, a device, a socket, a directory, a loop of
// links, a file too large. Each is refused unread and reported once, never blocks a service's start
// or the reading of later rotations, and the key keeps its last good value until a good file comes.
import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct SecretFileKindTests {
    /// What a test puts where the credential `database.password` should be.
    enum Obstacle: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case fifo, endlessDevice, emptyDevice, socket, directory, linkLoop, danglingLink, tooLarge

        var testDescription: String { rawValue }

        /// Puts it at `url`.
        func make(at url: URL) throws {
            switch self {
            case .fifo: try makeFIFO(at: url)
            case .endlessDevice:
                try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "/dev/zero")
            case .emptyDevice:
                try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "/dev/null")
            case .socket: try makeSocket(at: url)
            case .directory: try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            case .linkLoop:
                try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: url.lastPathComponent)
            case .danglingLink:
                try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "missing")
            case .tooLarge: try Data(repeating: UInt8(ascii: "x"), count: 64 * 1024 + 1).write(to: url)
            }
        }

        /// What the report says it is; `nil` when nothing is reported (a link that leads nowhere
        /// is no file, and the key reads its default, as without one).
        var reported: String? {
            switch self {
            case .fifo: "it is a FIFO (a named pipe), not a regular file"
            case .endlessDevice, .emptyDevice: "it is a character device, not a regular file"
            case .socket: "it is a socket, not a regular file"
            case .directory: "it is a directory, not a regular file"
            case .linkLoop: "a symbolic link on the way leads back to itself"
            case .danglingLink: nil
            case .tooLarge: "it is larger than 64 KiB, the most a secret may be"
            }
        }
    }

    /// A service starting with `CREDENTIALS_DIRECTORY=D`, where `D/database.password` is
    /// `obstacle`: it starts (a FIFO once kept it in `open` for ever, `/dev/zero` read until
    /// memory ran out), reports the file once, and the key reads its default.
    @Test(arguments: Obstacle.allCases)
    func aServiceStartsWhateverStandsWhereItsCredentialShouldBe(_ obstacle: Obstacle) async throws {
        try await withTemporaryDirectory { directory in
            let credentials = directory.appendingPathComponent("credentials", isDirectory: true)
            try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
            let secret = credentials.appendingPathComponent("database.password")
            try obstacle.make(at: secret)
            defer { releaseFIFO(at: secret) }
            let result = try await HelperProcess.run(
                ["secret-service", directory.appendingPathComponent("settings.json").path, "database.password"],
                environment: ["CREDENTIALS_DIRECTORY": credentials.path]
            )
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(result.lines.contains("listening on 8080"), "\(result.output)")
            #expect(result.lines.contains("reads the default"), "\(result.output)")
            let reports = result.lines.filter { $0.hasPrefix("error ") }
            if let reported = obstacle.reported {
                #expect(reports.count == 1, "\(reports)")
                #expect(reports.first?.contains(reported) == true, "\(reports)")
                #expect(reports.first?.contains(secret.path) == true, "\(reports)")
            } else {
                #expect(reports.isEmpty, "\(reports)")
            }
        }
    }

    /// What a test names as `$CREDENTIALS_DIRECTORY`.
    enum DirectoryObstacle: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case regularFile, fifo, device, relativePath, missing

        var testDescription: String { rawValue }

        /// Puts it at `url`; returns the value of `$CREDENTIALS_DIRECTORY` that names it.
        func make(at url: URL) throws -> String {
            switch self {
            case .regularFile: try Data("not a folder".utf8).write(to: url)
            case .fifo: try makeFIFO(at: url)
            case .device:
                try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "/dev/null")
            case .relativePath:
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
                return url.lastPathComponent
            case .missing: break
            }
            return url.path
        }

        /// What the report says; `nil` when nothing is reported (a folder not there yet holds no
        /// file, and the key reads its default, as without one).
        var reported: String? {
            switch self {
            case .regularFile: "holds no files: it is a regular file, not a directory"
            case .fifo: "holds no files: it is a FIFO (a named pipe), not a directory"
            case .device: "holds no files: it is a character device, not a directory"
            case .relativePath: #"$CREDENTIALS_DIRECTORY is "credentials", not an absolute path"#
            case .missing: nil
            }
        }
    }

    /// A service whose `$CREDENTIALS_DIRECTORY` is no directory it can read secrets from starts,
    /// says so once, and its secret reads the default.
    ///
    /// Probe: a file, a FIFO or a device in the folder's place, or a relative path, was passed
    /// over in silence, and every secret read its default with nothing said.
    @Test(arguments: DirectoryObstacle.allCases)
    func aSecretsDirectoryThatIsNoDirectoryIsReportedOnceAndTheServiceStarts(
        _ obstacle: DirectoryObstacle
    ) async throws {
        try await withTemporaryDirectory { directory in
            let credentials = directory.appendingPathComponent("credentials", isDirectory: false)
            let named = try obstacle.make(at: credentials)
            defer { releaseFIFO(at: credentials) }
            let result = try await HelperProcess.run(
                ["secret-service", directory.appendingPathComponent("settings.json").path, "database.password"],
                environment: ["CREDENTIALS_DIRECTORY": named]
            )
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(result.lines.contains("listening on 8080"), "\(result.output)")
            #expect(result.lines.contains("reads the default"), "\(result.output)")
            let reports = result.lines.filter { $0.hasPrefix("error ") }
            if let reported = obstacle.reported {
                #expect(reports.count == 1, "\(reports)")
                #expect(reports.first?.contains(reported) == true, "\(reports)")
                #expect(reports.first?.contains("\"database.password\"") == true, "\(reports)")
            } else {
                #expect(reports.isEmpty, "\(reports)")
            }
        }
    }

    /// A settings file, a secrets folder holding `password` = "first", and a suite reading it.
    private struct Fixture {
        let secrets: URL
        let errors = StoreErrorCollector()
        let suite: Defaults.Suite
        let password: Defaults.Key<String>

        init(in directory: URL) throws {
            secrets = directory.appendingPathComponent("secrets", isDirectory: true)
            try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true)
            try Data("first\n".utf8).write(to: secrets.appendingPathComponent("password"))
            suite = Defaults.Suite(fileURL: storeSettingsURL(in: directory), errorHandler: errors.handler)
            suite.readSecrets(from: secrets)
            password = Defaults.Key<String>(secret: "password", default: "the default", suite: suite)
        }

        var file: URL { secrets.appendingPathComponent("password") }

        /// Puts `text` in the secret's place by rename, as a rotation does.
        func rotate(to text: String) throws {
            let next = secrets.appendingPathComponent(".next")
            try Data(text.utf8).write(to: next)
            guard rename(next.path, file.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
        }

        /// The `unreadableSecret` reports so far, by their reasons.
        var reasons: [String] {
            errors.errors.compactMap { error in
                guard case .unreadableSecret("password", _, let reason) = error else { return nil }
                return reason
            }
        }
    }

    @Test func aFIFOThatReplacesASecretIsReportedOnceAndTheNextGoodFileIsReadAtOnce() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory)
            let suite = fixture.suite
            #expect(suite[fixture.password] == "first")
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            // `mkfifo D/x; mv D/x D/password`; a second name keeps the FIFO reachable, so a reader
            // stuck opening it can be let go when the test ends.
            let fifo = fixture.secrets.appendingPathComponent(".fifo")
            let kept = directory.appendingPathComponent("kept-fifo")
            try makeFIFO(at: fifo)
            #expect(link(fifo.path, kept.path) == 0)
            defer { releaseFIFO(at: kept) }
            #expect(rename(fifo.path, fixture.file.path) == 0)
            #expect(await fixture.errors.wait(forCount: 1), "the FIFO is reported")
            #expect(fixture.reasons.first?.contains("it is a FIFO (a named pipe), not a regular file") == true)
            // The last good value stays, as when a bad value comes from elsewhere.
            #expect(suite[fixture.password] == "first")
            #expect(suite.source(of: fixture.password) == .secret(fixture.file))
            // The next rotation is read at once: the reader is not left waiting on the FIFO.
            try fixture.rotate(to: "second")
            #expect(await recorder.wait(until: { suite[fixture.password] == "second" }))
            #expect(fixture.errors.errors.count == 1, "reported once: \(fixture.errors.errors)")
            #expect(fixture.errors.errors.allSatisfy { !$0.description.contains("first") })
        }
    }

    /// Item 2 of issue 51: a directory that replaced a credential while the service ran was not
    /// reported (at start, the same directory was).
    @Test func aDirectoryThatReplacesASecretWhileRunningIsReported() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory)
            let suite = fixture.suite
            #expect(suite[fixture.password] == "first")
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            // The file removed (its default, as with no file), then a directory made in its place.
            try FileManager.default.removeItem(at: fixture.file)
            #expect(await recorder.wait(until: { suite[fixture.password] == "the default" }))
            try FileManager.default.createDirectory(at: fixture.file, withIntermediateDirectories: false)
            #expect(await fixture.errors.wait(forCount: 1), "the directory is reported")
            #expect(fixture.reasons == ["opening: it is a directory, not a regular file"], "\(fixture.errors.errors)")
            #expect(suite[fixture.password] == "the default")
            try FileManager.default.removeItem(at: fixture.file)
            try fixture.rotate(to: "second")
            #expect(await recorder.wait(until: { suite[fixture.password] == "second" }))
            #expect(fixture.errors.errors.count == 1, "\(fixture.errors.errors)")
        }
    }

    /// As a directory: a FIFO or a socket made where a secret was removed makes no event but its
    /// creation, and is reported.
    @Test(arguments: [Obstacle.fifo, .socket])
    func aFIFOOrSocketMadeWhereASecretWasRemovedIsReported(_ obstacle: Obstacle) async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory)
            let suite = fixture.suite
            #expect(suite[fixture.password] == "first")
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            try FileManager.default.removeItem(at: fixture.file)
            #expect(await recorder.wait(until: { suite[fixture.password] == "the default" }))
            try obstacle.make(at: fixture.file)
            defer { releaseFIFO(at: fixture.file) }
            #expect(await fixture.errors.wait(forCount: 1), "\(obstacle) is reported")
            #expect(fixture.reasons == ["opening: " + obstacle.reported!], "\(fixture.errors.errors)")
        }
    }

    @Test func aKubernetesSwapToAFolderHoldingAFIFOOrAFolderKeepsTheLastGoodSecret() async throws {
        try await withTemporaryDirectory { directory in
            var volume = try ConfigMapVolume(
                at: directory.appendingPathComponent("volume", isDirectory: true),
                files: ["password": "first\n", "token": "t1"]
            )
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: storeSettingsURL(in: directory), errorHandler: errors.handler)
            suite.readSecrets(from: volume.directory)
            let password = Defaults.Key<String>(secret: "password", suite: suite)
            let token = Defaults.Key<String>(secret: "token", suite: suite)
            #expect(suite[password] == "first")
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            // `..data` swapped to a folder where `password` is a FIFO; `token` changes with it.
            let kept = directory.appendingPathComponent("kept-fifo")
            defer { releaseFIFO(at: kept) }
            try volume.update(["token": "t2"]) { folder in
                try makeFIFO(at: folder.appendingPathComponent("password"))
                #expect(link(folder.appendingPathComponent("password").path, kept.path) == 0)
            }
            #expect(await recorder.wait(until: { suite[token] == "t2" }), "the swap is read")
            #expect(await errors.wait(forCount: 1))
            #expect(suite[password] == "first", "the last good value stays")
            // Then to a folder where it is a folder.
            try volume.update(["token": "t3"]) { folder in
                try FileManager.default.createDirectory(
                    at: folder.appendingPathComponent("password"),
                    withIntermediateDirectories: false
                )
            }
            #expect(await recorder.wait(until: { suite[token] == "t3" }))
            #expect(await errors.wait(forCount: 2))
            #expect(suite[password] == "first")
            // Then to a good one: read at once.
            try volume.update(["password": "second", "token": "t4"])
            #expect(await recorder.wait(until: { suite[password] == "second" && suite[token] == "t4" }))
            let reasons = errors.errors.map(\.description)
            #expect(reasons.count == 2, "\(reasons)")
            #expect(reasons.first?.contains("a FIFO") == true, "\(reasons)")
            #expect(reasons.last?.contains("a directory") == true, "\(reasons)")
        }
    }

    @Test func aSecretLargerThan64KiBIsRefusedAndOneOf64KiBIsRead() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory)
            let largest = String(repeating: "k", count: 64 * 1024)
            try Data(largest.utf8).write(to: fixture.secrets.appendingPathComponent("key"))
            try Data((largest + "k").utf8).write(to: fixture.secrets.appendingPathComponent("larger"))
            let key = Defaults.Key<String>(secret: "key", suite: fixture.suite)
            let larger = Defaults.Key<String>(secret: "larger", default: "none", suite: fixture.suite)
            #expect(fixture.suite[key] == largest)
            #expect(fixture.suite[larger] == "none")
            #expect(fixture.errors.errors.count == 1)
            #expect(fixture.errors.errors.first?.description.contains("larger than 64 KiB") == true)
            #expect(fixture.errors.errors.first?.description.contains("kkkk") == false)
        }
    }
}
