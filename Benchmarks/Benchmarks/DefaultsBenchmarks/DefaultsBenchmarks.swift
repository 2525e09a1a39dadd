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
    burst()
    openLargeSuite()
    observation()
    crossProcess()
    configMap()
    openOverSystemFiles()
    etcd()
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

// MARK: Write an Int key

/// Uses the observation module once (an observation made and stopped), as any program that
/// observes anything has.
func installObserverRegistry() {
    let suite = Defaults.Suite.inMemory()
    Defaults.observe(Defaults.Key<Int>("warm-up", default: 0, suite: suite), options: []) { _ in }.invalidate()
}

func writeInt() {
    // NB: every write alternates between two values, so each one is a real change.
    func measureWrites(_ benchmark: Benchmark, _ suite: Defaults.Suite, _ key: Defaults.Key<Int>) {
        for index in benchmark.scaledIterations { suite[key] = index & 1 }
    }

    Benchmark("WriteInt/Defaults.inMemory (DefaultsObservation unused)", configuration: perOperation) {
        benchmark,
        fixture in
        measureWrites(benchmark, fixture.0, fixture.1)
    } setup: {
        intSuite(.inMemory())
    }

    Benchmark("WriteInt/Defaults.inMemory 0 observers", configuration: perOperation) { benchmark, fixture in
        measureWrites(benchmark, fixture.0, fixture.1)
    } setup: { () throws -> (Defaults.Suite, Defaults.Key<Int>) in
        installObserverRegistry()
        return intSuite(.inMemory())
    }

    Benchmark("WriteInt/Defaults.file 0 observers", configuration: perOperation) { benchmark, fixture in
        measureWrites(benchmark, fixture.0, fixture.1)
    } setup: { () throws -> (Defaults.Suite, Defaults.Key<Int>) in
        installObserverRegistry()
        return intSuite(Defaults.Suite(fileURL: Scratch.url("write-int.json")))
    }

    Benchmark("WriteInt/Defaults.outsideBackend 0 observers", configuration: perOperation) { benchmark, fixture in
        measureWrites(benchmark, fixture.0, fixture.1)
    } setup: { () throws -> (Defaults.Suite, Defaults.Key<Int>) in
        installObserverRegistry()
        return intSuite(Defaults.Suite(backend: DictionaryBackend()))
    }

    Benchmark("WriteInt/Defaults.inMemory 1 observer", configuration: perOperation) { benchmark, fixture in
        measureWrites(benchmark, fixture.suite, fixture.key)
    } setup: {
        () throws -> (
            suite: Defaults.Suite, key: Defaults.Key<Int>, observation: Defaults.Observation, counter: Counter
        ) in
        let (suite, key) = intSuite(.inMemory())
        let counter = Counter()
        let observation = Defaults.observe(key, options: []) { _ in counter.increment() }
        suite[key] = 7
        precondition(counter.count.load(ordering: .relaxed) == 1)
        return (suite: suite, key: key, observation: observation, counter: counter)
    }

    // Issue 21's row: observation in use, as in a program that observes some other setting.
    for label in ["inMemory", "file"] {
        Benchmark("WriteInt/Defaults.\(label) 1 observer on another key", configuration: perOperation) {
            benchmark,
            fixture in
            measureWrites(benchmark, fixture.suite, fixture.key)
        } setup: {
            () throws -> (suite: Defaults.Suite, key: Defaults.Key<Int>, observation: Defaults.Observation) in
            let (suite, key) = intSuite(
                label == "file" ? Defaults.Suite(fileURL: Scratch.url("write-int-other.json")) : .inMemory()
            )
            let counter = Counter()
            let other = Defaults.Key<Int>("other", default: 0, suite: suite)
            let observation = Defaults.observe(other, options: []) { _ in counter.increment() }
            suite[other] = 1
            suite[key] = 7
            precondition(counter.count.load(ordering: .relaxed) == 1)
            return (suite: suite, key: key, observation: observation)
        }
    }

    Benchmark("WriteInt/Defaults.inMemory 10k observers on other keys", configuration: perOperation) {
        benchmark,
        fixture in
        measureWrites(benchmark, fixture.suite, fixture.key)
    } setup: { () throws -> (suite: Defaults.Suite, key: Defaults.Key<Int>, observations: [Defaults.Observation]) in
        let (suite, key) = intSuite(.inMemory())
        let counter = Counter()
        let observations = (0..<unrelatedObserverCount)
            .map { index in
                Defaults.observe(Defaults.Key<Int>("other-\(index)", default: 0, suite: suite), options: []) { _ in
                    counter.increment()
                }
            }
        suite[key] = 7
        precondition(counter.count.load(ordering: .relaxed) == 0)
        return (suite: suite, key: key, observations: observations)
    }

    Benchmark("WriteInt/Mutex<[String:Int]> (floor)", configuration: perOperation) { benchmark, fixture in
        let (floor, name) = fixture
        for index in benchmark.scaledIterations { floor.set(index & 1, name) }
    } setup: {
        (Floor(["answer": 42, "other": 1]), String("answer"))
    }

    Benchmark("WriteInt/UserDefaults.set", configuration: perOperation) { benchmark, fixture in
        let (defaults, name) = fixture
        for index in benchmark.scaledIterations { defaults.value.set(index & 1, forKey: name) }
    } setup: { () throws -> (Box<UserDefaults>, String) in
        let defaults = freshUserDefaults("bench.write-int")
        defaults.set(42, forKey: "answer")
        return (Box(defaults), String("answer"))
    }
}

