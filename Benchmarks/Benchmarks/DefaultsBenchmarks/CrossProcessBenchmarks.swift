// Benchmarks with a second process: how soon a change written by one process reaches an observer
// in another, and what the file lock costs when several processes write at once.
//
// The other process is `defaults-bench-peer` (Sources/defaults-bench-peer), which `Benchmarks/ratios`
// builds beside this binary. Times across the two processes are CLOCK_MONOTONIC, one clock for the
// whole machine.

import Benchmark
import Configuration
@_spi(Benchmarks) import Defaults
import DefaultsConfiguration
import DefaultsObservation
import Foundation
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Nanoseconds from the writer's `synchronize()` returning to the observer's callback starting, in
/// the other process; 0 when the callback started first (see `earlyMetric`).
let latencyMetric: BenchmarkMetric = .custom("latency", polarity: .prefersSmaller, useScalingFactor: false)
/// Nanoseconds by which the callback started before the writer's `synchronize()` returned (the
/// rename is visible before the writer's closing `fsync` of the directory returns); 0 otherwise.
let earlyMetric: BenchmarkMetric = .custom("early", polarity: .prefersSmaller, useScalingFactor: false)
/// Nanoseconds from the writer starting its write (before `suite[key] = …` and `synchronize()`) to
/// the callback starting: the whole way of a change, writing the file included.
let endToEndMetric: BenchmarkMetric = .custom("endToEnd", polarity: .prefersSmaller, useScalingFactor: false)

/// Writes per latency benchmark.
let latencyWrites = 1_000
/// Writes for the contender that polls once a second: each takes half a second on average.
let pollingWrites = 40

func monotonicNanoseconds() -> Int {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return now.tv_sec * 1_000_000_000 + now.tv_nsec
}

/// A running `defaults-bench-peer`: lines go to its standard input and come back from its output.
final class Peer: @unchecked Sendable {  // used by one benchmark closure at a time
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffered: [UInt8] = []

    /// Where the peer is: built beside this benchmark's executable.
    static var executable: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("defaults-bench-peer")
    }

    init(_ arguments: [String]) throws {
        precondition(
            FileManager.default.isExecutableFile(atPath: Self.executable.path),
            "defaults-bench-peer not built: run `swift build -c release --product defaults-bench-peer` in Benchmarks/"
        )
        process.executableURL = Self.executable
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// The next line the peer prints.
    func readLine() -> String {
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            let data = output.fileHandleForReading.availableData
            precondition(!data.isEmpty, "defaults-bench-peer ended")
            buffered.append(contentsOf: data)
        }
    }

    func finish() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

/// When each value arrived at this process's observer.
final class Arrivals: Sendable {
    private let times = Mutex<[Int: Int]>([:])
    private let arrived = DispatchSemaphore(value: 0)

    func record(_ value: Int) {
        let now = monotonicNanoseconds()
        times.withLock { $0[value] = now }
        arrived.signal()
    }

    /// The arrival time of `value`, waiting for it.
    func time(of value: Int) -> Int {
        time(of: value, within: .distantFuture)!
    }

    /// The arrival time of `value`, waiting for it until `deadline`.
    func time(of value: Int, within deadline: DispatchTime) -> Int? {
        while true {
            if let time = times.withLock({ $0.removeValue(forKey: value) }) { return time }
            if arrived.wait(timeout: deadline) == .timedOut { return nil }
        }
    }
}

/// Runs `arguments[0]` with `arguments` and `environment` and waits for it, with no Foundation
/// run loop between the exit and this return.
@discardableResult
func spawnAndWait(_ arguments: [String], environment: [String: String]) -> Int32 {
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
    }
    var pid: pid_t = 0
    guard posix_spawn(&pid, arguments[0], nil, nil, argv, envp) == 0 else { return -1 }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return status
}

/// A settings file of `keys` keys (one of them "stamp"), written before the benchmark starts.
func settingsFile(named name: String, keys: Int) throws -> URL {
    let url = Scratch.url(name)
    let writer = Defaults.Suite(fileURL: url)
    writer.transaction {
        for index in 0..<(keys - 1) {
            writer[Defaults.Key<String>("setting-\(index)", default: "", suite: writer)] = "value \(index)"
        }
        writer[Defaults.Key<Int>("stamp", default: 0, suite: writer)] = 0
    }
    try writer.synchronize()
    return url
}

