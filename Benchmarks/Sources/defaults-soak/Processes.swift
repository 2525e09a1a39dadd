import DefaultsObservation
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What the soak is asked to do.
struct Options: Sendable {
    var seconds = 600
    var seed = UInt64.random(in: 1..<UInt64(1) << 48)
    var threads = 8
    var processes = 2
    var workerThreads = 4
    var toolPath = ""
    /// The only operations the worker threads make, when not empty.
    var only: Set<String> = []
    /// Whether the third actor runs.
    var thirdActor = true
    /// The RSS at which the run stops at once.
    var rssLimitMegabytes = 1024
}

/// A worker process: its pipes, and the thread that reads its reports.
final class Child: @unchecked Sendable {  // `process` is only started and waited for
    let index: Int
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let writeLock = Mutex(())

    init(index: Int, executable: String, arguments: [String]) {
        self.index = index
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.standardError
    }

    var pid: Int32 { process.processIdentifier }

    /// Starts it, and a thread that hands its reports to `ledger`.
    func start(ledger: Ledger) throws {
        try process.run()
        let index = index
        let descriptor = output.fileHandleForReading.fileDescriptor
        let thread = Thread {
            let lines = LineReader(descriptor: descriptor)
            while let line = lines.next() {
                if line == "ready" {
                    ledger.markReady(index)
                } else if let report = Report(line: line) {
                    ledger.handle(report, from: index)
                } else {
                    Output.line("p\(index): \(line)")
                }
            }
        }
        thread.name = "soak reports of p\(index)"
        thread.start()
    }

    /// Sends one command (lines) to it; a process that is gone is not an error here.
    func send(_ lines: [String]) {
        writeLock.withLock { _ in
            let data = Data(lines.map { $0 + "\n" }.joined().utf8)
            _ = writeAll(data, to: input.fileHandleForWriting.fileDescriptor)
        }
    }
}

/// Reads the raw file over and over, as any other program might, and checks that it parses, that
/// the pair is whole, and keeps samples of the `sync.*` keys for the ledger.
final class RawReader: Sendable {
    let lane = Lane("file reader")
    private let path: String
    private let ledger: Ledger
    private let thirdActor: ThirdActor
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let counts = Mutex((reads: 0, excused: 0))

    init(path: String, ledger: Ledger, thirdActor: ThirdActor) {
        self.path = path
        self.ledger = ledger
        self.thirdActor = thirdActor
    }

    /// Reads it once: the members, or `nil` (and the failure recorded unless the third actor excuses it).
    @discardableResult
    func readOnce(sample: Bool) -> [String: Any]? {
        let start = now()
        let data = readWholeFile(path)
        let end = now()
        guard let data, let members = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            if thirdActor.excuses(readFrom: start, to: end) {
                counts.withLock { $0.excused += 1 }
            } else {
                let what =
                    data.map { "did not parse: \(String(decoding: $0.prefix(120), as: UTF8.self))" } ?? "was missing"
                ledger.fail(.parses, "the file read at \(ledger.at(start)) \(what)")
            }
            return nil
        }
        counts.withLock { $0.reads += 1 }
        let pairA = members["pair.a"] as? String
        let pairB = members["pair.b"] as? String
        if pairA != pairB {
            ledger.fail(
                .halfTransactions,
                "the file read at \(ledger.at(start)) had pair.a \(pairA ?? "nothing"), pair.b \(pairB ?? "nothing")"
            )
        }
        if sample {
            var values: [String: Int] = [:]
            for (key, value) in members where key.hasPrefix("sync.") {
                if let number = value as? Int { values[key] = number }
            }
            ledger.addSample(Ledger.Sample(start: start, end: end, values: values))
        }
        return members
    }

    func start() {
        let thread = Thread { [self] in
            var lastSample = 0
            while !stopping.load(ordering: .relaxed) {
                let sample = now() - lastSample >= 500_000_000
                if sample { lastSample = now() }
                readOnce(sample: sample)
                lane.tick()
                usleep(3_000)
            }
            finished.signal()
        }
        thread.name = "soak file reader"
        thread.start()
    }

    func stop(timeout: Double) -> Bool {
        stopping.store(true, ordering: .relaxed)
        return finished.wait(timeout: .now() + timeout) == .success
    }

    var totals: (reads: Int, excused: Int) { counts.withLock { $0 } }
}
