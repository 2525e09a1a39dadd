import Configuration
import Defaults
import DefaultsObservation

/// A swift-configuration provider that reads a `Defaults` suite, and tells watchers of every change
/// the moment the suite commits or sees it, with no polling.
///
/// Put it in a `ConfigReader`'s hierarchy like any other provider; the providers before it win:
///
/// ```swift
/// let suite = try Defaults.Suite(name: "my-service")
/// let config = ConfigReader(providers: [
///     CommandLineArgumentsProvider(),
///     EnvironmentVariablesProvider(),
///     DefaultsProvider(suite: suite),
/// ])
/// let port = config.int(forKey: "http.port", default: 8080)
/// ```
///
/// **Keys.** A config key such as `http.port` names the suite's top-level key `"http.port"`; when
/// there is none, it walks nested JSON objects, `{"http": {"port": 8080}}` (see ``KeyMapping``,
/// which also takes a mapping of your own).
///
/// **Values.** Each stored JSON value converts to the requested `ConfigType` exactly as
/// swift-configuration's `JSONSnapshot` converts the same JSON in a file: numbers to `int` when
/// they are whole, `bool` from any number (zero is false), `bytes` from base64 text (which is how a
/// suite stores `Data`), arrays of one kind of element. A value that cannot convert is an error
/// thrown from the lookup (``DefaultsProviderError``), for that key only; `null`, an object and a
/// missing key are all "no value", so the next provider or the default answers.
///
/// **Live.** ``watchValue(forKey:type:updatesHandler:)`` and
/// ``watchSnapshot(updatesHandler:)`` are driven by the suite's change events: a write in this
/// process reaches the watcher's stream before the write returns; a write by another process (the
/// `defaults` command, another service) or an edit of the file, as soon as the suite's file watcher
/// has read it, within milliseconds. Nothing polls; there is no service to run. A value watcher is
/// told only when its own value (or its error) changes; a snapshot watcher gets one snapshot per
/// committed change.
///
/// **Consistency.** A snapshot is one state of the suite: every key as it was at one instant, with
/// a transaction either wholly in it or not at all.
///
/// What the provider reads is the stored JSON: a key's default declared with `Defaults.Key`, and
/// values given to the suite for one run by its launch-argument or environment overrides, are not
/// seen (swift-configuration's own command-line and environment providers do that job).
public struct DefaultsProvider: Sendable {
    /// The suite read by this provider.
    public let suite: Defaults.Suite

    /// How config keys find stored values.
    public let keyMapping: KeyMapping

    /// `DefaultsProvider[<name>]`, where the name is the one given, or the suite's file.
    ///
    /// Made once: a `ConfigReader` asks for it on every lookup.
    public let providerName: String

    /// The options that turn stored values into config values.
    let conversion: ValueConversion

    /// Creates a provider over `suite`.
    ///
    /// - Parameters:
    ///   - suite: The suite to read and watch.
    ///   - keyMapping: How a config key finds its stored value; ``KeyMapping/dotted`` by default.
    ///   - bytesDecoder: How text becomes bytes for `bytes` and `byteChunkArray` lookups; base64 by
    ///     default, which reads a stored `Data` value.
    ///   - secretsSpecifier: Which values are secrets (redacted in access logs), by the config key
    ///     joined with `.` and the stored JSON.
    ///   - name: A name for this provider in `providerName`, for logs; the suite's file by default.
    public init(
        suite: Defaults.Suite,
        keyMapping: KeyMapping = .dotted,
        bytesDecoder: some ConfigBytesFromStringDecoder = .base64,
        secretsSpecifier: SecretsSpecifier<String, Defaults.JSONValue> = .none,
        name: String? = nil
    ) {
        self.suite = suite
        self.keyMapping = keyMapping
        self.conversion = ValueConversion(bytesDecoder: bytesDecoder, secretsSpecifier: secretsSpecifier)
        self.providerName = "DefaultsProvider[\(name ?? suite.fileURL?.path ?? suite.description)]"
    }

    /// The stored-key names whose changes can change the value of `key`: each path's first
    /// element, and its first elements joined with `.` (a secret's name stands for them).
    func watchedNames(for key: AbsoluteConfigKey) -> [String] {
        var names: [String] = []
        for path in keyMapping.paths(for: key) {
            // A suite key cannot have an empty name (creating such a `Defaults.Key` traps).
            guard let first = path.first, !first.isEmpty else { continue }
            var joined = first
            if !names.contains(joined) { names.append(joined) }
            for element in path.dropFirst() {
                joined += "." + element
                if !names.contains(joined) { names.append(joined) }
            }
        }
        return names
    }
}

