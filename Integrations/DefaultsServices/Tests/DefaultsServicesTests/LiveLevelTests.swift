// The live log level: the repository's `defaults` command, a process of its own, writes the key
// into a real file; the running handler follows it through the suite's watch of the file.
import Defaults
// @testable: is called back with each level the handler takes in
// (`LiveLevelLogHandler.init(wrapping:level:onUpdate:)`), to wait without polling.
@testable import DefaultsServices
import Foundation
import InMemoryLogging
import Logging
import Synchronization
import Testing

@Suite struct LiveLevelTests {
    /// The levels the handler's observation has taken in, to await one without polling.
    final class Levels: Sendable {
        private typealias Waiter = (level: Logger.Level?, continuation: CheckedContinuation<Bool, Never>)
        private let state = Mutex<(seen: [Logger.Level?], waiter: Waiter?)>(([], nil))

        func append(_ level: Logger.Level?) {
            let ready = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                state.seen.append(level)
                guard let waiter = state.waiter, waiter.level == level else { return nil }
                state.waiter = nil
                return waiter.continuation
            }
            ready?.resume(returning: true)
        }

        /// Returns once the handler took in `level` (at once if it was the last one it took in),
        /// or after 60 s, recording an issue: a change that never arrives fails instead of hanging.
        func wait(for level: Logger.Level?) async {
            let arrived = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let done = state.withLock { state in
                    if state.seen.last == level { return true }
                    state.waiter = (level, continuation)
                    return false
                }
                if done { continuation.resume(returning: true) }
                DispatchQueue.global()
                    .asyncAfter(deadline: .now() + .seconds(60)) { [self] in
                        let expired = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                            guard let waiter = state.waiter, waiter.level == level else { return nil }
                            state.waiter = nil
                            return waiter.continuation
                        }
                        expired?.resume(returning: false)
                    }
            }
            #expect(arrived, "the handler did not take in \(String(describing: level)) within 60 s")
        }
    }

    /// Runs the `defaults` command built beside these tests, and waits for it to exit.
    func defaults(_ arguments: String...) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("defaults")
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    @Test func aWriteFromAnotherProcessTurnsDebugLinesOnAndOff() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("LiveLevelTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("settings.json")
        let suite = Defaults.Suite(fileURL: file)
        let key = Defaults.Key<Logger.Level>("logLevel", default: .info, suite: suite)
        let levels = Levels()
        var lines = InMemoryLogHandler()
        lines.logLevel = .trace
        let logger = Logger(label: "service") { _ in
            LiveLevelLogHandler(wrapping: lines, level: key, onUpdate: levels.append)
        }
        logger.debug("hidden")
        logger.info("shown")

        #expect(try defaults("write", file.path, "logLevel", #""debug""#) == 0)
        await levels.wait(for: .debug)
        #expect(logger.logLevel == .debug)
        logger.debug("now shown")
        #expect(try String(contentsOf: file, encoding: .utf8).contains(#""logLevel" : "debug""#))

        #expect(try defaults("write", file.path, "logLevel", #""info""#) == 0)
        await levels.wait(for: .info)
        logger.debug("hidden again")

        // Removed: the logger's own level (the key's default) again.
        #expect(try defaults("delete", file.path, "logLevel") == 0)
        await levels.wait(for: nil)
        #expect(logger.logLevel == .info)
        logger.debug("hidden once more")

        #expect(lines.entries.map(\.message.description) == ["shown", "now shown"])
    }

    @Test func theKeysStoredLevelWinsOverTheLoggersOwn() throws {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Logger.Level>("logLevel", default: .info, suite: suite)
        var logger = Logger(label: "service") { _ in
            LiveLevelLogHandler(wrapping: InMemoryLogHandler(), level: key)
        }
        logger.logLevel = .error
        #expect(logger.logLevel == .error)
        // A local write is delivered before it returns.
        suite[key] = .trace
        #expect(logger.logLevel == .trace)
        suite.setStoredValues(["logLevel": nil])
        #expect(logger.logLevel == .error)
        // A value that is not a level is kept out: the logger's own level stays.
        suite.setStoredValues(["logLevel": .string("loud")])
        #expect(logger.logLevel == .error)
        #expect(suite.storedValue(named: "logLevel") == .string("loud"))
    }
}
