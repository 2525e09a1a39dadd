// What stands where a settings file, a system file or a schema should be: a FIFO, a device, a
// socket, a loop of links, a file too large. Each is refused unread and reported once; nothing
// blocks, the suite keeps its values, and the next good file is read at once.
import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct SettingsFileKindTests {
    /// What a test puts where the settings file should be.
    enum Obstacle: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case fifo, endlessDevice, emptyDevice, socket, linkLoop, tooLarge

        var testDescription: String { rawValue }

        func make(at url: URL) throws {
            switch self {
            case .fifo: try makeFIFO(at: url)
            case .endlessDevice:
                try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "/dev/zero")
            case .emptyDevice:
                try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "/dev/null")
            case .socket: try makeSocket(at: url)
            case .linkLoop:
                try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: url.lastPathComponent)
            case .tooLarge:
                // A JSON object a byte over 32 MiB: `{"big": "xxx…"}`.
                var bytes = Data(repeating: UInt8(ascii: "x"), count: 32 * 1024 * 1024 + 1)
                bytes.replaceSubrange(0..<9, with: Array(#"{"big": ""#.utf8))
                bytes.replaceSubrange((bytes.count - 2)..<bytes.count, with: Array(#""}"#.utf8))
                try bytes.write(to: url)
            }
        }

        /// What the report says it is.
        var reported: String {
            switch self {
            case .fifo: "it is a FIFO (a named pipe), not a regular file"
            case .endlessDevice, .emptyDevice: "it is a character device, not a regular file"
            case .socket: "it is a socket, not a regular file"
            case .linkLoop: "a symbolic link on the way leads back to itself"
            case .tooLarge: "it is larger than 32 MiB, the most a settings file may be"
            }
        }
    }

    /// A service opening its suite on `obstacle`: it starts (a FIFO kept it in `open` for ever,
    /// `/dev/zero` was read until memory ran out), reports the file once, and reads defaults.
    @Test(arguments: Obstacle.allCases)
    func aServiceStartsWhateverStandsWhereItsSettingsFileShouldBe(_ obstacle: Obstacle) async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try obstacle.make(at: file)
            defer { releaseFIFO(at: file) }
            let result = try await HelperProcess.run(["secret-service", file.path])
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(result.lines.contains("listening on 8080"), "\(result.output)")
            let reports = result.lines.filter { $0.hasPrefix("error ") }
            #expect(reports.count == 1, "\(reports)")
            #expect(reports.first?.contains(obstacle.reported) == true, "\(reports)")
        }
    }

    @Test func aSuiteOpenedOnAFIFOReadsTheGoodFileThatReplacesItAtOnce() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try makeFIFO(at: file)
            let kept = directory.appendingPathComponent("kept-fifo")
            #expect(link(file.path, kept.path) == 0)
            defer { releaseFIFO(at: kept) }
            let errors = StoreErrorCollector()
            let opened = await returningDespiteFIFOs([file]) { () -> (Defaults.Suite, Int) in
                let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
                return (suite, suite[Defaults.Key<Int>("port", default: 8080, suite: suite)])
            }
            guard let (suite, port) = opened else {
                Issue.record("opening a suite on a FIFO did not return")
                return
            }
            #expect(port == 8080)
            #expect(await errors.wait(forCount: 1))
            #expect(
                errors.errors.first?.description.contains("it is a FIFO (a named pipe), not a regular file") == true
            )
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            let next = directory.appendingPathComponent("next.json")
            try Data(#"{"port": 9090}"#.utf8).write(to: next)
            #expect(rename(next.path, file.path) == 0)
            let key = Defaults.Key<Int>("port", default: 8080, suite: suite)
            #expect(await recorder.wait(until: { suite[key] == 9090 }))
            // Once read, the file is written as usual.
            suite[key] = 9191
            try suite.synchronize()
            #expect(try storeFileObject(file)["port"] as? Int == 9191)
            #expect(errors.errors.count == 1, "\(errors.errors)")
        }
    }

    @Test func aFIFOThatReplacesTheSettingsFileIsReportedOnceAndTheValuesStay() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"port": 9090}"#.utf8))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let port = Defaults.Key<Int>("port", default: 8080, suite: suite)
            #expect(suite[port] == 9090)
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            let fifo = directory.appendingPathComponent("fifo")
            let kept = directory.appendingPathComponent("kept-fifo")
            try makeFIFO(at: fifo)
            #expect(link(fifo.path, kept.path) == 0)
            defer { releaseFIFO(at: kept) }
            #expect(rename(fifo.path, file.path) == 0)
            #expect(await errors.wait(forCount: 1), "the FIFO is reported")
            #expect(errors.errors.first?.description.contains("it is a FIFO") == true, "\(errors.errors)")
            #expect(suite[port] == 9090, "the values stay")
            let next = directory.appendingPathComponent("next.json")
            try Data(#"{"port": 9292}"#.utf8).write(to: next)
            #expect(rename(next.path, file.path) == 0)
            #expect(await recorder.wait(until: { suite[port] == 9292 }), "the next good file is read at once")
            #expect(errors.errors.count == 1, "\(errors.errors)")
        }
    }

    /// An exclusive transaction that finds the pending write failing reports it as every failed
    /// commit is: once while it lasts (each transaction reported it again, where `synchronize()`
    /// and the timer's retries did not).
    @Test func anExclusiveTransactionReportsAFailedCommitOnceWhileItLasts() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"port": 9090}"#.utf8))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let port = Defaults.Key<Int>("port", default: 8080, suite: suite)
            #expect(suite[port] == 9090)
            let staged = directory.appendingPathComponent("staged")
            try Obstacle.emptyDevice.make(at: staged)
            #expect(rename(staged.path, file.path) == 0)
            #expect(await errors.wait(forCount: 1), "the watch reports it")
            suite[port] = 9191
            #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
            for _ in 0..<2 {
                #expect(throws: Defaults.StorageError.self) { try suite.exclusiveTransaction { suite[port] = 9292 } }
            }
            #expect(errors.errors.count == 1, "each call throws it, none reports it again: \(errors.errors)")

            // Mended, so the write is committed and nothing is left to commit.
            let good = directory.appendingPathComponent("good.json")
            try Data(#"{"port": 9090}"#.utf8).write(to: good)
            #expect(rename(good.path, file.path) == 0)
            try suite.synchronize()
            #expect(try storeFileObject(file)["port"] as? Int == 9191)
        }
    }

    /// A `migrate()` whose record cannot be written reports it once while it lasts, as a
    /// `synchronize()` does; each call throws it.
    ///
    /// Probe finding (this stop's black-box probe, F1): with a directory where the settings file
    /// should be, each `migrate()` reported the same "renaming into place: Is a directory" again.
    @Test func aMigrationThatCannotWriteReportsTheFailureOnceWhileItLasts() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let retiring = [Defaults.Migration.retiring(["legacyMode"])]
            #expect(throws: Defaults.StorageError.self) { try suite.migrate(retiring) }
            let reported = errors.errors.count
            #expect(reported >= 1, "the first failure is reported")
            for _ in 0..<2 {
                #expect(throws: Defaults.StorageError.self) { try suite.migrate(retiring) }
            }
            #expect(throws: Defaults.StorageError.self) { try suite.exclusiveTransaction { suite.removeAll() } }
            #expect(errors.errors.count == reported, "each call throws it, none reports it again: \(errors.errors)")

            // Mended: the migration runs; a failure after that success is news again.
            try FileManager.default.removeItem(at: file)
            try suite.migrate(retiring)
            #expect(suite.appliedMigrations.contains(retiring[0].id))
            try FileManager.default.removeItem(at: file)
            try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
            #expect(throws: Defaults.StorageError.self) {
                try suite.migrate([.retiring(["betaFeatures"])])
            }
            #expect(errors.errors.count > reported, "reported again after a success: \(errors.errors)")
        }
    }

    /// A write waiting behind a FIFO or a device is reported once while it stays, though each try fails.
    ///
    /// Probe finding 2: with a write waiting behind a FIFO (or a device) put in place of the file,
    /// the same "cannot read … it is a FIFO" was reported at every try of its commit — the timer's
    /// retries at 0.05, 0.5, 1, 2, 4 and 8 s, and each `synchronize()` — seven times in 20 s.
    /// Once while it lasts; again when it changes, or when it went away and came back.
    @Test(arguments: [Obstacle.fifo, .emptyDevice])
    func aWriteWaitingBehindAFileOfAnotherKindIsReportedOnceThoughItsCommitIsRetried(
        _ obstacle: Obstacle
    ) async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"port": 9090}"#.utf8))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let port = Defaults.Key<Int>("port", default: 8080, suite: suite)
            #expect(suite[port] == 9090)
            let retries = EventLog<Int>()
            let observation = Defaults.observeActivity { seen, activity in
                if seen == suite, activity == .retryingCommit { retries.append(1) }
            }
            defer { observation.cancel() }
            /// Puts `obstacle` in place of the file by rename, as an editor or a deployment would.
            func replaceFile(with obstacle: Obstacle, named name: String) throws {
                let staged = directory.appendingPathComponent(name)
                try obstacle.make(at: staged)
                // A second name for a FIFO, released at the end.
                #expect(link(staged.path, directory.appendingPathComponent("kept-" + name).path) == 0)
                #expect(rename(staged.path, file.path) == 0)
            }
            defer {
                for name in ["first", "again", "changed"] {
                    releaseFIFO(at: directory.appendingPathComponent("kept-" + name))
                }
            }

            try replaceFile(with: obstacle, named: "first")
            #expect(await errors.wait(forCount: 1), "the watch reports it")
            suite[port] = 9191
            for _ in 0..<3 { #expect(throws: Defaults.StorageError.self) { try suite.synchronize() } }
            #expect(errors.errors.count == 1, "each synchronize() throws it, none reports it again: \(errors.errors)")
            // The calls after the first, then the timer's retries: each fails the same way. A
            // report of one is sent before the next retry starts.
            #expect(await retries.wait(forCount: 5))
            #expect(errors.errors.count == 1, "the timer's retries report nothing new: \(errors.errors)")
            #expect(suite[port] == 9191, "the write waits in memory")

            // It goes away: the write is committed, and the problem is over.
            let good = directory.appendingPathComponent("good.json")
            try Data(#"{"port": 9090}"#.utf8).write(to: good)
            #expect(rename(good.path, file.path) == 0)
            try suite.synchronize()
            #expect(try storeFileObject(file)["port"] as? Int == 9191)

            // It comes back: reported again, once.
            try replaceFile(with: obstacle, named: "again")
            #expect(await errors.wait(forCount: 2), "back again, it is reported again")
            suite[port] = 9292
            #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
            #expect(errors.errors.count == 2, "\(errors.errors)")

            // Another obstacle in its place is another problem: reported by the next try (this
            // call's, or a retry of the timer's just before it).
            let other: Obstacle = obstacle == .fifo ? .socket : .fifo
            try replaceFile(with: other, named: "changed")
            #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
            #expect(await errors.wait(forCount: 3), "\(errors.errors)")
            #expect(errors.errors.last?.description.contains(other.reported) == true, "\(errors.errors)")
            #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
            #expect(errors.errors.count == 3, "\(errors.errors)")
            #expect(suite[port] == 9292)
        }
    }

    @Test func aSystemFileThatIsAFIFOIsReportedAndTheSuiteOpens() async throws {
        try await withTemporaryDirectory { directory in
            let system = directory.appendingPathComponent("system.json")
            try makeFIFO(at: system)
            defer { releaseFIFO(at: system) }
            let errors = StoreErrorCollector()
            let port = await returningDespiteFIFOs([system]) { () -> Int in
                let suite = Defaults.Suite(
                    fileURL: storeSettingsURL(in: directory),
                    systemFiles: [system],
                    errorHandler: errors.handler
                )
                return suite[Defaults.Key<Int>("port", default: 8080, suite: suite)]
            }
            #expect(port == 8080, "the suite opened")
            #expect(await errors.wait(forCount: 1))
            #expect(errors.errors.first?.description.contains("it is a FIFO") == true, "\(errors.errors)")
        }
    }

    @Test func aFIFOInPlaceOfTheLockFileFailsAWriteWithoutWaiting() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let lock = URL(fileURLWithPath: file.path + ".lock")
            try makeFIFO(at: lock)
            defer { releaseFIFO(at: lock) }
            let failure = await returningDespiteFIFOs([lock]) { () -> String? in
                let suite = Defaults.Suite(fileURL: file) { _ in }
                suite[Defaults.Key<Int>("port", default: 8080, suite: suite)] = 9090
                do {
                    try suite.synchronize()
                    return nil
                } catch {
                    return "\(error)"
                }
            }
            #expect(
                failure??.contains("opening the lock file: it is a FIFO (a named pipe), not a regular file") == true
            )
        }
    }

    @Test func aSchemaPublishedOverAFIFOReplacesItWithoutWaiting() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let schema = Defaults.Suite.schemaFileURL(forSettingsFile: file)
            try makeFIFO(at: schema)
            defer { releaseFIFO(at: schema) }
            let published = await returningDespiteFIFOs([schema]) { () -> Bool in
                let suite = Defaults.Suite(fileURL: file)
                return (try? suite.publishSchema(for: Defaults.Key<Int>("port", default: 8080, suite: suite))) != nil
            }
            #expect(published == true)
            var info = stat()
            #expect(lstat(schema.path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG, "a regular file now")
        }
    }
}
