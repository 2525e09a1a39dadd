import Defaults
import DefaultsBackendTesting
import DefaultsObservation
import DefaultsTestSupport
import Foundation
import Observation
import Testing

@Observable
final class FleetSettingsModel: @unchecked Sendable {  // the wrapper is set once, in init; values live in the store
    @ObservationIgnored @ObservableDefault<Int> var rateLimit: Int

    init(key: Defaults.Key<Int>) {
        _rateLimit = ObservableDefault(key)
    }
}

/// Two machines: two backends over one shared table, each with a suite of its own.
struct TwoMachines {
    let table = SharedTable()
    let hereBackend: SharedDictionaryBackend
    let here: Defaults.Suite
    let there: Defaults.Suite
    let hereKey: Defaults.Key<Int>
    let thereKey: Defaults.Key<Int>

    init() {
        hereBackend = SharedDictionaryBackend(table)
        here = Defaults.Suite(backend: hereBackend)
        there = Defaults.Suite(backend: SharedDictionaryBackend(table))
        hereKey = Defaults.Key<Int>("rateLimit", default: 100, suite: here)
        thereKey = Defaults.Key<Int>("rateLimit", default: 100, suite: there)
    }
}

/// A backend written outside the package, as a user would, reached by every part of the library.
@Suite struct OutsideBackendTests {
    @Test func passesTheConformanceChecks() throws {
        let table = SharedTable()
        try BackendConformance(
            makeBackend: { space in SharedDictionaryBackend(table, space: space) },
            makeUnreachableBackend: { space in
                let unreachable = SharedTable()
                unreachable.setUnreachable(true)
                return SharedDictionaryBackend(unreachable, space: space)
            }
        )
        .run()
    }