// MARK: Services read

func servicesRead() {
    Benchmark("ServicesRead/Defaults[key] (file suite)", configuration: perOperation) { benchmark, key in
        for _ in benchmark.scaledIterations { blackHole(Defaults[key]) }
    } setup: { () throws -> Defaults.Key<Int> in
        let suite = Defaults.Suite(fileURL: Scratch.url("service.json"))
        let key = Defaults.Key<Int>("http.port", default: 80, suite: suite)
        Defaults[key] = 8080
        try suite.synchronize()
        precondition(Defaults[key] == 8080)
        return key
    }

    Benchmark("ServicesRead/ConfigReader(InMemoryProvider).int", configuration: perOperation) { benchmark, fixture in
        let (reader, key) = fixture
        for _ in benchmark.scaledIterations { blackHole(reader.value.int(forKey: key.value, default: 80)) }
    } setup: { () throws -> (Box<ConfigReader>, Box<ConfigKey>) in
        let reader = ConfigReader(provider: InMemoryProvider(values: ["http.port": 8080]))
        // NB: the key is built once, outside the loop, the cheapest way to call it.
        let key: ConfigKey = "http.port"
        precondition(reader.int(forKey: key, default: 80) == 8080)
        return (Box(reader), Box(key))
    }

    /// A `ConfigReader` over `provider`, and the key it reads, checked to read 8080.
    func readerFixture(_ provider: some ConfigProvider) -> (Box<ConfigReader>, Box<ConfigKey>) {
        let reader = ConfigReader(provider: provider)
        let key: ConfigKey = "http.port"
        precondition(reader.int(forKey: key, default: 80) == 8080)
        return (Box(reader), Box(key))
    }

    // The same file, `{"http.port": 8080}`, read through this package's provider (a top-level key:
    // the first place the default mapping looks) and through swift-configuration's JSON file provider.
    Benchmark("ServicesRead/ConfigReader(DefaultsProvider).int", configuration: perOperation) { benchmark, fixture in
        let (reader, key) = fixture
        for _ in benchmark.scaledIterations { blackHole(reader.value.int(forKey: key.value, default: 80)) }
    } setup: { () throws -> (Box<ConfigReader>, Box<ConfigKey>) in
        let url = Scratch.url("service-provider.json")
        try Data(#"{"http.port": 8080}"#.utf8).write(to: url)
        return readerFixture(DefaultsProvider(suite: Defaults.Suite(fileURL: url)))
    }

    Benchmark("ServicesRead/ConfigReader(DefaultsProvider, nested).int", configuration: perOperation) {
        benchmark,
        fixture in
        let (reader, key) = fixture
        for _ in benchmark.scaledIterations { blackHole(reader.value.int(forKey: key.value, default: 80)) }
    } setup: { () throws -> (Box<ConfigReader>, Box<ConfigKey>) in
        // `{"http": {"port": 8080}}`: the top-level "http.port" is looked for first, then "http".
        let url = Scratch.url("service-provider-nested.json")
        try Data(#"{"http": {"port": 8080}}"#.utf8).write(to: url)
        return readerFixture(DefaultsProvider(suite: Defaults.Suite(fileURL: url)))
    }

    Benchmark("ServicesRead/ConfigReader(FileProvider<JSONSnapshot>).int", configuration: perOperation) {
        benchmark,
        fixture in
        let (reader, key) = fixture
        for _ in benchmark.scaledIterations { blackHole(reader.value.int(forKey: key.value, default: 80)) }
    } setup: { () async throws -> (Box<ConfigReader>, Box<ConfigKey>) in
        let url = Scratch.url("service-file.json")
        try Data(#"{"http.port": 8080}"#.utf8).write(to: url)
        return readerFixture(try await FileProvider<JSONSnapshot>(filePath: FilePath(url.path)))
    }
}

// MARK: Burst of writes, then synchronize

func burst() {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal, replacementsMetric],
        timeUnits: .microseconds,
        warmupIterations: 2,
        scalingFactor: .one,
        maxDuration: .seconds(10),
        maxIterations: 40
    )

    /// 10,000 writes (each a new value), then `synchronize()`; counts the file's replacements.
    ///
    /// `settle` waits, outside the measurement, until a flush timer armed by the burst has fired,
    /// so each sample is one burst on a quiet store. Without it, bursts follow each other closely,
    /// which is the harder case for coalescing.
    func ours(_ name: String, settle: Bool) {
        Benchmark(name, configuration: configuration) { benchmark, fixture in
            let (suite, key, counter, round) = fixture
            _ = counter.take()
            benchmark.startMeasurement()
            let base = round.value * burstWrites
            for index in 0..<burstWrites { suite[key] = base + index }
            try! suite.synchronize()
            benchmark.stopMeasurement()
            round.value += 1
            if settle { usleep(UInt32(flushSettleMicroseconds)) }
            benchmark.measurement(replacementsMetric, counter.take())
        } setup: { () throws -> (Defaults.Suite, Defaults.Key<Int>, FileWriteCounter, Box<Int>) in
            let suite = Defaults.Suite(fileURL: Scratch.url("burst.json"))
            let key = Defaults.Key<Int>("burst", default: 0, suite: suite)
            suite[key] = -1
            try suite.synchronize()
            if settle { usleep(UInt32(flushSettleMicroseconds)) }
            return (suite, key, FileWriteCounter(directory: Scratch.root, fileName: "burst.json"), Box(1))
        }
    }
    ours("Burst/Defaults 10k writes+synchronize", settle: true)
    ours("Burst/Defaults 10k writes+synchronize, back-to-back", settle: false)

    Benchmark("Burst/UserDefaults 10k set+synchronize", configuration: configuration) { benchmark, fixture in
        let (defaults, counter, round) = fixture
        _ = counter.take()
        benchmark.startMeasurement()
        let base = round.value * burstWrites
        for index in 0..<burstWrites { defaults.value.set(base + index, forKey: "burst") }
        precondition(defaults.value.synchronize())
        benchmark.stopMeasurement()
        round.value += 1
        benchmark.measurement(replacementsMetric, counter.take())
    } setup: { () throws -> (Box<UserDefaults>, FileWriteCounter, Box<Int>) in
        let defaults = freshUserDefaults("bench.burst")
        defaults.set(-1, forKey: "burst")
        precondition(defaults.synchronize())
        precondition(FileManager.default.fileExists(atPath: Scratch.userDefaultsSuite("bench.burst") + ".plist"))
        let counter = FileWriteCounter(directory: Scratch.root, fileName: "bench.burst.plist")
        return (Box(defaults), counter, Box(1))
    }
}

// MARK: Open a suite of 10,000 keys

func openLargeSuite() {
    let maxIterations = 40
    let warmupIterations = 2
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal],
        timeUnits: .microseconds,
        warmupIterations: warmupIterations,
        scalingFactor: .one,
        maxDuration: .seconds(10),
        maxIterations: maxIterations
    )
    let probe = "key-\(openKeyCount / 2)"

    // Only opening and the first read are measured. Each sample opens a copy of the file not opened
    // before: a suite on a file that is still open (a suite just released may be kept a moment by
    // its watcher's first look at the file) shares its state and loads nothing.
    Benchmark("Open10k/Defaults.Suite(fileURL:)+read", configuration: configuration) { benchmark, fixture in
        let (round, key) = fixture
        let url = Scratch.url("open-\(round.value).json")
        round.value += 1
        benchmark.startMeasurement()
        let suite = Defaults.Suite(fileURL: url)
        blackHole(suite[key])
        benchmark.stopMeasurement()
        precondition(suite[key] == openKeyCount / 2)
    } setup: { () throws -> (Box<Int>, Defaults.Key<Int>) in
        let source = Scratch.url("open-source.json")
        do {
            let writer = Defaults.Suite(fileURL: source)
            writer.transaction {
                for index in 0..<openKeyCount {
                    writer[Defaults.Key<Int>("key-\(index)", default: 0, suite: writer)] = index
                }
            }
            try writer.synchronize()
        }
        for copy in 0..<(maxIterations + warmupIterations + 5) {
            try FileManager.default.copyItem(at: source, to: Scratch.url("open-\(copy).json"))
        }
        // NB: a `Key`'s own suite is ignored by `suite[key]`; this one only carries name and default.
        return (Box(0), Defaults.Key<Int>(probe, default: -1, suite: .inMemory()))
    }

    // Foundation reads a suite's plist once per process and caches it, so each sample opens a copy
    // of the same file under a name not opened before: every sample is a cold open, like ours.
    Benchmark("Open10k/UserDefaults(suiteName:)+read", configuration: configuration) { benchmark, fixture in
        let (round, name) = fixture
        let suite = Scratch.userDefaultsSuite("bench.open-\(round.value)")
        round.value += 1
        benchmark.startMeasurement()
        let defaults = UserDefaults(suiteName: suite)!
        blackHole(defaults.integer(forKey: name))
        benchmark.stopMeasurement()
        precondition(defaults.integer(forKey: name) == openKeyCount / 2)
    } setup: { () throws -> (Box<Int>, String) in
        let source = freshUserDefaults("bench.open-source")
        for index in 0..<openKeyCount { source.set(index, forKey: "key-\(index)") }
        precondition(source.synchronize())
        let sourcePath = Scratch.userDefaultsSuite("bench.open-source") + ".plist"
        for copy in 0..<(maxIterations + warmupIterations + 5) {
            try FileManager.default.copyItem(
                atPath: sourcePath,
                toPath: Scratch.userDefaultsSuite("bench.open-\(copy)") + ".plist"
            )
        }
        return (Box(0), probe)
    }
}

