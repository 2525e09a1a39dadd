// Suites in etcd (Integrations/DefaultsEtcd) against a real etcd started for the run: how soon a
// put reaches an observer, next to etcd's own watch read by a bare client in the same run; what a
// read costs next to a file suite's; and what ten processes writing at once cost next to one.
//
// Registered only where Debian's etcd-server is installed (`/usr/bin/etcd`, or `etcd` on the PATH).

import AsyncHTTPClient
import Benchmark
import Defaults
import DefaultsEtcd
import DefaultsObservation
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One etcd member for the whole run, on a free loopback port, its data in memory where `/dev/shm`
/// exists; stopped when the process exits.
enum BenchEtcd {
    /// The `etcd` executable, if there is one.
    static let executable: String? = {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
        return folders.map { "\($0)/etcd" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// The member's client URL; it serves once this returns.
    static let endpoint: URL = start()

    /// The process id, for the exit handler.
    nonisolated(unsafe) private static var pid: pid_t = 0

    private static func start() -> URL {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : Scratch.root
        var template = Array((base + "/defaults-bench-etcd-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "cannot make etcd's data folder")
        let directory = String(cString: made!)
        let client = "http://127.0.0.1:\(freePort())"
        let peer = "http://127.0.0.1:\(freePort())"
        let (started, ready) = launch([
            "--name", "bench", "--data-dir", directory + "/data", "--listen-client-urls", client,
            "--advertise-client-urls", client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", "bench=\(peer)",
        ])
        pid = started
        dataDirectory = directory
        atexit {
            kill(BenchEtcd.pid, SIGKILL)
            var status: Int32 = 0
            waitpid(BenchEtcd.pid, &status, 0)
            try? FileManager.default.removeItem(atPath: BenchEtcd.dataDirectory)
        }
        precondition(ready.wait(timeout: .now() + 60) == .success, "etcd did not start")
        return URL(string: client)!
    }

    /// Starts `etcd` with `arguments`; the semaphore is signalled at its own "ready" line.
    ///
    /// NB: its own "ready" line, not a guess at how long it takes; the log is drained after it, so
    /// etcd never blocks on a full pipe.
    static func launch(_ arguments: [String]) -> (pid: pid_t, ready: DispatchSemaphore) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable!)
        process.arguments = arguments
        let log = Pipe()
        process.standardError = log
        process.standardOutput = FileHandle.nullDevice
        try! process.run()
        let ready = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var text = ""
            var isReady = false
            while true {
                let data = log.fileHandleForReading.availableData
                if data.isEmpty { break }
                guard !isReady else { continue }
                text += String(decoding: data, as: UTF8.self)
                if text.contains("ready to serve client requests") {
                    isReady = true
                    ready.signal()
                }
            }
        }
        return (process.processIdentifier, ready)
    }

    nonisolated(unsafe) private static var dataDirectory = ""

    static func freePort() -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        precondition(bound, "no free port")
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// `/v3/kv/put` of `value` (JSON text) under `key`, at `member` (the run's one member unless
    /// given), waited for: etcd has committed it when this returns.
    static func put(_ key: String, _ value: String, at member: URL? = nil) {
        let body =
            #"{"key":"\#(Data(key.utf8).base64EncodedString())","value":"\#(Data(value.utf8).base64EncodedString())"}"#
        var request = try! HTTPClient.Request(url: (member ?? endpoint).absoluteString + "/v3/kv/put", method: .POST)
        request.body = .string(body)
        let response = try! HTTPClient.shared.execute(request: request).wait()
        precondition(response.status == .ok, "put failed: \(response.status)")
    }

    /// The number of keys under `prefix`.
    static func count(under prefix: String) -> Int {
        var end = Array(prefix.utf8)
        end[end.count - 1] += 1
        let body =
            #"{"key":"\#(Data(prefix.utf8).base64EncodedString())","range_end":"\#(Data(end).base64EncodedString())","count_only":true}"#
        var request = try! HTTPClient.Request(url: endpoint.absoluteString + "/v3/kv/range", method: .POST)
        request.body = .string(body)
        let response = try! HTTPClient.shared.execute(request: request).wait()
        struct Counted: Decodable { var count: String? }
        let counted = try! JSONDecoder().decode(Counted.self, from: Data(response.body!.readableBytesView))
        return Int(counted.count ?? "0")!
    }
}

/// etcd's own watch of one key, read by a bare client: async-http-client streaming `/v3/watch`, each
/// line one JSON message; every value of the key (an integer) is recorded when its message arrives.
///
/// The floor under the suite's delivery: the same watch, with no store, no comparison and no
/// observers.
final class BareEtcdWatch: HTTPClientResponseDelegate, @unchecked Sendable {  // called on its event loop only
    typealias Response = Void

