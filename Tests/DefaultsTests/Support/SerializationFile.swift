import Defaults
import DefaultsTestSupport
import Foundation
import Synchronization
import Testing

/// Collects what suites report to their error handler, so a test can check that nothing went wrong.
final class SerializationErrorLog: Sendable {
    private let reported = Lock<[Defaults.StorageError]>([])

    /// Everything reported so far, oldest first.
    var errors: [Defaults.StorageError] { reported.withLock { $0 } }

    /// A handler to give a suite.
    var handler: @Sendable (Defaults.StorageError) -> Void {
        { [self] error in reported.withLock { $0.append(error) } }
    }

    /// The keys named by `.serializationFailed` reports.
    var keysThatFailedToSerialize: [String] {
        errors.compactMap { error in
            guard case .serializationFailed(let key, _) = error else { return nil }
            return key
        }
    }
}

/// A settings file in a temporary directory of its own, and the suites opened on it.
final class SerializationFile: Sendable {
    /// The file's location; it does not exist until a suite writes it.
    let url: URL
    /// Where every suite made by ``makeSuite()`` reports problems.
    let errors: SerializationErrorLog
    /// Every suite made on this file and on its copies.
    private let suites: Lock<[Defaults.Suite]>

    init(url: URL) {
        self.url = url
        self.errors = SerializationErrorLog()
        self.suites = Lock([])
    }

    private init(url: URL, errors: SerializationErrorLog) {
        self.url = url
        self.errors = errors
        self.suites = Lock([])
    }

    /// Opens a suite on the file.
    ///
    /// Suites on one file share one state in this process: a second one
    /// sees what the first holds in memory, whatever the file says.
    func makeSuite() -> Defaults.Suite {
        let suite = Defaults.Suite(fileURL: url, errorHandler: errors.handler)
        suites.withLock { $0.append(suite) }
        return suite
    }

    /// A copy of the file as it is now, in a new directory beside it.
    ///
    /// A suite opened on the copy reads what went through the file, nothing else. Its suites report to the same log.
    func copy() throws -> SerializationFile {
        let copy = url.deletingLastPathComponent()
            .appendingPathComponent("copy-\(UUID().uuidString)", isDirectory: true)
            .appendingPathComponent(url.lastPathComponent, isDirectory: false)
        try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: url, to: copy)
        let file = SerializationFile(url: copy, errors: errors)
        copies.withLock { $0.append(file) }
        return file
    }

    private let copies = Lock<[SerializationFile]>([])

    /// Opens a suite on a copy of the file as it is now (see ``copy()``).
    func makeReader() throws -> Defaults.Suite {
        try copy().makeSuite()
    }

    /// The file's bytes.
    func bytes() throws -> [UInt8] {
        Array(try Data(contentsOf: url))
    }

    /// The file's text.
    func text() throws -> String {
        String(decoding: try bytes(), as: UTF8.self)
    }

    /// The file's top-level members, parsed.
    func members() throws -> [String: JSONValue] {
        guard case .object(let members) = try JSONValue(parsing: try bytes()) else {
            Issue.record("the settings file is not a JSON object")
            return [:]
        }
        return members
    }

    /// Flushes every suite made on the file, so none writes after the directory is gone.
    fileprivate func synchronizeAll() {
        for suite in suites.withLock({ $0 }) {
            try? suite.synchronize()
        }
        for copy in copies.withLock({ $0 }) { copy.synchronizeAll() }
    }
}

extension SerializationFile {
    /// A settings file in a new temporary directory, which ``removeDirectory()`` removes.
    fileprivate static func inNewDirectory() throws -> SerializationFile {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("defaults-serialization-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return SerializationFile(url: directory.appendingPathComponent("settings.json", isDirectory: false))
    }

    /// Flushes every suite on the file, then removes its directory.
    fileprivate func removeDirectory() {
        synchronizeAll()
        try? FileManager.default.removeItem(at: url.deletingLastPathComponent())
    }
}

/// Runs `body` with a settings file in a new temporary directory, removed when `body` returns.
func withSerializationFile<Result>(_ body: (SerializationFile) throws -> Result) throws -> Result {
    let file = try SerializationFile.inNewDirectory()
    defer { file.removeDirectory() }
    return try body(file)
}

/// ``withSerializationFile(_:)`` for an `async` body.
func withSerializationFileAsync<Result>(_ body: (SerializationFile) async throws -> Result) async throws -> Result {
    let file = try SerializationFile.inNewDirectory()
    defer { file.removeDirectory() }
    return try await body(file)
}

/// A value after a trip through a real file.
struct SerializationRoundTrip<Value> {
    /// The value read back by the suite that wrote it.
    var writerValue: Value
    /// The value read by a suite opened afterwards on a copy of the file.
    var value: Value
    /// What the file holds under the key, parsed; `nil` when the key is absent.
    var stored: JSONValue?
    /// The whole file.
    var text: String
    /// What the suites reported.
    var errors: [Defaults.StorageError]
}

/// Writes `value` under `name` with one suite, synchronizes, and reads it with a suite on a copy of the file.
func serializationRoundTrip<Value: Defaults.Serializable>(
    _ value: Value,
    default defaultValue: Value,
    name: String = "value"
) throws -> SerializationRoundTrip<Value> {
    try withSerializationFile { file in
        let writer = file.makeSuite()
        writer[Defaults.Key<Value>(name, default: defaultValue, suite: writer)] = value
        let writerValue = writer[Defaults.Key<Value>(name, default: defaultValue, suite: writer)]
        try writer.synchronize()
        let reader = try file.makeReader()
        return SerializationRoundTrip(
            writerValue: writerValue,
            value: reader[Defaults.Key<Value>(name, default: defaultValue, suite: reader)],
            stored: try file.members()[name],
            text: try file.text(),
            errors: file.errors.errors
        )
    }
}

/// Many values written to one file under keys of their own, then read back by a suite on a copy;
/// the file checked against the schema the suite publishes for those keys; and the same values
/// written to a `UserDefaults` (named by a path in a temporary folder) and read back by a second
/// suite on it.
///
/// One ``expectLossless(_:default:storedAs:sourceLocation:)`` line therefore holds a type to
/// everything a built-in type promises: its JSON, its schema, its `UserDefaults` layout. Each check
/// runs against the value the new suite reads and what the file holds under its key, and reports
/// failures at the line that added it.
struct SerializationBatch {
    private struct Entry {
        var key: (Defaults.Suite) -> Defaults.Keys
        var write: (Defaults.Suite) -> Void
        var verify: (Defaults.Suite, JSONValue?) -> Void
        var sourceLocation: SourceLocation
    }

