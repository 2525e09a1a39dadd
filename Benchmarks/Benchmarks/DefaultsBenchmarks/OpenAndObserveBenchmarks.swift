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
