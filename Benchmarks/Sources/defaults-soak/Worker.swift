// The worker threads: each mixes reads, writes, transactions, exclusive transactions, synchronized
// writes, resets, writes without propagation, suites and observers opened and released, at random
// from its seed, until told to stop.
import DefaultsObservation
import Foundation
import Observation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One worker thread; used only on its own thread.
final class WorkerThread {
    let process: WorkerProcess
    let index: Int
    let syncKey: Defaults.Key<Int>
    private(set) var lastWritten: (sequence: Int, writeStart: Int)?
    private(set) var increments = 0
    private(set) var operations: [String: Int] = [:]

    private var keys: SoakKeys { process.keys }
    private var random: SoakRandom
    private let quietKey: Defaults.Key<Int>
    private var sequence = 0
    private var quietSequence = 0
    private var tagCounter = 0
    private var owners: [Owner] = []
    private var streams: [Task<Void, Never>] = []
    private var heldSuite: Defaults.Suite?
    private var nextRemoveAll: Int
    private let tiedCalls = CallCounter()

    init(process: WorkerProcess, index: Int) {
        self.process = process
        self.index = index
        random = SoakRandom(seed: threadSeed(process.seed, process: process.process, thread: index))
        syncKey = process.keys.syncKey(process: process.process, thread: index)
        quietKey = process.keys.quietKey(process: process.process, thread: index)
        nextRemoveAll = now() + 5_000_000_000 + Int(random.next() % 25_000_000_000)
    }

    /// A value no other write of the run makes (below the third actor's, which start at 10^12).
    private func nextTag() -> Int {
        tagCounter += 1
        return (tagCounter * 16 + index) * 4 + process.process
    }

    private var name: String { "p\(process.process) thread \(index)" }

    func run() {
        let report = process.report
        let name = name
        let quiet = Defaults.observe(quietKey, options: []) { change in
            guard change.newValue < 0 else { return }
            report(
                .failure(check: .withoutPropagation, text: "\(name) was told of \(change.newValue), written inside it")
            )
        }
        let lane = process.lanes[index]
        while !process.isStopping {
            step()
            lane.tick()
            if random.chance(0.3) { usleep(UInt32(random.int(0..<2_000))) }
        }
        quiet.invalidate()
        for task in streams { task.cancel() }
        streams = []
        owners = []
        heldSuite = nil
        do {
            try keys.suite.synchronize()
        } catch {
            report(.failure(check: .libraryErrors, text: "\(name): the last synchronize() threw \(error)"))
        }
    }

    private func step() {
        if index == 0, now() >= nextRemoveAll, process.only.isEmpty || process.only.contains("removeAll") {
            removeAllKeepingTheCounter()
            nextRemoveAll = now() + 15_000_000_000 + Int(random.next() % 30_000_000_000)
            return
        }
        let choice = random.int(0..<100)
        switch choice {
        case 0..<25: count("read", read)
        case 25..<43: count("write", write)
        case 43..<51: count("transaction", transaction)
        case 51..<55: count("exclusiveTransaction", exclusiveIncrement)
        case 55..<67: count("synchronized write", synchronizedWrite)
        case 67..<69: count("reset", reset)
        case 69..<74: count("withoutPropagation", quietWrite)
        case 74..<78: count("suite opened and released", openSuite)
        case 78..<85: count("tied observer made or released", tieObserver)
        case 85..<88: count("updates stream started", startStream)
        case 88..<93: count("model", useModels)
        default: count("observed write", observedWrite)
        }
    }

    private func count(_ name: String, _ operation: () -> Void) {
        guard process.only.isEmpty || process.only.contains(name) else { return }
        operation()
        operations[name, default: 0] += 1
    }

    private func fail(_ check: Check, _ text: String) {
        process.report(.failure(check: check, text: "\(name): \(text)"))
    }

    // MARK: - Operations

