// Helpers for the store-behaviour tests: temporary directories, error and change collectors,
// file inspection and plain threads.
import Defaults
import DefaultsTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The stored JSON value, by its short name in these tests.
typealias JSONValue = Defaults.JSONValue

// MARK: - Temporary directories

/// Runs `body` with a fresh, empty directory under the system temporary directory, and removes the
/// directory and everything in it afterwards.
func withStoreTemporaryDirectory<Result>(_ body: (URL) throws -> Result) throws -> Result {
    try withTemporaryDirectory(prefix: "DefaultsStoreTests", body)
}

/// The settings file a test suite uses inside `directory`.
func storeSettingsURL(in directory: URL) -> URL {
    directory.appendingPathComponent("settings.json", isDirectory: false)
}

// MARK: - Errors

/// Collects what a suite reports to its error handler.
final class StoreErrorCollector: Sendable {
    private let collected = EventLog<Defaults.StorageError>()

    /// The errors reported so far, oldest first.
    var errors: [Defaults.StorageError] { collected.all }

    /// A handler to pass to `Defaults.Suite(fileURL:errorHandler:)`.
    var handler: @Sendable (Defaults.StorageError) -> Void {
        { [self] error in self.collected.append(error) }
    }

    /// Waits until `count` reports came; `false` if they did not come for implausibly long.
    func wait(forCount count: Int) async -> Bool {
        await collected.wait(forCount: count)
    }

    /// The first report, waiting for it if none came yet; `nil` if none came for implausibly long.
    func waitForReport() async -> Defaults.StorageError? {
        guard await collected.wait(forCount: 1) else { return nil }
        return collected.all.first
    }

    /// The `corruptFile` reports: the file, where it went, and why.
    var corruptFileReports: [(url: URL, movedTo: URL, reason: String)] {
        errors.compactMap { error in
            guard case .corruptFile(let url, let movedTo, let reason) = error else { return nil }
            return (url, movedTo, reason)
        }
    }

    /// The `writeFailed` reports: the file and why.
    var writeFailedReports: [(url: URL, reason: String)] {
        errors.compactMap { error in
            guard case .writeFailed(let url, let reason) = error else { return nil }
            return (url, reason)
        }
    }
}

// MARK: - Change events

/// Collects the change events of one suite from the core's change sinks.
///
/// Tests run in parallel, so a single routing sink is added once (and never removed) and hands each
/// event to the recorders of its suite (of its file: suites on one file share their events).
final class StoreChangeRecorder: Sendable {
    /// The suite whose events are recorded.
    let suite: Defaults.Suite
    private let log = EventLog<StoreDeliveredEvent>()

    /// Starts recording the events of `suite`; call ``stop()`` when done.
    init(_ suite: Defaults.Suite) {
        self.suite = suite
        StoreChangeRouter.register(log, for: suite)
        StoreChangeRouter.ensureInstalled()
    }

    /// Stops recording.
    func stop() {
        StoreChangeRouter.unregister(log, for: suite)
    }

    /// The events recorded so far, in the order they were delivered.
    var events: [Defaults.SuiteChange] { deliveries.map(\.event) }

    /// The events recorded so far, with where on the stack each was delivered.
    var deliveries: [StoreDeliveredEvent] { log.all }

    /// The events that came from outside this process (another process, an edit of the file).
    var externalEvents: [Defaults.SuiteChange] { events.filter { $0.origin == .external } }

    /// The names of the changed keys of each event, in order.
    var changedKeySets: [Set<String>] { events.map { Set($0.changes.keys) } }

    /// Waits until `count` events in all have been recorded; false if that took implausibly long.
    func waitForEvents(_ count: Int) async -> Bool {
        await log.wait(forCount: count)
    }

    /// Waits, one recorded event after another, until `condition` holds; false if it did not
    /// hold when no further event came before the log's deadline.
    func wait(until condition: () -> Bool) async -> Bool {
        while true {
            // Counted first: an event recorded while the condition is looked at ends the wait.
            let recorded = log.count
            if condition() { return true }
            guard await log.wait(forCount: recorded + 1) else { return condition() }
        }
    }
}

/// A change event and the stack address at which the change sink delivered it.
struct StoreDeliveredEvent: Sendable {
    var event: Defaults.SuiteChange
    /// The address of a local variable of the router: how deep the stack was when the event arrived.
    var stackAddress: UInt
}

/// The address of a local variable in a new frame: a measure of how deep the stack is at the call site.
@inline(never)
func storeStackAddress() -> UInt {
    var marker: UInt8 = 0
    return withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
}

/// The sink these tests add to the core's change sinks.
private enum StoreChangeRouter {
    /// The event lists of the recorders, by suite identity.
    private static let logs = Lock<[ObjectIdentifier: [EventLog<StoreDeliveredEvent>]]>([:])

    static func register(_ log: EventLog<StoreDeliveredEvent>, for suite: Defaults.Suite) {
        logs.withLock { $0[suite.stateIdentifier, default: []].append(log) }
    }

    static func unregister(_ log: EventLog<StoreDeliveredEvent>, for suite: Defaults.Suite) {
        logs.withLock { logs in
            let identifier = suite.stateIdentifier
            logs[identifier]?.removeAll { $0 === log }
            if logs[identifier]?.isEmpty == true { logs[identifier] = nil }
        }
    }

    /// Adds the router to the change sinks, once.
    static func ensureInstalled() {
        _ = installation
    }

