// Benchmarks of Defaults against the alternatives a Linux Swift program has.
//
// Every benchmark name is "<group>/<contender>"; `Benchmarks/ratios` (next to Package.swift) runs
// them all once and prints the ratio table from that one run. package-benchmark runs each benchmark
// in a process of its own, so state made by one (an installed observer registry, Foundation's
// preferences cache) never leaks into another.
//
// Everything on disk lives in a temporary directory made per process and removed at exit. Foundation's
// `UserDefaults(suiteName:)` on Linux writes `$XDG_CONFIG_HOME/<suite>.plist`, with the variable read
// once at process start (setting it later has no effect); a suite name that is an absolute path is
// used as the file's path instead, so every `UserDefaults` here is named by a path in that directory
// and nothing lands in the real ~/.config.

import Benchmark
import Configuration
import Defaults
import DefaultsConfiguration
import DefaultsObservation
import Foundation
import OutsideBackend
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// MARK: - Shared fixtures

/// A settings struct of typical size: a few scalars, a string and a short array.
struct Profile: Codable, Equatable, Sendable, Defaults.Serializable {
    var name: String
    var width: Int
    var height: Int
    var scale: Double
    var isCompact: Bool
    var tags: [String]

    static let sample = Profile(
        name: "main window",
        width: 1280,
        height: 800,
        scale: 2.0,
        isCompact: false,
        tags: ["sidebar", "toolbar", "status"]
    )
}

/// The lower bound for a thread-safe settings read: one lock and one dictionary lookup.
final class Floor<Value: Sendable>: Sendable {
    let storage: Mutex<[String: Value]>
    init(_ values: [String: Value]) { storage = Mutex(values) }
    func value(_ name: String) -> Value? { storage.withLock { $0[name] } }
    func set(_ value: Value, _ name: String) { storage.withLock { $0[name] = value } }
}

/// An object observations are tied to.
final class Owner: Sendable {}

final class Counter: Sendable {
    let count = Atomic<Int>(0)
    func increment() { count.add(1, ordering: .relaxed) }
}

/// Holds values the benchmark closures need but that are not `Sendable` or `Copyable` as such.
final class Box<T>: @unchecked Sendable {  // set up once before the measured loop, then only read
    var value: T
    init(_ value: T) { self.value = value }
}

