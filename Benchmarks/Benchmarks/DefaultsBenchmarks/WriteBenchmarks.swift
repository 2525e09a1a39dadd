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