    /// Reads every kind of key, and checks the pair in a snapshot and inside a transaction.
    private func read() {
        _ = keys.suite[keys.int]
        _ = keys.suite[keys.string]
        _ = Defaults[keys.bool]
        _ = Defaults[keys.double]
        _ = keys.suite[keys.list]
        _ = keys.suite[keys.profile]
        _ = keys.suite[keys.optional]
        _ = keys.suite[keys.counter]
        let values = keys.suite.storedValues()
        if values["pair.a"] != values["pair.b"] {
            fail(
                .halfTransactions,
                "storedValues() had pair.a \(String(describing: values["pair.a"])), pair.b \(String(describing: values["pair.b"]))"
            )
        }
        let (a, b) = keys.suite.transaction { (keys.suite[keys.pairA], keys.suite[keys.pairB]) }
        if a != b { fail(.halfTransactions, "a transaction read pair.a \(a), pair.b \(b)") }
    }

    private func write() {
        let name = SoakKeys.hotNames[random.int(0..<SoakKeys.hotNames.count)]
        keys.write(name, tag: nextTag())
    }

    /// Writes the pair and some hot keys as one, with a nested transaction that throws and must leave nothing.
    private func transaction() {
        let tag = nextTag()
        let names = (0..<random.int(1..<4)).map { _ in SoakKeys.hotNames[random.int(0..<SoakKeys.hotNames.count)] }
        let rollsBack = random.chance(0.3)
        keys.suite.transaction {
            keys.suite[keys.pairA] = "t\(tag)"
            if rollsBack {
                try? keys.suite.transaction {
                    keys.suite[keys.pairA] = "rolled back \(tag)"
                    throw RollBack()
                }
            }
            for name in names { keys.write(name, tag: nextTag()) }
            keys.suite[keys.pairB] = "t\(tag)"
        }
    }

    /// Adds one to the counter across processes; sometimes moves the pair in the same transaction.
    private func exclusiveIncrement() {
        let tag = nextTag()
        let movesPair = random.chance(0.3)
        do {
            try keys.suite.exclusiveTransaction {
                keys.suite[keys.counter] += 1
                if movesPair {
                    keys.suite[keys.pairA] = "x\(tag)"
                    keys.suite[keys.pairB] = "x\(tag)"
                }
            }
            increments += 1
        } catch {
            fail(.counter, "an exclusive transaction threw \(error)")
        }
    }

    /// Writes this thread's own key with the next number; half the time synchronizes and reports it.
    private func synchronizedWrite() {
        sequence += 1
        let start = now()
        keys.suite[syncKey] = sequence
        lastWritten = (sequence, start)
        guard random.chance(0.5) else { return }
        do {
            try keys.suite.synchronize()
            process.report(.synced(key: syncKey.name, sequence: sequence, writeStart: start, syncEnd: now()))
        } catch {
            fail(.synchronized, "synchronize() threw \(error)")
        }
    }

    /// Every key goes, in an exclusive transaction that puts the counter back as it was.
    private func removeAllKeepingTheCounter() {
        let start = now()
        do {
            try keys.suite.exclusiveTransaction {
                let counter = keys.suite[keys.counter]
                keys.suite.removeAll()
                keys.suite[keys.counter] = counter
            }
            process.report(.removedAll(start: start, end: now()))
            operations["removeAll", default: 0] += 1
        } catch {
            fail(.counter, "the exclusive transaction of removeAll() threw \(error)")
        }
    }

    private func reset() {
        switch random.int(0..<3) {
        case 0: Defaults.reset(keys.string, keys.list)
        case 1: keys.int.reset()
        default: Defaults.reset([keys.optional, keys.profile])
        }
    }

    /// Writes this thread's quiet key: negative inside `withoutPropagation`, positive outside it.
    private func quietWrite() {
        quietSequence += 1
        let value = quietSequence
        if random.chance(0.5) {
            Defaults.withoutPropagation { keys.suite[quietKey] = -value }
        } else {
            keys.suite[quietKey] = value
        }
    }