    private static let installation: Void = {
        Defaults.addChangeSink(Defaults.ChangeSink { event in StoreChangeRouter.route(event) })
    }()

    private static func route(_ event: Defaults.SuiteChange) {
        let stackAddress = storeStackAddress()
        let targets = logs.withLock { $0[event.suite.stateIdentifier] ?? [] }
        for log in targets { log.append(StoreDeliveredEvent(event: event, stackAddress: stackAddress)) }
    }
}

// MARK: - Files

/// The bytes of the file at `url`.
func storeFileBytes(_ url: URL) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: url))
}

/// The text of the file at `url`.
func storeFileText(_ url: URL) throws -> String {
    try String(contentsOf: url, encoding: .utf8)
}

/// The top-level JSON object in the file at `url`, parsed with Foundation's `JSONSerialization`.
func storeFileObject(_ url: URL) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url), options: [.fragmentsAllowed])
    return try #require(object as? [String: Any], "the file does not hold a JSON object")
}

/// Writes `bytes` to `url`, replacing whatever is there.
func storeWriteFile(_ url: URL, _ bytes: [UInt8]) throws {
    try Data(bytes).write(to: url)
}

/// The permission bits (`st_mode & 0o777`) of the file or directory at `url`.
func storePermissions(_ url: URL) throws -> mode_t {
    var info = stat()
    guard stat(url.path, &info) == 0 else {
        throw StoreSystemError(operation: "stat \(url.path)", code: errno)
    }
    return info.st_mode & 0o777
}

/// The inode number of the file at `url`.
func storeInode(_ url: URL) throws -> UInt64 {
    var info = stat()
    guard stat(url.path, &info) == 0 else {
        throw StoreSystemError(operation: "stat \(url.path)", code: errno)
    }
    return UInt64(info.st_ino)
}

/// A suite opened on a copy of the file at `url`, made in a new directory beside it.
///
/// Every suite on one file shares one state in this process, so a test that checks what went
/// through the file reads it through a copy.
func storeSuiteOnACopy(of url: URL, errorHandler: (@Sendable (Defaults.StorageError) -> Void)? = nil) throws
    -> Defaults.Suite
{
    let copy = url.deletingLastPathComponent()
        .appendingPathComponent("copy-\(UUID().uuidString)", isDirectory: true)
        .appendingPathComponent(url.lastPathComponent, isDirectory: false)
    try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
    try FileManager.default.copyItem(at: url, to: copy)
    return Defaults.Suite(fileURL: copy, errorHandler: errorHandler)
}

/// The names in the directory at `url`, sorted.
func storeDirectoryListing(_ url: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: url.path).sorted()
}

/// A failed system call made by a test helper.
struct StoreSystemError: Error, CustomStringConvertible {
    var operation: String
    var code: Int32

    var description: String { "\(operation): \(String(cString: strerror(code)))" }
}

// MARK: - Threads and counters

/// A body running on a thread of its own (not a pool thread), so blocking waits cannot starve a pool.
final class StoreThread: Sendable {
    private struct State {
        var finished = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Lock(State())
    private let finished = DispatchSemaphore(value: 0)

    /// Starts `body` on a new thread.
    init(_ body: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            body()
            finished.signal()
            let waiters = state.withLock { state in
                state.finished = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
        thread.start()
    }

    /// Waits until the body has returned, blocking this thread: for bodies that end at once, and
    /// waits inside a synchronous closure (a transaction's body).
    func join() {
        finished.wait()
        finished.signal()
    }

    /// Waits until the body has returned, without holding a thread while it waits: a test that
    /// blocked one of the cooperative pool's two threads (on two cores) for the length of a busy
    /// body stopped every other test's tasks meanwhile, and their waits ran out.
    func join() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if !state.finished { state.waiters.append(continuation) }
                return state.finished
            }
            if done { continuation.resume() }
        }
    }
}

/// A thread-safe counter.
final class StoreCounter: Sendable {
    private let value = Atomic<Int>(0)

    /// Adds one and returns the new count.
    @discardableResult
    func increment() -> Int {
        value.add(1, ordering: .sequentiallyConsistent).newValue
    }

    /// The current count.
    var count: Int { value.load(ordering: .sequentiallyConsistent) }
}

/// A thread-safe flag.
final class StoreFlag: Sendable {
    private let value = Atomic<Bool>(false)

    /// Sets the flag.
    func set() {
        value.store(true, ordering: .sequentiallyConsistent)
    }

    /// Whether the flag is set.
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}

/// A thread-safe list that threads append to.
final class StoreLog<Element: Sendable>: Sendable {
    private let elements = Lock<[Element]>([])

    /// Appends `element`.
    func append(_ element: Element) {
        elements.withLock { $0.append(element) }
    }

    /// Everything appended so far.
    var all: [Element] { elements.withLock { $0 } }
}

/// A key's stored value before and after a change, comparable in tests.
struct StoreValueChange: Equatable, CustomStringConvertible {
    var old: JSONValue?
    var new: JSONValue?

    init(_ old: JSONValue?, _ new: JSONValue?) {
        self.old = old
        self.new = new
    }

    var description: String { "\(old.map { "\($0)" } ?? "nothing") -> \(new.map { "\($0)" } ?? "nothing")" }
}

extension Defaults.SuiteChange {
    /// The changes of this event as comparable values.
    var valueChanges: [String: StoreValueChange] {
        changes.mapValues { StoreValueChange($0.old, $0.new) }
    }
}