    private let arrivals: Arrivals
    private var pending: [UInt8] = []
    let created = DispatchSemaphore(value: 0)

    private struct Message: Decodable {
        struct Result: Decodable {
            struct Event: Decodable {
                struct KeyValue: Decodable { var value: String? }
                var kv: KeyValue?
            }
            var created: Bool?
            var events: [Event]?
        }
        var result: Result?
    }

    init(key: String, arrivals: Arrivals) {
        self.arrivals = arrivals
        let body = #"{"create_request":{"key":"\#(Data(key.utf8).base64EncodedString())"}}"#
        var request = try! HTTPClient.Request(url: BenchEtcd.endpoint.absoluteString + "/v3/watch", method: .POST)
        request.body = .string(body)
        _ = HTTPClient.shared.execute(request: request, delegate: self, deadline: nil)
        precondition(created.wait(timeout: .now() + 10) == .success, "the bare watch did not start")
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        pending += buffer.readableBytesView
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = pending[..<newline]
            defer { pending.removeSubrange(...newline) }
            guard let message = try? JSONDecoder().decode(Message.self, from: Data(line)),
                let result = message.result
            else { continue }
            if result.created == true { created.signal() }
            for event in result.events ?? [] {
                guard let encoded = event.kv?.value, let bytes = Data(base64Encoded: encoded),
                    let value = Int(String(decoding: bytes, as: UTF8.self))
                else { continue }
                arrivals.record(value)
            }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {}
}

/// What an etcd latency benchmark needs: the key it puts, and when values arrived at its watcher.
struct EtcdLatencyFixture {
    let key: String
    let arrivals: Arrivals
    let round: Box<Int>
    let keepAlive: [Any]
    /// Where the puts go: the run's one member unless given.
    var member: URL? = nil
}

/// One put per iteration, from this process's HTTP client, and its arrival at the watcher here;
/// records the three latency metrics ("latency" from etcd's answer to the put, "endToEnd" from the
/// put being sent).
func measureEtcdLatency(_ benchmark: Benchmark, _ fixture: EtcdLatencyFixture) {
    for _ in benchmark.scaledIterations {
        fixture.round.value += 1
        let value = fixture.round.value
        let called = monotonicNanoseconds()
        BenchEtcd.put(fixture.key, "\(value)", at: fixture.member)
        let returned = monotonicNanoseconds()
        let arrived = fixture.arrivals.time(of: value)
        benchmark.measurement(latencyMetric, max(0, arrived - returned))
        benchmark.measurement(earlyMetric, max(0, returned - arrived))
        benchmark.measurement(endToEndMetric, arrived - called)
    }
}

func etcd() {
    guard BenchEtcd.executable != nil else { return }
    let latency = latencyConfiguration(.microseconds, warmup: 20, maxDuration: .seconds(120), writes: latencyWrites)

    // A suite in etcd with an observer of the key the benchmark puts.
    Benchmark("Etcd/put → Defaults observer", configuration: latency) { benchmark, fixture in
        measureEtcdLatency(benchmark, fixture)
    } setup: {
        let suite = Defaults.Suite(etcd: [BenchEtcd.endpoint], prefix: "/bench/latency/", cache: .none)
        let arrivals = Arrivals()
        let observation = Defaults.observe(Defaults.Key<Int>("stamp", default: 0, suite: suite), options: []) {
            change in arrivals.record(change.newValue)
        }
        return EtcdLatencyFixture(
            key: "/bench/latency/stamp",
            arrivals: arrivals,
            round: Box(0),
            keepAlive: [suite, observation]
        )
    }

    // The same, with the suite watching over TLS (a member that asks for client certificates);
    // the puts still go over plain HTTP, to a second client URL of that member.
    Benchmark("Etcd/put → Defaults observer over TLS", configuration: latency) { benchmark, fixture in
        measureEtcdLatency(benchmark, fixture)
    } setup: {
        let member = BenchEtcdTLS.shared
        let suite = Defaults.Suite(
            backend: EtcdBackend(endpoints: [member.https], prefix: "/bench/tls/", cache: .none, tls: member.tls)
        )
        let arrivals = Arrivals()
        let observation = Defaults.observe(Defaults.Key<Int>("stamp", default: 0, suite: suite), options: []) {
            change in arrivals.record(change.newValue)
        }
        return EtcdLatencyFixture(
            key: "/bench/tls/stamp",
            arrivals: arrivals,
            round: Box(0),
            keepAlive: [suite, observation],
            member: member.http
        )
    }

    // The same puts, heard through etcd's own watch by a bare client.
    Benchmark("Etcd/put → bare etcd watch (async-http-client)", configuration: latency) { benchmark, fixture in
        measureEtcdLatency(benchmark, fixture)
    } setup: {
        let arrivals = Arrivals()
        let watch = BareEtcdWatch(key: "/bench/bare/stamp", arrivals: arrivals)
        return EtcdLatencyFixture(key: "/bench/bare/stamp", arrivals: arrivals, round: Box(0), keepAlive: [watch])
    }

    // A read from a suite in etcd: from memory, as from a file suite (ReadInt/Defaults.file).
    Benchmark("ReadInt/Defaults.etcd", configuration: perOperation) { benchmark, fixture in
        let (suite, key) = fixture
        for _ in benchmark.scaledIterations { blackHole(suite[key]) }
    } setup: { () throws -> (Defaults.Suite, Defaults.Key<Int>) in
        let fixture = intSuite(Defaults.Suite(etcd: [BenchEtcd.endpoint], prefix: "/bench/read/", cache: .none))
        try fixture.0.synchronize()
        return fixture
    }

    let writers = Benchmark.Configuration(
        metrics: [.wallClock],
        timeUnits: .milliseconds,
        warmupIterations: 1,
        scalingFactor: .one,
        maxDuration: .seconds(60),
        maxIterations: 10
    )
    let round = Box(0)

    /// `processes` peers each write `keys` distinct keys to one etcd prefix, synchronizing every 100.
    ///
    /// Measured from "go" (every peer started, its suite open) to the last "done". Each iteration
    /// writes under a new prefix, so every write is a new key.
    func writersBenchmark(processes: Int, keys: Int) {
        let name = "Etcd/\(processes) process\(processes == 1 ? "" : "es") × \(keys) writes, synchronize every 100"
        Benchmark(name, configuration: writers) { benchmark in
            round.value += 1
            let prefix = "/bench/writers-\(processes)-\(round.value)/"
            let peers = (0..<processes)
                .map { index in
                    try! Peer([
                        "etcd-write-keys", BenchEtcd.endpoint.absoluteString, prefix, "p\(index)", "\(keys)", "100",
                    ])
                }
            for peer in peers { precondition(peer.readLine() == "ready") }
            benchmark.startMeasurement()
            for peer in peers { peer.send("go") }
            for peer in peers { precondition(peer.readLine() == "done") }
            benchmark.stopMeasurement()
            for peer in peers { peer.finish() }
            let written = BenchEtcd.count(under: prefix)
            precondition(written == processes * keys, "lost \(processes * keys - written) keys")
        }
    }
    writersBenchmark(processes: 1, keys: 10_000)
    writersBenchmark(processes: 10, keys: 1_000)

    // The member a suite watches from stops (SIGSTOP: it takes connections and answers nothing);
    // an operator's put through another member: the time until the suite's observer has it.
    let stalls = Benchmark.Configuration(
        metrics: [.wallClock],
        timeUnits: .milliseconds,
        warmupIterations: 1,
        scalingFactor: .one,
        maxDuration: .seconds(300),
        maxIterations: 11
    )
    Benchmark("Etcd/SIGSTOP of the watched member → a put through another observed", configuration: stalls) {
        benchmark,
        cluster in
        round.value += 1
        let target = cluster.follower()
        let others = cluster.endpoints.filter { $0 != target.endpoint }
        let prefix = "/bench/stall-\(round.value)/"
        let suite = Defaults.Suite(
            backend: EtcdBackend(endpoints: [target.endpoint] + others, prefix: prefix, cache: .none)
        )
        let arrivals = Arrivals()
        let observation = Defaults.observe(Defaults.Key<Int>("stamp", default: 0, suite: suite), options: []) {
            change in arrivals.record(change.newValue)
        }
        // NB: the watch is live (from the member about to stall) before the clock starts.
        BenchEtcd.put(prefix + "stamp", "1", at: others[0])
        _ = arrivals.time(of: 1)
        benchmark.startMeasurement()
        kill(target.pid, SIGSTOP)
        BenchEtcd.put(prefix + "stamp", "2", at: others[0])
        _ = arrivals.time(of: 2)
        benchmark.stopMeasurement()
        kill(target.pid, SIGCONT)
        observation.invalidate()
        blackHole(suite)
    } setup: {
        BenchEtcdCluster.shared
    }
}