// MARK: Observation

/// Pairs of operations, with the allocations they leave: 1,000 samples of 1,000 pairs, so the
/// median is taken over 1,000,000 pairs.
var perPair: Benchmark.Configuration {
    .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .mallocFreeDelta, .memoryLeakedBytes],
        timeUnits: .nanoseconds,
        warmupIterations: 10,
        scalingFactor: .kilo,
        maxDuration: .seconds(20),
        maxIterations: 1_000
    )
}

func observation() {
    Benchmark(
        "Observe/observe+invalidate pair",
        configuration: perPair
    ) { benchmark, key in
        for _ in benchmark.scaledIterations {
            let observation = Defaults.observe(key, options: []) { _ in }
            observation.invalidate()
            blackHole(observation)
        }
    } setup: { () throws -> Defaults.Key<Int> in
        let (_, key) = intSuite(.inMemory())
        installObserverRegistry()
        return key
    }

    // A view-model's life: it observes a key that is never written, ties the observation to
    // itself, and is released. The registry's sweep removes what such pairs leave behind.
    Benchmark(
        "Observe/observe+tieToLifetime+owner released pair",
        configuration: perPair
    ) { benchmark, key in
        for _ in benchmark.scaledIterations {
            let owner = Owner()
            Defaults.observe(key, options: []) { _ in }.tieToLifetime(of: owner)
            blackHole(owner)
        }
    } setup: { () throws -> Defaults.Key<Int> in
        let (_, key) = intSuite(.inMemory())
        installObserverRegistry()
        return key
    }

    // Each sample creates 10,000 observations (one per key) and keeps them alive until the
    // measurement stops; memoryLeakedBytes / 10,000 is then the memory a live observation holds.
    Benchmark(
        "Observe/10k live observations",
        configuration: .init(
            metrics: [.wallClock, .mallocCountTotal, .mallocBytesCount, .mallocFreeDelta, .memoryLeakedBytes],
            timeUnits: .microseconds,
            warmupIterations: 2,
            scalingFactor: .one,
            maxDuration: .seconds(5),
            maxIterations: 50
        )
    ) { benchmark, keys in
        benchmark.startMeasurement()
        let observations = keys.map { Defaults.observe($0, options: []) { _ in } }
        benchmark.stopMeasurement()
        for observation in observations { observation.invalidate() }
        blackHole(observations)
    } setup: { () throws -> [Defaults.Key<Int>] in
        let suite = Defaults.Suite.inMemory()
        installObserverRegistry()
        return (0..<liveObservationCount).map { Defaults.Key<Int>("live-\($0)", default: 0, suite: suite) }
    }
}