    /// Opens a suite on the same file (sharing this process's state, or by name, with a state of
    /// its own), uses it, and lets it go, now or a few operations later.
    private func openSuite() {
        let suite =
            if random.chance(0.5) {
                Defaults.Suite(fileURL: process.fileURL)
            } else {
                try! Defaults.Suite(name: "soak")
            }
        let int = Defaults.Key<Int>("hot.int", default: 0, suite: suite)
        _ = suite[int]
        if random.chance(0.5) { suite[int] = nextTag() }
        if random.chance(0.3) {
            let observation = Defaults.observe(int, options: []) { _ in }
            suite[int] = nextTag()
            observation.invalidate()
        }
        if random.chance(0.2) {
            do {
                try suite.synchronize()
            } catch {
                fail(.libraryErrors, "synchronize() of a suite opened by the way threw \(error)")
            }
        }
        heldSuite = random.chance(0.3) ? suite : nil
    }

    /// Makes an owner with an observation of some kind tied to it, or releases one.
    private func tieObserver() {
        if !owners.isEmpty, owners.count >= 6 || random.chance(0.5) {
            owners.remove(at: random.int(0..<owners.count))
            return
        }
        let owner = Owner()
        let calls = tiedCalls
        switch random.int(0..<4) {
        case 0:
            Defaults.observe(keys.int, options: []) { _ in calls.add() }.tieToLifetime(of: owner)
        case 1:
            Defaults.observe(keys: keys.string, keys.bool, options: []) { calls.add() }.tieToLifetime(of: owner)
        case 2:
            Defaults.observe(suite: keys.suite, options: []) { calls.add() }.tieToLifetime(of: owner)
        default:
            Defaults.observe(keys: [keys.list, keys.profile], debounce: .milliseconds(20)) { _ in calls.add() }
                .tieToLifetime(of: owner)
        }
        owners.append(owner)
    }

    /// Starts a task that follows an `updates` stream for a while; the oldest of three is cancelled.
    private func startStream() {
        if streams.count >= 3 { streams.removeFirst().cancel() }
        let limit = random.int(1..<40)
        switch random.int(0..<3) {
        case 0: streams.append(follow(Defaults.updates(keys.double), for: limit))
        case 1: streams.append(follow(Defaults.updates(keys.int, keys.optional, initial: false), for: limit))
        default: streams.append(follow(Defaults.updates([keys.string, keys.list]), for: limit))
        }
    }

    /// A task that takes `limit` elements of `stream`, then ends.
    private func follow<Element: Sendable>(_ stream: AsyncStream<Element>, for limit: Int) -> Task<Void, Never> {
        Task {
            var seen = 0
            for await _ in stream {
                seen += 1
                if seen >= limit { break }
            }
        }
    }

    /// A `@Default` model and an `@ObservableDefault` view-model, made, used and dropped; a write
    /// through the view-model is reported to `withObservationTracking` before it returns.
    private func useModels() {
        let model = DefaultModel(keys: keys)
        model.double = Double(nextTag()) / 16
        _ = model.$double.isDefaultValue
        let viewModel = ChurnViewModel(key: keys.int)
        let fired = Sighting()
        let calls = tracking.arming()
        withObservationTracking {
            _ = viewModel.int
        } onChange: {
            _ = tracking.changed(calls)
            fired.note()
        }
        tracking.armed(calls)
        viewModel.int = nextTag()
        if !fired.happened {
            fail(.synchronousDelivery, "withObservationTracking was not told of a write through its view-model")
        }
    }

    /// A write observed in this process: its observer runs on this thread before the write returns.
    private func observedWrite() {
        let tag = nextTag()
        let seen = Sighting()
        let observation = Defaults.observe(keys.int, options: []) { change in
            if change.newValue == tag { seen.note() }
        }
        keys.suite[keys.int] = tag
        if !seen.happened { fail(.synchronousDelivery, "an observer was not told of a write before it returned") }
        observation.invalidate()
    }
}

/// An error thrown to roll a nested transaction back.
private struct RollBack: Error {}
