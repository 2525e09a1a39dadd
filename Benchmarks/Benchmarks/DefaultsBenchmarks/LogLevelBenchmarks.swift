import Benchmark
import Defaults
import DefaultsServices
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
