// Issue 34: the example HTTP service (Examples/greeter-service) answering /greet, which reads its
// settings per request (the rate limit, the greeting, whether to shout), against the same route
// with constants in their place (/greet-constant): at least 0.95× the answers per second.
//
// The service is the real executable, built in release (`Benchmarks/ratios` builds it), run as a
// process of its own over a settings file; the client is a loop here on two kept-alive loopback
// connections, one per route, as wrk's is, the routes taking turns within each round. Registered
// only where that build exists.

import Benchmark
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The greeter service for the whole run, started at first use; killed when the process exits.
enum BenchGreeter {
    /// The release build of the example, if there is one.
    static let executable: String? = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent("Examples/greeter-service/.build/release/greeter-service").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }()

    /// The port it listens on; it answers once this returns.
    static let port: Int = start()

    nonisolated(unsafe) private static var pid: pid_t = 0

    private static func start() -> Int {
        let settings = Scratch.url("greeter-settings.json")
        // A limit no run reaches: every answer is a greeting, never a 429.
        try! Data(#"{"rateLimit": 1000000000, "greeting": "Hello", "shout": false}"#.utf8).write(to: settings)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable!)
        process.arguments = ["--port", "0", "--settings", settings.path]
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "CREDENTIALS_DIRECTORY")
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try! process.run()
        pid = process.processIdentifier
        atexit {
            kill(BenchGreeter.pid, SIGKILL)
            var status: Int32 = 0
            waitpid(BenchGreeter.pid, &status, 0)
        }
        // Its own "listening on" line; the output is drained after it, so it never blocks.
        let ready = DispatchSemaphore(value: 0)
        let found = Mutex<Int?>(nil)
        Thread.detachNewThread {
            var text = ""
            while true {
                let data = output.fileHandleForReading.availableData
                if data.isEmpty { break }
                guard found.withLock({ $0 }) == nil else { continue }
                text += String(decoding: data, as: UTF8.self)
                if let match = text.firstMatch(of: /listening on (\d+)\n/) {
                    found.withLock { $0 = Int(match.1) }
                    ready.signal()
                }
            }
        }
        precondition(ready.wait(timeout: .now() + 60) == .success, "greeter-service did not start")
        return found.withLock { $0 }!
    }
}

/// One kept-alive HTTP/1.1 connection to the greeter: a request written, its whole answer read.
///
/// Used by one benchmark's loop at a time, on its thread.
final class GreeterConnection: @unchecked Sendable {
    private let descriptor: Int32
    private var buffer = [UInt8](repeating: 0, count: 4096)

    init(port: Int) {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(descriptor >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        precondition(connected == 0, "cannot connect to greeter-service")
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(descriptor) }

    /// Sends `request` (one GET) and reads its whole answer; returns the body's length, and stops
    /// the run on anything but a 200 with a `Content-Length`.
    func get(_ request: [UInt8]) -> Int {
        request.withUnsafeBytes { bytes in
            var sent = 0
            while sent < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + sent, bytes.count - sent)
                if written < 0, errno == EINTR { continue }
                precondition(written > 0, "greeter-service closed the connection")
                sent += written
            }
        }
        // One answer: its head, then as many body bytes as its Content-Length says.
        var received: [UInt8] = []
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0, errno == EINTR { continue }
            precondition(count > 0, "greeter-service closed the connection")
            received += buffer[..<count]
            guard let end = received.firstRange(of: Array("\r\n\r\n".utf8)) else { continue }
            let head = String(decoding: received[..<end.lowerBound], as: UTF8.self)
            precondition(head.hasPrefix("HTTP/1.1 200"), "greeter-service answered \(head)")
            let length = head.lowercased().firstMatch(of: /\r\ncontent-length:\s*(\d+)/).flatMap { Int($0.1) }
            precondition(length != nil, "greeter-service answered without a Content-Length: \(head)")
            // Requests are not pipelined: nothing of a next answer can follow this one.
            if received.count - end.upperBound >= length! { return length! }
        }
    }
}

/// The time of one answer of /greet, per request, in nanoseconds: one sample per round.
let settingsAnswerMetric: BenchmarkMetric = .custom(
    "settingsAnswer",
    polarity: .prefersSmaller,
    useScalingFactor: false
)
/// The time of one answer of /greet-constant, per request, in nanoseconds: one sample per round.
let constantAnswerMetric: BenchmarkMetric = .custom(
    "constantAnswer",
    polarity: .prefersSmaller,
    useScalingFactor: false
)
/// The answer rate of /greet over that of /greet-constant in the same round, in thousandths.
let answerRateMetric: BenchmarkMetric = .custom("rateRatio", polarity: .prefersLarger, useScalingFactor: false)

func answerRate() {
    guard BenchGreeter.executable != nil else { return }
    // NB: the two routes take turns within each round (and which goes first alternates), so a
    // machine that slows down or speeds up during the run weighs on both alike: measured apart,
    // one after the other, their ratio moved from 0.84 to 1.03 between runs with the floor of
    // the write benchmarks moving by 40%.
    let configuration = Benchmark.Configuration(
        metrics: [settingsAnswerMetric, constantAnswerMetric, answerRateMetric],
        warmupIterations: 3,
        scalingFactor: .one,
        maxDuration: .seconds(20),
        maxIterations: 60
    )
    let requests = 300
    let settingsRequest = Array("GET /greet?name=Ada HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
    let constantRequest = Array("GET /greet-constant?name=Ada HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
    let round = Mutex(0)
    Benchmark(
        "AnswerRate/GET /greet (settings read per request) and /greet-constant, in turns",
        configuration: configuration
    ) {
        (benchmark: Benchmark, connections: [GreeterConnection]) in
        for _ in benchmark.scaledIterations {
            let settingsFirst = round.withLock { round in
                defer { round += 1 }
                return round % 2 == 0
            }
            var settings = Duration.zero
            var constant = Duration.zero
            let clock = ContinuousClock()
            for turn in 0..<2 {
                let isSettings = (turn == 0) == settingsFirst
                let connection = connections[isSettings ? 0 : 1]
                let request = isSettings ? settingsRequest : constantRequest
                let elapsed = clock.measure {
                    for _ in 0..<requests { blackHole(connection.get(request)) }
                }
                if isSettings { settings = elapsed } else { constant = elapsed }
            }
            let settingsNanoseconds = settings / .nanoseconds(1) / Double(requests)
            let constantNanoseconds = constant / .nanoseconds(1) / Double(requests)
            benchmark.measurement(settingsAnswerMetric, Int(settingsNanoseconds))
            benchmark.measurement(constantAnswerMetric, Int(constantNanoseconds))
            // Answers per second are the inverse of the time per answer.
            benchmark.measurement(answerRateMetric, Int((constantNanoseconds / settingsNanoseconds * 1000).rounded()))
        }
    } setup: { () -> [GreeterConnection] in
        let connections = [GreeterConnection(port: BenchGreeter.port), GreeterConnection(port: BenchGreeter.port)]
        // Both routes answer "Hello, Ada!": the same bytes, so only the reads differ.
        precondition(connections[0].get(settingsRequest) == "Hello, Ada!\n".utf8.count)
        precondition(connections[1].get(constantRequest) == "Hello, Ada!\n".utf8.count)
        return connections
    }
}
