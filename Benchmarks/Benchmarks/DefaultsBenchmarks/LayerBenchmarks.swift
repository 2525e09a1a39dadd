// Settings as Linux delivers them: a ConfigMap volume updated by kubelet, followed by a running
// process, and a suite opened over system files ($XDG_CONFIG_DIRS).

import Benchmark
import Configuration
import Defaults
import DefaultsObservation
import Foundation
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Updates per ConfigMap benchmark of ours, and of the contender that polls every 100 ms.
let configMapUpdates = 300
/// Updates for the contender at its default poll of 15 s: each waits 7.5 s on average.
let configMapUpdatesAtDefaultPoll = 10

/// A ConfigMap volume in the scratch directory, and the peer that updates it as kubelet does.
func configMapVolume(_ name: String) throws -> (file: URL, peer: Peer) {
    let volume = Scratch.url(name)
    try FileManager.default.createDirectory(at: volume, withIntermediateDirectories: true)
    let peer = try Peer(["configmap", volume.path])
    precondition(peer.readLine() == "ready")
    return (volume.appendingPathComponent("settings.json"), peer)
}

func configMap() {
    let ours = latencyConfiguration(.microseconds, warmup: 10, maxDuration: .seconds(120), writes: configMapUpdates)

    // The observer is told once per update, from the rename of `..data`: `endToEnd`.
    Benchmark("ConfigMap/Defaults observe, kubelet update", configuration: ours) { benchmark, fixture in
        measureLatency(benchmark, fixture)
    } setup: {
        let (file, peer) = try configMapVolume("configmap-ours")
        let suite = Defaults.Suite(fileURL: file)
        let arrivals = Arrivals()
        let observation = Defaults.observe(Defaults.Key<Int>("stamp", default: -1, suite: suite), options: []) {
            change in arrivals.record(change.newValue)
        }
        return LatencyFixture(peer: peer, arrivals: arrivals, round: Box(0), keepAlive: [observation, suite])
    }

    // swift-configuration's reloading provider polls the file's timestamp and resolved path.
    // NB: `watchSnapshot`, as in the cross-process benchmark: its `watchInt` misses JSON numbers.
    func reloading(poll: Duration, label: String, updates: Int, maxDuration: Duration) {
        Benchmark(
            "ConfigMap/swift-configuration ReloadingFileProvider \(label) poll, kubelet update",
            configuration: latencyConfiguration(.milliseconds, warmup: 1, maxDuration: maxDuration, writes: updates)
        ) { benchmark, fixture in
            measureLatency(benchmark, fixture, randomPhase: poll)
        } setup: {
            let (file, peer) = try configMapVolume("configmap-reloading")
            return try await reloadingFixture(file, poll: poll, peer: peer)
        }
    }
    reloading(poll: .milliseconds(100), label: "100 ms", updates: configMapUpdates, maxDuration: .seconds(120))
    reloading(
        poll: .seconds(15),
        label: "15 s (default)",
        updates: configMapUpdatesAtDefaultPoll,
        maxDuration: .seconds(400)
    )
}

// MARK: Open a suite over system files

/// Keys of each system file beneath the user's file in the open benchmarks.
let layeredSystemKeys = 10

/// A settings file of `count` keys "<prefix>-<i>" at `url`, with `lock` locked when given.
func writeSettings(_ url: URL, prefix: String, count: Int, lock: String? = nil) throws {
    var members = (0..<count).map { "  \"\(prefix)-\($0)\" : \($0)" }
    if let lock { members.append("  \"\" : {\"locked\" : [\"\(lock)\"]}") }
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try Data(("{\n" + members.joined(separator: ",\n") + "\n}\n").utf8).write(to: url)
}

func openOverSystemFiles() {
    /// A user's file of `userKeys` keys opened alone, and over two system files of 10 keys (one of
    /// them locked in each), each sample in folders of its own.
    func pair(userKeys: Int, samples: Int) {
        let configuration = Benchmark.Configuration(
            metrics: [.wallClock, .mallocCountTotal],
            timeUnits: .microseconds,
            warmupIterations: 3,
            scalingFactor: .one,
            maxDuration: .seconds(20),
            maxIterations: samples
        )
        // NB: every sample opens files in folders of its own, not opened before: a suite on a file
        // still open shares its state and loads nothing, and a folder watched already costs no watch.
        let probe = Defaults.Key<Int>("user-\(userKeys / 2)", default: -1, suite: .inMemory())
        func files(_ round: Int, layers: Int) -> (user: URL, system: [URL]) {
            let folder = "open-\(userKeys)-\(layers)-\(round)"
            let user = Scratch.url("\(folder)/home/app/settings.json")
            let system = (0..<layers).map { Scratch.url("\(folder)/xdg\($0)/app/settings.json") }
            return (user, system)
        }
        func prepare(layers: Int) throws -> Box<Int> {
            let source = Scratch.url("open-\(userKeys)-source.json")
            if !FileManager.default.fileExists(atPath: source.path) {
                try writeSettings(source, prefix: "user", count: userKeys)
            }
            for round in 0..<(samples + 5) {
                let (user, system) = files(round, layers: layers)
                try FileManager.default.createDirectory(
                    at: user.deletingLastPathComponent(),
                    withIntermediateDirectories: true
                )
                try FileManager.default.copyItem(at: source, to: user)
                for (index, file) in system.enumerated() {
                    try writeSettings(
                        file,
                        prefix: "system\(index)",
                        count: layeredSystemKeys,
                        lock: "system\(index)-0"
                    )
                }
            }
            return Box(0)
        }

        Benchmark("OpenLayers/\(userKeys) keys, one file", configuration: configuration) { benchmark, round in
            let (user, _) = files(round.value, layers: 0)
            round.value += 1
            benchmark.startMeasurement()
            let suite = Defaults.Suite(fileURL: user)
            blackHole(suite[probe])
            benchmark.stopMeasurement()
            precondition(suite[probe] == userKeys / 2)
        } setup: {
            try prepare(layers: 0)
        }

        Benchmark("OpenLayers/\(userKeys) keys, over two system files", configuration: configuration) {
            benchmark,
            round in
            let (user, system) = files(round.value, layers: 2)
            round.value += 1
            benchmark.startMeasurement()
            let suite = Defaults.Suite(fileURL: user, systemFiles: system)
            blackHole(suite[probe])
            benchmark.stopMeasurement()
            precondition(suite[probe] == userKeys / 2)
            guard case .locked(let file, _) = suite.source(ofValueNamed: "system0-0"),
                file.path == system[0].standardizedFileURL.path
            else { preconditionFailure("system0-0 is not locked by \(system[0].path)") }
        } setup: {
            try prepare(layers: 2)
        }
    }
    pair(userKeys: 100, samples: 200)
    pair(userKeys: 10_000, samples: 40)
}
