import DefaultsObservation
import Foundation
import Observation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The worker threads of one process, and the totals they leave when they stop.
final class WorkerProcess: Sendable {
    /// 0 for the coordinator, 1… for the worker processes.
    let process: Int
    let keys: SoakKeys
    let fileURL: URL
    let lanes: [Lane]
    let seed: UInt64
    /// The only operations to make, when not empty (`--only`, to narrow a failure down).
    let only: Set<String>
    let report: @Sendable (Report) -> Void
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let totals = Mutex(Totals())

    /// What the threads did, summed when each stops.
    struct Totals {
        var increments = 0
        var written: [String: (sequence: Int, writeStart: Int)] = [:]
        var operations: [String: Int] = [:]
    }

    init(
        process: Int,
        threads: Int,
        keys: SoakKeys,
        fileURL: URL,
        seed: UInt64,
        only: Set<String>,
        report: @escaping @Sendable (Report) -> Void
    ) {
        self.process = process
        self.keys = keys
        self.fileURL = fileURL
        self.seed = seed
        self.only = only
        self.report = report
        lanes = (0..<threads).map { Lane("p\(process) thread \($0)") }
    }

    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// Starts every thread.
    func start() {
        for index in lanes.indices {
            let thread = Thread { [self] in
                let worker = WorkerThread(process: self, index: index)
                worker.run()
                totals.withLock { totals in
                    totals.increments += worker.increments
                    if let written = worker.lastWritten { totals.written[worker.syncKey.name] = written }
                    totals.operations.merge(worker.operations, uniquingKeysWith: +)
                }
                finished.signal()
            }
            thread.name = "soak p\(process) worker \(index)"
            thread.stackSize = 4 << 20
            thread.start()
        }
    }

    /// Tells every thread to stop and waits up to `timeout` seconds for all of them; false if one did not.
    func stop(timeout: Double) -> Bool {
        stopping.store(true, ordering: .relaxed)
        let deadline = DispatchTime.now() + timeout
        for _ in lanes where finished.wait(timeout: deadline) == .timedOut { return false }
        return true
    }

    /// Reports the totals, once every thread has stopped.
    func reportTotals() {
        let totals = totals.withLock { $0 }
        for (key, written) in totals.written.sorted(by: { $0.key < $1.key }) {
            report(.written(key: key, sequence: written.sequence, writeStart: written.writeStart))
        }
        report(.increments(totals.increments))
        let rounds = tracking.totals
        report(.operations(name: "withObservationTracking rounds", count: rounds.rounds))
        report(.operations(name: "rounds told while installing", count: rounds.racedRounds))
        report(.operations(name: "later calls of rounds told while installing", count: rounds.racedExtraCalls))
        if rounds.extraCalls > 0 {
            report(
                .failure(
                    check: .trackingOnce,
                    text: "onChange was called \(rounds.extraCalls) times more than once, in \(rounds.rounds) rounds"
                )
            )
        }
        for (name, count) in totals.operations.sorted(by: { $0.key < $1.key }) {
            report(.operations(name: name, count: count))
        }
    }
}

/// A counter that closures running on any thread add to.
final class CallCounter: Sendable {
    private let count = Atomic<Int>(0)

    func add() {
        count.add(1, ordering: .relaxed)
    }

    var value: Int { count.load(ordering: .relaxed) }
}

/// Whether an observer was told one particular value.
final class Sighting: Sendable {
    private let seen = Atomic<Bool>(false)

    func note() {
        seen.store(true, ordering: .relaxed)
    }

    var happened: Bool { seen.load(ordering: .relaxed) }
}