/// This process's scratch directory, removed when the process exits.
enum Scratch {
    static let root: String = {
        var template = Array((NSTemporaryDirectory() + "/defaults-bench-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "cannot create a temporary directory")
        let path = String(cString: made!)
        // NB: registered before any file-backed suite exists, so it runs after their exit flushes.
        atexit { Scratch.removeAll() }
        return path
    }()

    static func url(_ name: String) -> URL { URL(fileURLWithPath: root + "/" + name) }

    /// The suite name that makes Foundation keep a `UserDefaults` in `<root>/<name>.plist`.
    static func userDefaultsSuite(_ name: String) -> String { root + "/" + name }

    static func removeAll() {
        // NB: the path is ours (mkdtemp above); nothing outside it is touched.
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// Counts replacements of one file: renames onto its name and writes closed on it, via inotify.
///
/// A `Defaults` suite replaces its file by rename (temp file → rename), Foundation's `UserDefaults`
/// rewrites the plist in place (open O_TRUNC → write → close); both show up here, once per write.
final class FileWriteCounter {
    let descriptor: Int32
    let fileName: String

    init(directory: String, fileName: String) {
        // IN_NONBLOCK | IN_CLOEXEC = O_NONBLOCK | O_CLOEXEC
        descriptor = inotify_init1(Int32(O_NONBLOCK | O_CLOEXEC))
        precondition(descriptor >= 0, "inotify_init1 failed")
        // IN_CLOSE_WRITE (0x08) | IN_MOVED_TO (0x80)
        let watch = inotify_add_watch(descriptor, directory, 0x08 | 0x80)
        precondition(watch >= 0, "inotify_add_watch failed")
        self.fileName = fileName
    }

    deinit { close(descriptor) }

    /// The number of writes of the file seen since the last call.
    func take() -> Int {
        var count = 0
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let length = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if length <= 0 { return count }
            var offset = 0
            while offset + 16 <= length {
                let nameLength = buffer.withUnsafeBytes { Int($0.load(fromByteOffset: offset + 12, as: UInt32.self)) }
                let nameBytes = buffer[(offset + 16)..<(offset + 16 + nameLength)].prefix { $0 != 0 }
                if String(decoding: nameBytes, as: UTF8.self) == fileName { count += 1 }
                offset += 16 + nameLength
            }
        }
    }
}

/// A Foundation `UserDefaults` kept in `<scratch>/<name>.plist`, with nothing in it yet.
func freshUserDefaults(_ name: String) -> UserDefaults {
    let suite = Scratch.userDefaultsSuite(name)
    precondition(!FileManager.default.fileExists(atPath: suite + ".plist"))
    return UserDefaults(suiteName: suite)!
}

// MARK: - Configurations

/// Per-operation benchmarks: each sample is 1,000 operations; results are reported per operation.
var perOperation: Benchmark.Configuration {
    .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        timeUnits: .nanoseconds,
        warmupIterations: 10,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 1_000_000
    )
}

let replacementsMetric: BenchmarkMetric = .custom("fileWrites", polarity: .prefersSmaller, useScalingFactor: false)

/// The number of observers of other keys in the "many observers" write benchmark.
let unrelatedObserverCount = 10_000
/// The number of keys in the file opened by the "open" benchmarks.
let openKeyCount = 10_000
/// Writes per burst.
let burstWrites = 10_000
/// Live observations created per sample of the memory benchmark.
let liveObservationCount = 10_000
/// Longer than the store's coalescing delay (50 ms), so a flush timer armed by a burst has fired.
let flushSettleMicroseconds = 80_000

// MARK: - Benchmarks

let benchmarks: @Sendable () -> Void = {
    readInt()
    readCodable()
    writeInt()
    servicesRead()
    logLevel()
    secretRead()
    burst()
    openLargeSuite()
    observation()
    crossProcess()
    configMap()
    openOverSystemFiles()
    openMigrated()
    etcd()
    answerRate()
}

// MARK: Read an Int key

func intSuite(_ suite: Defaults.Suite) -> (Defaults.Suite, Defaults.Key<Int>) {
    let key = Defaults.Key<Int>("answer", default: 0, suite: suite)
    suite[key] = 42
    precondition(suite[key] == 42)
    return (suite, key)
}

func readInt() {
    Benchmark("ReadInt/Defaults.inMemory", configuration: perOperation) { benchmark, fixture in
        let (suite, key) = fixture
        for _ in benchmark.scaledIterations { blackHole(suite[key]) }
    } setup: {
        intSuite(.inMemory())
    }

    Benchmark("ReadInt/Defaults.file", configuration: perOperation) { benchmark, fixture in
        let (suite, key) = fixture
        for _ in benchmark.scaledIterations { blackHole(suite[key]) }
    } setup: { () throws -> (Defaults.Suite, Defaults.Key<Int>) in
        let fixture = intSuite(Defaults.Suite(fileURL: Scratch.url("read-int.json")))
        try fixture.0.synchronize()
        return fixture
    }

    // A read over a backend written outside the library (`OutsideBackend`): reads never reach the
    // backend, so it should cost what a read over the file does.
    Benchmark("ReadInt/Defaults.outsideBackend", configuration: perOperation) { benchmark, fixture in
        let (suite, key) = fixture
        for _ in benchmark.scaledIterations { blackHole(suite[key]) }
    } setup: { () throws -> (Defaults.Suite, Defaults.Key<Int>) in
        let fixture = intSuite(Defaults.Suite(backend: DictionaryBackend()))
        try fixture.0.synchronize()
        return fixture
    }

    Benchmark("ReadInt/Mutex<[String:Int]> (floor)", configuration: perOperation) { benchmark, fixture in
        let (floor, name) = fixture
        for _ in benchmark.scaledIterations { blackHole(floor.value(name)) }
    } setup: {
        (Floor(["answer": 42, "other": 1]), String("answer"))
    }

    Benchmark("ReadInt/UserDefaults.integer", configuration: perOperation) { benchmark, fixture in
        let (defaults, name) = fixture
        for _ in benchmark.scaledIterations { blackHole(defaults.value.integer(forKey: name)) }
    } setup: { () throws -> (Box<UserDefaults>, String) in
        let defaults = freshUserDefaults("bench.read-int")
        defaults.set(42, forKey: "answer")
        precondition(defaults.integer(forKey: "answer") == 42)
        return (Box(defaults), String("answer"))
    }
}

// MARK: Read a Codable struct key

/// `suite` with the sample profile written (and flushed), and its key.
func profileSuite(_ suite: Defaults.Suite) throws -> (Defaults.Suite, Defaults.Key<Profile>) {
    let key = Defaults.Key<Profile>(
        "profile",
        default: Profile(name: "", width: 0, height: 0, scale: 1, isCompact: true, tags: []),
        suite: suite
    )
    suite[key] = .sample
    try suite.synchronize()
    precondition(suite[key] == .sample)
    return (suite, key)
}

func readCodable() {
    Benchmark("ReadCodable/Defaults.inMemory", configuration: perOperation) { benchmark, fixture in
        let (suite, key) = fixture
        for _ in benchmark.scaledIterations { blackHole(suite[key]) }
    } setup: {
        try profileSuite(.inMemory())
    }

    Benchmark("ReadCodable/Defaults.file", configuration: perOperation) { benchmark, fixture in
        let (suite, key) = fixture
        for _ in benchmark.scaledIterations { blackHole(suite[key]) }
    } setup: {
        try profileSuite(Defaults.Suite(fileURL: Scratch.url("read-codable.json")))
    }

    Benchmark("ReadCodable/Defaults.outsideBackend", configuration: perOperation) { benchmark, fixture in
        let (suite, key) = fixture
        for _ in benchmark.scaledIterations { blackHole(suite[key]) }
    } setup: {
        try profileSuite(Defaults.Suite(backend: DictionaryBackend()))
    }

    Benchmark("ReadCodable/UserDefaults.data+JSONDecoder", configuration: perOperation) { benchmark, fixture in
        let (defaults, decoder, name) = fixture
        for _ in benchmark.scaledIterations {
            let data = defaults.value.data(forKey: name)!
            blackHole(try! decoder.value.decode(Profile.self, from: data))
        }
    } setup: { () throws -> (Box<UserDefaults>, Box<JSONDecoder>, String) in
        let defaults = freshUserDefaults("bench.read-codable")
        defaults.set(try JSONEncoder().encode(Profile.sample), forKey: "profile")
        // NB: one decoder reused for every read, the cheapest way to write it by hand.
        let decoder = JSONDecoder()
        let decoded = try decoder.decode(Profile.self, from: defaults.data(forKey: "profile")!)
        precondition(decoded == .sample)
        return (Box(defaults), Box(decoder), String("profile"))
    }

    Benchmark("ReadCodable/Mutex<[String:Profile]> (floor)", configuration: perOperation) { benchmark, fixture in
        let (floor, name) = fixture
        for _ in benchmark.scaledIterations { blackHole(floor.value(name)) }
    } setup: {
        (Floor(["profile": Profile.sample]), String("profile"))
    }
}