extension DefaultsProvider: ConfigProvider {
    /// The value of `key` as `type`, read from the suite now.
    ///
    /// - Parameters:
    ///   - key: The config key.
    ///   - type: The type wanted.
    /// - Returns: The value, or a result with no value when nothing usable is stored.
    /// - Throws: ``DefaultsProviderError`` when the stored value cannot be read as `type`.
    public func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        let joined = key.components.joined(separator: ".")
        // A secret key's value is marked secret whatever the specifier says.
        let found = keyMapping.resolve(
            key,
            joined: joined,
            read: { suite.storedValue(named: $0) },
            isSecret: { suite.isSecret(named: $0) }
        )
        return try conversion.lookup(found.value, encodedKey: joined, type: type, isSecretKey: found.isSecret)
    }

    /// The same as ``value(forKey:type:)``: the suite has everything in memory, and a change made
    /// elsewhere is read as soon as it happens, so there is nothing to fetch.
    ///
    /// - Parameters:
    ///   - key: The config key.
    ///   - type: The type wanted.
    /// - Returns: The value, or a result with no value when nothing usable is stored.
    /// - Throws: ``DefaultsProviderError`` when the stored value cannot be read as `type`.
    public func fetchValue(forKey key: AbsoluteConfigKey, type: ConfigType) async throws -> LookupResult {
        try value(forKey: key, type: type)
    }

    /// Calls `updatesHandler` with the value of `key` now, then again each time it changes, for as
    /// long as the handler runs.
    ///
    /// The sequence starts with the current value (or its error). After that, an element comes for
    /// each committed change that changes this key's value or error: a write in this process, a
    /// write by another process, an edit of the file. Writes to other keys are not elements. The
    /// sequence keeps only the newest element for a consumer that falls behind.
    ///
    /// - Parameters:
    ///   - key: The config key.
    ///   - type: The type wanted.
    ///   - updatesHandler: Reads the updates; watching stops when it returns.
    /// - Returns: What `updatesHandler` returns.
    /// - Throws: What `updatesHandler` throws.
    public func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey,
        type: ConfigType,
        updatesHandler: (
            _ updates: ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>
        ) async throws -> Return
    ) async throws -> Return {
        let (stream, continuation) = AsyncStream<Result<LookupResult, any Error>>
            .makeStream(bufferingPolicy: .bufferingNewest(1))
        let watcher = ValueWatcher(continuation: continuation) {
            Result { try self.value(forKey: key, type: type) }
        }
        let keys = watchedNames(for: key)
            .map { Defaults.Key<Defaults.AnySerializable>($0, default: nil, suite: suite) }
        // Subscribed before the first read, so no change falls between the two.
        let observation = keys.isEmpty ? nil : Defaults.observe(keys: keys, options: []) { watcher.refresh() }
        watcher.refresh()
        defer {
            observation?.invalidate()
            continuation.finish()
        }
        return try await updatesHandler(ConfigUpdatesAsyncSequence(stream))
    }

    /// One state of the suite, to read any number of keys from consistently.
    ///
    /// - Returns: A ``DefaultsSnapshot`` of the suite as it is now.
    public func snapshot() -> any ConfigSnapshot {
        currentSnapshot()
    }

    /// Calls `updatesHandler` with a snapshot of the suite now, then with a new one after each
    /// committed change to any of its keys, for as long as the handler runs.
    ///
    /// A transaction, a burst written by another process and read in one go, or an edited file is
    /// one snapshot. The sequence keeps only the newest snapshot for a consumer that falls behind.
    ///
    /// - Parameter updatesHandler: Reads the updates; watching stops when it returns.
    /// - Returns: What `updatesHandler` returns.
    /// - Throws: What `updatesHandler` throws.
    public func watchSnapshot<Return: ~Copyable>(
        updatesHandler: (_ updates: ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>) async throws -> Return
    ) async throws -> Return {
        let (stream, continuation) = AsyncStream<any ConfigSnapshot>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let watcher = SnapshotWatcher(continuation: continuation) { self.currentSnapshot() }
        // Subscribed before the first snapshot, so no change falls between the two.
        let observation = Defaults.observe(suite: suite, options: []) { watcher.refresh() }
        watcher.refresh()
        defer {
            observation.invalidate()
            continuation.finish()
        }
        return try await updatesHandler(ConfigUpdatesAsyncSequence(stream))
    }

    private func currentSnapshot() -> DefaultsSnapshot {
        let suite = suite
        return DefaultsSnapshot(
            storedValues: suite.storedValues(),
            // Asked of the suite: a secret without a file has no value, and its name still
            // answers nothing else. A key made secret later is a secret in older snapshots too.
            isSecret: { suite.isSecret(named: $0) },
            keyMapping: keyMapping,
            conversion: conversion,
            providerName: providerName
        )
    }
}

extension DefaultsProvider: CustomStringConvertible {
    /// The provider's name.
    public var description: String { providerName }
}