    private var entries: [Entry] = []

    /// Adds `value`, to be checked with `check(readBack, storedJSON)`.
    mutating func add<Value: Defaults.Serializable>(
        _ value: Value,
        default defaultValue: Value,
        sourceLocation: SourceLocation = #_sourceLocation,
        check: @escaping (Value, JSONValue?) -> Void
    ) {
        let name = "value-\(entries.count)"
        entries.append(
            Entry(
                key: { suite in Defaults.Key<Value>(name, default: defaultValue, suite: suite) },
                write: { suite in suite[Defaults.Key<Value>(name, default: defaultValue, suite: suite)] = value },
                verify: { suite, stored in
                    check(suite[Defaults.Key<Value>(name, default: defaultValue, suite: suite)], stored)
                },
                sourceLocation: sourceLocation
            )
        )
    }

    /// Adds `value`, expected to read back equal, and stored as `json` when that is given.
    mutating func expectLossless<Value: Defaults.Serializable & Equatable>(
        _ value: Value,
        default defaultValue: Value,
        storedAs json: JSONValue? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        add(value, default: defaultValue, sourceLocation: sourceLocation) { readBack, stored in
            #expect(readBack == value, sourceLocation: sourceLocation)
            if let json {
                #expect(stored == json, sourceLocation: sourceLocation)
            }
        }
    }

    /// Writes every value with one suite, synchronizes, and runs the checks against a suite on a
    /// copy; validates the file against the schema the writer publishes for the keys; then writes
    /// every value to a `UserDefaults` and runs the checks against a second suite on it.
    func run(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let (members, schemaFailures) = try await withSerializationFileAsync { file in
            let writer = file.makeSuite()
            for entry in entries { entry.write(writer) }
            try writer.synchronize()
            let reader = try file.makeReader()
            let members = try file.members()
            #expect(members.count == entries.count, sourceLocation: sourceLocation)
            for (index, entry) in entries.enumerated() {
                entry.verify(reader, members["value-\(index)"])
            }
            #expect(file.errors.errors.isEmpty, "\(file.errors.errors)", sourceLocation: sourceLocation)
            try writer.publishSchema(for: entries.map { $0.key(writer) })
            let schema = try #require(writer.schemaFileURL)
            return (members, try await SchemaValidator.failures(of: [file.url], against: schema))
        }
        for failure in schemaFailures {
            let index = Int(failure.key.dropFirst("value-".count)) ?? -1
            let location = entries.indices.contains(index) ? entries[index].sourceLocation : sourceLocation
            Issue.record("the file breaks its schema: \(failure.key): \(failure.message)", sourceLocation: location)
        }
        try await withSerializationUserDefaults { userDefaults in
            let writer = Defaults.Suite(userDefaults: userDefaults)
            for entry in entries { entry.write(writer) }
            let reader = Defaults.Suite(userDefaults: userDefaults)
            // The file's JSON is what each check compares to: a `UserDefaults` holds no JSON.
            for (index, entry) in entries.enumerated() {
                entry.verify(reader, members["value-\(index)"])
            }
        }
    }
}

/// Runs `body` with a `UserDefaults` whose property list is in a new temporary folder, removed
/// when `body` returns.
func withSerializationUserDefaults<Result>(
    _ body: (UserDefaults) async throws -> Result
) async throws -> Result {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("defaults-serialization-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    // An absolute suite name is the file's path without ".plist": in the temporary folder.
    let userDefaults = try #require(UserDefaults(suiteName: directory.appendingPathComponent("prefs").path))
    // Written before the folder goes (defers run last first).
    defer { userDefaults.synchronize() }
    return try await body(userDefaults)
}
