import Benchmark
import Defaults
import DefaultsServices
import Foundation
import Logging

// MARK: Log level

/// A handler that drops every line, at a fixed level: the call below it is swift-log's own cost.
struct DroppingLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {}
}

/// Issue 34: a log call below the level a key sets costs at most 1.5× the same call below a fixed level.
func logLevel() {
    Benchmark("LogLevel/debug call below a fixed level", configuration: perOperation) { benchmark, logger in
        for _ in benchmark.scaledIterations { logger.value.debug("a line nobody reads") }
    } setup: { () -> Box<Logger> in
        Box(Logger(label: "fixed") { _ in DroppingLogHandler() })
    }

    Benchmark("LogLevel/debug call below a live level (LiveLevelLogHandler)", configuration: perOperation) {
        benchmark,
        logger in
        for _ in benchmark.scaledIterations { logger.value.debug("a line nobody reads") }
    } setup: { () throws -> Box<Logger> in
        let suite = Defaults.Suite(fileURL: Scratch.url("log-level.json"))
        let key = Defaults.Key<Logger.Level>("logLevel", default: .debug, suite: suite)
        suite[key] = .info
        try suite.synchronize()
        let logger = Logger(label: "live") { _ in LiveLevelLogHandler(wrapping: DroppingLogHandler(), level: key) }
        precondition(logger.logLevel == .info)
        return Box(logger)
    }
}

// MARK: Secret read

/// Issue 34: a secret key's read costs what any key's read costs (its file is read once, then the
/// value is read from memory).
func secretRead() {
    Benchmark("SecretRead/String key", configuration: perOperation) { benchmark, fixture in
        let (suite, key) = fixture
        for _ in benchmark.scaledIterations { blackHole(suite[key]) }
    } setup: { () throws -> (Defaults.Suite, Defaults.Key<String>) in
        let suite = Defaults.Suite(fileURL: Scratch.url("secret-read-plain.json"))
        let key = Defaults.Key<String>("password", default: "", suite: suite)
        suite[key] = "correct horse battery staple"
        try suite.synchronize()
        return (suite, key)
    }

    Benchmark("SecretRead/secret String key", configuration: perOperation) { benchmark, fixture in
        let (suite, key) = fixture
        for _ in benchmark.scaledIterations { blackHole(suite[key]) }
    } setup: { () throws -> (Defaults.Suite, Defaults.Key<String>) in
        let directory = Scratch.url("secrets")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data("correct horse battery staple\n".utf8).write(to: directory.appendingPathComponent("password"))
        let suite = Defaults.Suite(fileURL: Scratch.url("secret-read.json"))
        suite.readSecrets(from: directory)
        let key = Defaults.Key<String>(secret: "password", suite: suite)
        precondition(suite[key] == "correct horse battery staple")
        return (suite, key)
    }
}