/// What a latency benchmark needs: the writing peer, and when values arrived here.
struct LatencyFixture {
    let peer: Peer
    let arrivals: Arrivals
    let round: Box<Int>
    /// Whatever must stay alive while the benchmark runs (an observation, a watcher task).
    let keepAlive: [Any]
}

/// One write by the peer per iteration, and its arrival here; records the three latency metrics.
///
/// With `randomPhase`, each write waits a random part of that period first, so writes fall anywhere
/// in the cycle of a contender that polls with that period (in step with it, each would wait a
/// whole period).
func measureLatency(_ benchmark: Benchmark, _ fixture: LatencyFixture, randomPhase: Duration? = nil) {
    var generator = SystemRandomNumberGenerator()
    for _ in benchmark.scaledIterations {
        if let randomPhase {
            let microseconds =
                Int(randomPhase.components.seconds) * 1_000_000
                + Int(randomPhase.components.attoseconds / 1_000_000_000_000)
            Thread.sleep(forTimeInterval: Double(Int.random(in: 0..<microseconds, using: &generator)) / 1e6)
        }
        fixture.round.value += 1
        let value = fixture.round.value
        fixture.peer.send("\(value)")
        let reply = fixture.peer.readLine().split(separator: " ").compactMap { Int($0) }
        precondition(reply.count == 3 && reply[0] == value, "unexpected reply \(reply)")
        let (called, returned) = (reply[1], reply[2])
        let arrived = fixture.arrivals.time(of: value)
        benchmark.measurement(latencyMetric, max(0, arrived - returned))
        benchmark.measurement(earlyMetric, max(0, returned - arrived))
        benchmark.measurement(endToEndMetric, arrived - called)
    }
}

/// The configuration of a latency benchmark: the three latency metrics, one write per iteration.
func latencyConfiguration(
    _ unit: BenchmarkTimeUnits,
    warmup: Int,
    maxDuration: Duration,
    writes: Int
) -> Benchmark.Configuration {
    Benchmark.Configuration(
        metrics: [latencyMetric, earlyMetric, endToEndMetric],
        timeUnits: unit,
        warmupIterations: warmup,
        scalingFactor: .one,
        maxDuration: maxDuration,
        maxIterations: writes
    )
}

/// swift-configuration's reloading provider over `url`, polling every `poll`, with a snapshot
/// watcher that records each new "stamp"; `peer` changes the file.
func reloadingFixture(_ url: URL, poll: Duration, peer: Peer) async throws -> LatencyFixture {
    let provider = try await ReloadingFileProvider<JSONSnapshot>(filePath: FilePath(url.path), pollInterval: poll)
    let reader = ConfigReader(provider: provider)
    let arrivals = Arrivals()
    let polling = Task { try await provider.run() }
    let watching = Task {
        try await reader.watchSnapshot { snapshots in
            for await snapshot in snapshots {
                if let value = snapshot.int(forKey: "stamp"), value > 0 { arrivals.record(value) }
            }
        }
    }
    return LatencyFixture(peer: peer, arrivals: arrivals, round: Box(0), keepAlive: [polling, watching])
}