    @Test func aWriteOnOneMachineReachesEveryKindOfObserverOnTheOtherOnce() async throws {
        let machines = TwoMachines()
        let key = machines.thereKey
        let told = EventLog<String>()
        let observation = Defaults.observe(key, options: []) { told.append("observe \($0.oldValue)→\($0.newValue)") }
        let keysObservation = Defaults.observe(keys: key, options: []) { told.append("observe(keys:)") }
        let suiteObservation = Defaults.observe(suite: machines.there, options: []) { told.append("observe(suite:)") }
        let clock = ManualClock()
        let debounced = Defaults.observe(keys: key, debounce: .milliseconds(200), clock: clock) { _ in
            told.append("debounced")
        }
        let model = FleetSettingsModel(key: key)
        withObservationTracking {
            _ = model.rateLimit
        } onChange: {
            told.append("withObservationTracking")
        }
        // NB: made here, so the stream listens from now; Observations looks at the model when
        // iterated, and skips the value before the change however late that is.
        let updates = Defaults.updates(key, initial: false)
        let streamed = Task {
            for await value in updates {
                told.append("updates \(value)")
                break
            }
        }
        let observed = Task {
            for await value in Observations({ model.rateLimit }) where value != 100 {
                told.append("Observations \(value)")
                break
            }
        }

        machines.here[machines.hereKey] = 250
        try machines.here.synchronize()

        await streamed.value
        await observed.value
        #expect(await told.wait(forCount: 6))
        await clock.waitForSleepers()
        clock.advance(by: .milliseconds(200))
        #expect(await told.wait(forCount: 7))
        #expect(
            Set(told.all) == [
                "observe 100→250", "observe(keys:)", "observe(suite:)", "withObservationTracking", "updates 250",
                "Observations 250", "debounced",
            ]
        )
        #expect(told.count == 7, "\(told.all)")
        #expect(machines.there[key] == 250)
        #expect(model.rateLimit == 250)
        _ = (observation, keysObservation, suiteObservation, debounced)
    }

    @Test func aWriteOfTheSameValueCommitsNothingAndTellsNobody() async throws {
        let machines = TwoMachines()
        let told = EventLog<Int>()
        let observation = Defaults.observe(machines.thereKey, options: []) { told.append($0.newValue) }
        machines.here[machines.hereKey] = 6
        try machines.here.synchronize()
        #expect(await told.wait(forCount: 1))
        let commits = machines.table.counts.commits
        machines.here[machines.hereKey] = 6
        try machines.here.synchronize()
        #expect(machines.table.counts.commits == commits)
        // A later change arrives alone: the write of the same value made no event in between.
        machines.here[machines.hereKey] = 7
        try machines.here.synchronize()
        #expect(await told.wait(forCount: 2))
        #expect(told.all == [6, 7])
        _ = observation
    }

    @Test func anExclusiveTransactionWhoseReadChangedOnAnotherMachineRunsAgainAndLosesNoIncrement() async {
        let machines = TwoMachines()
        let (here, there) = (machines.here, machines.there)
        let (hereKey, thereKey) = (machines.hereKey, machines.thereKey)
        let hereBackend = machines.hereBackend
        // NB: the other machine commits between this one's read (100) and its commit, always:
        // from the table's hook, on a thread of its own, as a second machine would. Its report
        // reaches this machine during the commit that conflicts, as a backend keeping the
        // protocol's order would send it; a report of it queued past this machine's next commit
        // would put the older value over the newer one (the protocol forbids such a backend).
        machines.table.beforeNextConditionalCommit {
            let committed = DispatchSemaphore(value: 0)
            Thread {
                #expect(throws: Never.self) { try there.exclusiveTransaction { there[thereKey] += 1 } }
                committed.signal()
            }
            .start()
            committed.wait()
            hereBackend.waitForReports()
        }
        let runs = await offThePool {
            var runs = 0
            #expect(throws: Never.self) {
                try here.exclusiveTransaction {
                    runs += 1
                    here[hereKey] += 1
                }
            }
            return runs
        }
        #expect(runs == 2, "the body ran again on the value the other machine committed")
        #expect(machines.table.counts.conflicts == 1)
        #expect(here[hereKey] == 102)
        let fresh = Defaults.Suite(backend: SharedDictionaryBackend(machines.table))
        #expect(fresh[Defaults.Key<Int>("rateLimit", default: 100, suite: fresh)] == 102)
    }

    @Test func exclusiveTransactionsOfFourThreadsOnTwoMachinesLoseNoIncrement() async {
        // NB: free-running; whether any two met in a conflict depends on scheduling, so only what
        // holds under every schedule is checked (the test above forces the conflict).
        let machines = TwoMachines()
        let pairs = [(machines.here, machines.hereKey), (machines.there, machines.thereKey)]
        await offThePool {
            DispatchQueue.concurrentPerform(iterations: 4) { index in
                let (suite, key) = pairs[index % 2]
                for _ in 0..<100 {
                    #expect(throws: Never.self) { try suite.exclusiveTransaction { suite[key] += 1 } }
                }
            }
        }
        let fresh = Defaults.Suite(backend: SharedDictionaryBackend(machines.table))
        #expect(fresh[Defaults.Key<Int>("rateLimit", default: 100, suite: fresh)] == 500)
    }

    @Test func transactionsWithoutPropagationAndOverridesWorkOverTheBackend() async throws {
        let machines = TwoMachines()
        let width = Defaults.Key<Int>("width", default: 0, suite: machines.here)
        let told = EventLog<Set<String>>()
        let observation = Defaults.observe(
            keys: machines.thereKey,
            Defaults.Key<Int>("width", default: 0, suite: machines.there),
            options: []
        ) {
            told.append([])
        }
        // A transaction of two keys is one commit and one event elsewhere.
        let commits = machines.table.counts.commits
        machines.here.transaction {
            machines.here[machines.hereKey] = 1
            machines.here[width] = 2
        }
        try machines.here.synchronize()
        #expect(machines.table.counts.commits == commits + 1)
        #expect(await told.wait(forCount: 1))
        // Inside withoutPropagation, this machine's observers are not told; the write is stored.
        let local = EventLog<Int>()
        let localObservation = Defaults.observe(machines.hereKey, options: []) { local.append($0.newValue) }
        Defaults.withoutPropagation { machines.here[machines.hereKey] = 3 }
        machines.here[machines.hereKey] = 4
        #expect(local.all == [4])
        // An override for this run stands in front of the backend's value, and is never committed.
        machines.here.overrideWithLaunchArguments(["fleet-service", "-rateLimit", "9"])
        #expect(machines.here[machines.hereKey] == 9)
        try machines.here.synchronize()
        let fresh = Defaults.Suite(backend: SharedDictionaryBackend(machines.table))
        #expect(fresh.storedValue(named: "rateLimit") == .number("4"))
        _ = (observation, localObservation)
    }

    @Test func aFailedCommitIsReportedKeptAndRetried() throws {
        let table = SharedTable()
        let problems = EventLog<String>()
        let suite = Defaults.Suite(backend: SharedDictionaryBackend(table)) { problems.append($0.description) }
        let key = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        // NB: the timer's commit of the write, and its retry, would fail and be reported too.
        suite.holdingTimedCommits {
            table.setUnreachable(true)
            suite[key] = 300
            #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
            #expect(problems.count == 1)
            #expect(suite[key] == 300)
        }
        table.setUnreachable(false)
        try suite.synchronize()
        let fresh = Defaults.Suite(backend: SharedDictionaryBackend(table))
        #expect(fresh.storedValue(named: "rateLimit") == .number("300"))
    }

    @Test func aRefusedWriteIsGivenUpReportedOnceAndThrownByTheNextSynchronize() async throws {
        let machines = TwoMachines()
        let problems = EventLog<String>()
        let suite = Defaults.Suite(backend: machines.hereBackend) { problems.append($0.description) }
        let key = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        machines.there[machines.thereKey] = 200
        try machines.there.synchronize()
        machines.hereBackend.waitForReports()
        #expect(suite[key] == 200)
        machines.hereBackend.setReadOnly(true)

        // Refused by the timer's commit: reported then, and thrown by the next synchronize, once.
        suite[key] = 5
        #expect(await problems.wait(forCount: 1))
        #expect(suite[key] == 200)
        let refusal = #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
        guard case .writeRefused(_, let reason) = refusal else {
            Issue.record("not a refused write: \(String(describing: refusal))")
            return
        }
        #expect(reason == "this machine may only read")
        try suite.synchronize()

        // Refused by synchronize's own commit: thrown there, and not again.
        suite.holdingTimedCommits {
            suite[key] = 6
            #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
        }
        try suite.synchronize()
        // Refused by the commit an exclusive transaction makes first: thrown there, and not again.
        suite.holdingTimedCommits {
            suite[key] = 7
            #expect(throws: Defaults.StorageError.self) { try suite.exclusiveTransaction { suite[key] += 1 } }
        }
        try suite.synchronize()
        #expect(suite[key] == 200)
        #expect(problems.count == 3, "\(problems.all)")
        #expect(machines.table.counts.commits == 1, "a refused write is not tried again")
    }

    @Test func aValueOfAnotherTypeFromAnotherMachineKeepsTheLastGoodValueAndNothingElseBreaks() async throws {
        let machines = TwoMachines()
        let problems = EventLog<String>()
        let suite = Defaults.Suite(backend: machines.hereBackend) { problems.append($0.description) }
        let key = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        let asDouble = Defaults.Key<Double>("ratio", default: 0, suite: suite)
        machines.there[machines.thereKey] = 200
        machines.there[Defaults.Key<Double>("ratio", default: 0, suite: machines.there)] = 1.5
        try machines.there.synchronize()
        machines.hereBackend.waitForReports()
        #expect(suite[key] == 200)
        #expect(suite[asDouble] == 1.5)
        // "ratio" is read as an Int too: a value either type takes is no bad value.
        #expect(suite[Defaults.Key<Int>("ratio", default: 0, suite: suite)] == 0)

        let text = Defaults.Key<String>("rateLimit", default: "", suite: machines.there)
        machines.there[text] = "lots"
        machines.there[Defaults.Key<Double>("ratio", default: 0, suite: machines.there)] = 2.5
        try machines.there.synchronize()
        machines.hereBackend.waitForReports()
        #expect(suite[key] == 200)
        #expect(suite[asDouble] == 2.5)
        #expect(await problems.wait(forCount: 1))
        #expect(
            problems.all.first?.contains("\"rateLimit\" was changed elsewhere to \"lots\"") == true,
            "\(problems.all)"
        )
        // An exclusive transaction over the key compares with what is stored, and ends.
        try suite.exclusiveTransaction { suite[key] += 1 }
        #expect(machines.table.counts.conflicts == 0)
        #expect(
            Defaults.Suite(backend: SharedDictionaryBackend(machines.table)).storedValue(named: "rateLimit")
                == .number("201")
        )
        // The bad value again (from a third machine, which has heard of 201), then the last good
        // value written back: stored, not taken for no change.
        let third = Defaults.Suite(backend: SharedDictionaryBackend(machines.table))
        third[Defaults.Key<String>("rateLimit", default: "", suite: third)] = "lots"
        try third.synchronize()
        machines.hereBackend.waitForReports()
        #expect(await problems.wait(forCount: 2))
        #expect(suite[key] == 201)
        suite[key] = 201
        try suite.synchronize()
        #expect(
            Defaults.Suite(backend: SharedDictionaryBackend(machines.table)).storedValue(named: "rateLimit")
                == .number("201")
        )
        #expect(problems.count == 2, "\(problems.all)")
    }

    @Test func aProblemReportedAsReportingStartsReachesTheSuitesOwnHandler() async {
        let problems = EventLog<String>()
        let suite = Defaults.Suite(backend: WriteOnlyLogBackend(problemAtStart: "a stored value is unreadable")) {
            problems.append($0.description)
        }
        #expect(await problems.wait(forCount: 1))
        #expect(problems.all.first?.contains("a stored value is unreadable") == true, "\(problems.all)")
        _ = suite
    }

    @Test func anExclusiveTransactionOverABackendWithoutConditionalCommitsFailsClearly() {
        let suite = Defaults.Suite(backend: WriteOnlyLogBackend())
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        var ran = false
        #expect {
            try suite.exclusiveTransaction {
                ran = true
                suite[key] += 1
            }
        } throws: { error in
            guard case .exclusiveCommitUnsupported(let backend)? = error as? Defaults.StorageError else { return false }
            return backend == "WriteOnlyLogBackend"
        }
        #expect(!ran)
        #expect(suite[key] == 0)
    }
}

/// A backend that only appends commits to a log: no conditional commits.
final class WriteOnlyLogBackend: Defaults.Backend, @unchecked Sendable {  // `log` is guarded by `lock`
    private let lock = NSLock()
    private var log: [Defaults.BackendChanges] = []
    /// A problem to report as reporting starts, as a backend whose load found one would.
    private let problemAtStart: String?

    init(problemAtStart: String? = nil) {
        self.problemAtStart = problemAtStart
    }

    func startReporting(to updates: Defaults.BackendUpdates) {
        if let problemAtStart { updates.report(.backendFailed(backend: name, reason: problemAtStart)) }
    }

    func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        Defaults.BackendContents(values: [:])
    }

    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult {
        lock.withLock { log.append(changes) }
        return .stored
    }
}
