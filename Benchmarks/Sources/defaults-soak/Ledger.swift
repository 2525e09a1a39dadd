// What the coordinator learns during the run, from its own threads and the worker processes.
import Foundation

/// Every report of every process, the samples of the file the reader took, and the waits of the
/// coordinator's last phase.
final class Ledger: @unchecked Sendable {  // every stored property only under `condition`
    /// A synchronized write: `key` held `sequence`, written at `writeStart`, synchronized by `syncEnd`.
    struct SyncRecord {
        let sequence: Int
        let writeStart: Int
        let syncEnd: Int
    }

    /// The `sync.*` keys of the file as read between `start` and `end`.
    struct Sample {
        let start: Int
        let end: Int
        let values: [String: Int]
    }

    /// How one check went wrong: how often, and the first few times.
    struct Failures {
        var count = 0
        var first: [String] = []
    }

    let runStart: Int
    private let condition = NSCondition()
    private var failures: [Check: Failures] = [:]
    private var libraryErrors = Failures()
    private var syncRecords: [String: [SyncRecord]] = [:]
    private var syncReports = 0
    private var removeAlls: [(start: Int, end: Int)] = []
    private var samples: [Sample] = []
    private var samplesChecked = 0
    private var keysChecked = 0
    private var written: [String: (sequence: Int, writeStart: Int)] = [:]
    private var increments = 0
    private var operations: [String: Int] = [:]
    private var stopped: Set<Int> = []
    private var ready: Set<Int> = []
    private var observerResults: [String: [Int: (count: Int, mismatches: [String])]] = [:]
    private var progress: [Int: (time: Int, counts: [Int])] = [:]

    init(runStart: Int) {
        self.runStart = runStart
    }

    /// Seconds since the run started, for messages.
    func at(_ time: Int) -> String {
        "+" + seconds(time - runStart)
    }

    /// Takes in one report of process `process`.
    func handle(_ report: Report, from process: Int) {
        condition.withLock {
            switch report {
            case .progress(let time, let counts):
                progress[process] = (time, counts)
            case .synced(let key, let sequence, let writeStart, let syncEnd):
                syncRecords[key, default: []]
                    .append(SyncRecord(sequence: sequence, writeStart: writeStart, syncEnd: syncEnd))
                syncReports += 1
            case .removedAll(let start, let end):
                removeAlls.append((start, end))
            case .libraryError(let time, let text):
                libraryErrors.count += 1
                if libraryErrors.first.count < 10 { libraryErrors.first.append("p\(process) at \(at(time)): \(text)") }
            case .failure(let check, let text):
                recordFailure(check, "p\(process): \(text)")
            case .written(let key, let sequence, let writeStart):
                written[key] = (sequence, writeStart)
            case .increments(let count):
                increments += count
            case .operations(let name, let count):
                operations[name, default: 0] += count
            case .stopped:
                stopped.insert(process)
            case .observers(let round, let count, let mismatches):
                observerResults[round, default: [:]][process] = (count, mismatches)
            }
            condition.broadcast()
        }
    }

    private func recordFailure(_ check: Check, _ text: String) {
        failures[check, default: Failures()].count += 1
        if failures[check]!.first.count < 10 { failures[check]!.first.append(text) }
    }

    /// Records a failure the coordinator itself saw.
    func fail(_ check: Check, _ text: String) {
        condition.withLock { recordFailure(check, text) }
    }

    func failures(of check: Check) -> Failures {
        condition.withLock { failures[check] ?? Failures() }
    }

    var libraryErrorReports: Failures { condition.withLock { libraryErrors } }

    func markReady(_ process: Int) {
        condition.withLock {
            ready.insert(process)
            condition.broadcast()
        }
    }

    /// Waits up to `timeout` seconds for `done` to hold; false if it did not.
    func wait(timeout: Double, until done: (Ledger) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !done(self) {
            guard condition.wait(until: deadline) else { return done(self) }
        }
        return true
    }

    // NB: the accessors below are for `wait(timeout:until:)`, whose closure runs under the lock.
    func isReady(_ processes: Int) -> Bool { ready.count == processes }
    func haveStopped(_ processes: [Int]) -> Bool { processes.allSatisfy { stopped.contains($0) } }
    func haveObserverResults(_ round: String, from processes: [Int]) -> Bool {
        processes.allSatisfy { observerResults[round]?[$0] != nil }
    }

    func observerResults(_ round: String) -> [Int: (count: Int, mismatches: [String])] {
        condition.withLock { observerResults[round] ?? [:] }
    }

    /// The progress counters process `process` reported last, and when.
    func lastProgress(of process: Int) -> (time: Int, counts: [Int])? {
        condition.withLock { progress[process] }
    }

    var totals: (increments: Int, operations: [String: Int], syncReports: Int, removeAlls: Int) {
        condition.withLock { (increments, operations, syncReports, removeAlls.count) }
    }

    // MARK: - Synchronized values

    /// Keeps a sample of the file's `sync.*` keys, checked once every report it depends on is in.
    func addSample(_ sample: Sample) {
        condition.withLock { samples.append(sample) }
    }

    /// Checks the samples that ended before `horizon`: every key a thread had synchronized before
    /// a sample began holds that value or a later one in it, unless a `removeAll()` that ended
    /// after the value was written had begun before the sample ended.
    func checkSamples(before horizon: Int) {
        condition.withLock {
            while let sample = samples.first, sample.end < horizon {
                samples.removeFirst()
                samplesChecked += 1
                for (key, records) in syncRecords {
                    guard let record = records.last(where: { $0.syncEnd < sample.start }) else { continue }
                    if removeAlls.contains(where: { $0.end > record.writeStart && $0.start < sample.end }) { continue }
                    keysChecked += 1
                    let value = sample.values[key]
                    if value == nil || value! < record.sequence {
                        recordFailure(
                            .synchronized,
                            "the file read at \(at(sample.start)) had \(key) = \(value.map(String.init) ?? "nothing"), "
                                + "but \(record.sequence) was synchronized at \(at(record.syncEnd))"
                        )
                    }
                }
            }
            // NB: a record older than the last one before the oldest sample to check is not needed again.
            let oldest = samples.first?.start ?? horizon
            for key in syncRecords.keys {
                guard let keep = syncRecords[key]!.lastIndex(where: { $0.syncEnd < oldest }), keep > 0 else { continue }
                syncRecords[key]!.removeFirst(keep)
            }
        }
    }

    /// Checks each thread's key after every process stopped and synchronized.
    ///
    /// It holds the last value the thread wrote, or nothing if a `removeAll()` ended after that
    /// write began. Returns how many keys were checked.
    func checkFinalValues(_ fresh: [String: Int]) -> Int {
        condition.withLock {
            for (key, last) in written.sorted(by: { $0.key < $1.key }) {
                let value = fresh[key]
                if value == last.sequence { continue }
                if value == nil, removeAlls.contains(where: { $0.end > last.writeStart }) { continue }
                recordFailure(
                    .synchronized,
                    "at the end \(key) = \(value.map(String.init) ?? "nothing"), but its thread last wrote "
                        + "\(last.sequence) and synchronized after it"
                )
            }
            return written.count
        }
    }

    var sampleTotals: (samples: Int, keys: Int) { condition.withLock { (samplesChecked, keysChecked) } }
}