func crossProcess() {
    let latency = latencyConfiguration(.microseconds, warmup: 20, maxDuration: .seconds(120), writes: latencyWrites)

    /// An observer here of the key the peer writes.
    func latencyBenchmark(keys: Int) {
        Benchmark("CrossProcess/Defaults observe, \(keys) keys", configuration: latency) { benchmark, fixture in
            measureLatency(benchmark, fixture)
        } setup: {
            let url = try settingsFile(named: "latency-\(keys).json", keys: keys)
            let suite = Defaults.Suite(fileURL: url)
            let arrivals = Arrivals()
            let observation = Defaults.observe(Defaults.Key<Int>("stamp", default: 0, suite: suite), options: []) {
                change in arrivals.record(change.newValue)
            }
            // NB: the peer ends when this process does: its standard input closes.
            let peer = try Peer(["latency", url.path])
            return LatencyFixture(peer: peer, arrivals: arrivals, round: Box(0), keepAlive: [observation])
        }
    }
    latencyBenchmark(keys: 100)
    latencyBenchmark(keys: 10_000)

    // The floor under the 10,000-key latency: the library's parse of that benchmark's file (the
    // same bytes), alone, as a suite parses a file it reads; no read, no comparison with memory.
    Benchmark(
        "CrossProcess/bare parse, 10000 keys",
        configuration: Benchmark.Configuration(
            metrics: [.wallClock, .mallocCountTotal],
            timeUnits: .microseconds,
            warmupIterations: 20,
            scalingFactor: .one,
            maxDuration: .seconds(10),
            maxIterations: latencyWrites
        )
    ) { benchmark, bytes in
        for _ in benchmark.scaledIterations {
            blackHole(Defaults._parseSettingsFile(bytes))
        }
    } setup: { () throws -> [UInt8] in
        let bytes = try [UInt8](Data(contentsOf: settingsFile(named: "parse-10000.json", keys: 10_000)))
        precondition(Defaults._parseSettingsFile(bytes) == 10_000)
        return bytes
    }

    // swift-configuration's file provider that reloads: it polls the file's modification time,
    // here once a second, and its snapshot watcher yields each new version.
    // NB: `watchSnapshot`, not `watchInt`: in 1.4.0 a value watcher compares the old and new value
    // of a JSON number as a string, sees no change, and is never told.
    Benchmark(
        "CrossProcess/swift-configuration ReloadingFileProvider 1 s poll, 100 keys",
        configuration: latencyConfiguration(.milliseconds, warmup: 2, maxDuration: .seconds(60), writes: pollingWrites)
    ) { benchmark, fixture in
        measureLatency(benchmark, fixture, randomPhase: .seconds(1))
    } setup: {
        let url = try settingsFile(named: "latency-reloading.json", keys: 100)
        return try await reloadingFixture(url, poll: .seconds(1), peer: Peer(["latency", url.path]))
    }

    // This package's provider over the same kind of file: `watchInt` through a `ConfigReader`, fed
    // by the suite's change events.
    Benchmark(
        "CrossProcess/DefaultsProvider watchValue, 100 keys",
        configuration: latency
    ) { benchmark, fixture in
        measureLatency(benchmark, fixture)
    } setup: {
        let url = try settingsFile(named: "latency-provider.json", keys: 100)
        let reader = ConfigReader(provider: DefaultsProvider(suite: Defaults.Suite(fileURL: url)))
        let arrivals = Arrivals()
        let watching = Task {
            try await reader.watchInt(forKey: "stamp") { updates in
                for await value in updates {
                    if let value, value > 0 { arrivals.record(value) }
                }
            }
        }
        let peer = try Peer(["latency", url.path])
        return LatencyFixture(peer: peer, arrivals: arrivals, round: Box(0), keepAlive: [watching])
    }

    gsettingsLatency()

    let writers = Benchmark.Configuration(
        metrics: [.wallClock],
        timeUnits: .milliseconds,
        warmupIterations: 2,
        scalingFactor: .one,
        maxDuration: .seconds(30),
        maxIterations: 30
    )

    /// `processes` peers each write `keys` distinct keys to one empty file and synchronize.
    ///
    /// Measured from "go" (every peer started, its suite open) to the last "done": the writes and
    /// the locked merges, not the starting of processes.
    func writersBenchmark(processes: Int, keys: Int) {
        let name = "CrossProcess/\(processes) process\(processes == 1 ? "" : "es") × \(keys) writes+synchronize"
        Benchmark(name, configuration: writers) { benchmark, url in
            unlink(url.path)
            let peers = (0..<processes)
                .map { index in
                    try! Peer(["write-keys", url.path, "p\(index)", "\(keys)"])
                }
            for peer in peers { precondition(peer.readLine() == "ready") }
            benchmark.startMeasurement()
            for peer in peers { peer.send("go") }
            for peer in peers { precondition(peer.readLine() == "done") }
            benchmark.stopMeasurement()
            for peer in peers { peer.finish() }
            let written = try! JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
            precondition(written.count == processes * keys, "lost \(processes * keys - written.count) keys")
        } setup: {
            Scratch.url("writers-\(processes).json")
        }
    }
    writersBenchmark(processes: 1, keys: 10_000)
    writersBenchmark(processes: 4, keys: 2_500)
}
