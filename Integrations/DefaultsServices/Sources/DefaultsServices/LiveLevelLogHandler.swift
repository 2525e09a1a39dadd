import Defaults
import DefaultsObservation
import Logging
import Synchronization

// Stored as its name, `"debug"`, so `defaults write myservice logLevel '"debug"'` sets it.
extension Logger.Level: @retroactive Defaults.Serializable, @retroactive Defaults.PreferRawRepresentable {}

/// A log handler whose level is a setting: writing the key (`defaults write`, `etcdctl put`, a
/// hand edit of the file) turns debug logging on or off in the running service, no restart.
///
/// ```swift
/// extension Defaults.Keys {
///     static let logLevel = Key<Logger.Level>("logLevel", default: .info)
/// }
/// LoggingSystem.bootstrap { label in
///     LiveLevelLogHandler(wrapping: StreamLogHandler.standardOutput(label: label), level: .logLevel)
/// }
/// ```
///
/// While the key gives a level (stored, or a launch argument or environment variable for this run),
/// that level is the logger's, as the live override in swift-log's `LogHandler` documentation is;
/// when it gives none (nothing set, or a value that is not a level's name), the level is the
/// logger's own (the key's default, until code sets `logLevel`). A log call pays one atomic load for it: an
/// observation of the key keeps the level up to date as changes arrive, so no call reads the
/// settings.
public struct LiveLevelLogHandler: LogHandler {
    private var wrapped: any LogHandler
    private let live: LiveLevel
    private var ownLevel: Logger.Level

    /// A handler that logs through `handler`, at the level `key` holds.
    ///
    /// - Parameters:
    ///   - handler: Where the lines go; its own level is not consulted.
    ///   - key: The setting that holds the level, in its suite.
    public init(wrapping handler: any LogHandler, level key: Defaults.Key<Logger.Level>) {
        self.init(wrapping: handler, level: key, onUpdate: nil)
    }

    /// As ``init(wrapping:level:)``; `onUpdate` is told each level the key brings (for tests).
    init(
        wrapping handler: any LogHandler,
        level key: Defaults.Key<Logger.Level>,
        onUpdate: (@Sendable (Logger.Level?) -> Void)?
    ) {
        self.wrapped = handler
        self.live = LiveLevel(key, onUpdate: onUpdate)
        self.ownLevel = key.defaultValue
    }

    /// The key's stored level, or else this logger's own; setting it sets this logger's own.
    public var logLevel: Logger.Level {
        get { live.level ?? ownLevel }
        set { ownLevel = newValue }
    }

    /// The wrapped handler's metadata.
    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    /// The wrapped handler's metadata provider.
    public var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    /// One metadata value of the wrapped handler.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    /// Hands `event` to the wrapped handler (the logger has checked the level already).
    public func log(event: LogEvent) {
        wrapped.log(event: event)
    }
}

/// The level a key holds, kept in an atomic by an observation of the key; shared by every copy
/// of a handler.
final class LiveLevel: Sendable {
    /// 0 when the key holds no stored value, else the level's index among `Logger.Level.allCases` + 1.
    private let cell: Cell
    private let observation: Defaults.Observation

    final class Cell: Sendable {
        let raw = Atomic<UInt8>(0)
    }

    init(_ key: Defaults.Key<Logger.Level>, onUpdate: (@Sendable (Logger.Level?) -> Void)?) {
        let cell = Cell()
        self.cell = cell
        let suite = key.suite
        // What the key gives now, launch arguments and the environment included; `nil` when it
        // reads its default because nothing (valid) sets it.
        let current: @Sendable () -> Logger.Level? = {
            if case .defaultValue = suite.source(of: key) { return nil }
            return suite[key]
        }
        // `.initial`: the level the suite holds now is in place before the first log call.
        observation = Defaults.observe(key, options: [.initial]) { _ in
            // Read from the suite, and again after storing: a slower delivery of an older change
            // never leaves its level behind.
            var level = current()
            while true {
                cell.raw.store(Self.raw(level), ordering: .releasing)
                let now = current()
                if now == level { break }
                level = now
            }
            onUpdate?(level)
        }
    }

    private static func raw(_ level: Logger.Level?) -> UInt8 {
        level.map { UInt8(Logger.Level.allCases.firstIndex(of: $0)! + 1) } ?? 0
    }

    /// The key's stored level; `nil` when it holds none.
    var level: Logger.Level? {
        let raw = cell.raw.load(ordering: .acquiring)
        return raw == 0 ? nil : Logger.Level.allCases[Int(raw) - 1]
    }
}
