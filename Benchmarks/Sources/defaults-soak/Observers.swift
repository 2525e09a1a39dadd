// The observers that live for the whole run, one of every kind the observation module offers, and
// the board where each records the last values it saw.
import DefaultsObservation
import Foundation
import Observation
import Synchronization

/// The last values every long-lived observer of this process saw, and a bounded wait for them to
/// equal what a fresh suite reads.
///
/// An observer told a value records it (`set`); an observer told only that something changed reads
/// the store under the board's lock (`read`), so of two such reads racing, the one recorded last is
/// also the one made last, and after the last change it is the store's final value.
final class ObserverBoard: @unchecked Sendable {  // `entries` only under `condition`
    /// One observer's record.
    struct Entry {
        /// The hot keys it covers.
        let keys: [String]
        /// Whether it must end on the store's value even while several threads write at once.
        ///
        /// True for observers that read the store when told, or are told fresh values. Observers
        /// handed the value of one change (`KeyChange`) may be told changes of two threads in
        /// either order, as the library documents; `withObservationTracking` misses a change made
        /// while it re-arms. Those are held only to the final quiet write.
        let endsOnStoreValue: Bool
        var values: [String: String] = [:]
        var calls = 0
    }

    private let condition = NSCondition()
    private var entries: [String: Entry] = [:]

    /// Adds an observer named `name` covering `keys`.
    func register(_ name: String, keys: [String], endsOnStoreValue: Bool) {
        condition.withLock { entries[name] = Entry(keys: keys, endsOnStoreValue: endsOnStoreValue) }
    }

    /// Records values an observer was told.
    func set(_ name: String, _ values: [String: String]) {
        condition.withLock {
            entries[name]?.values.merge(values) { _, new in new }
            entries[name]?.calls += 1
            condition.broadcast()
        }
    }

    /// Records what `read` returns, reading under the board's lock.
    func read(_ name: String, _ read: () -> [String: String]) {
        condition.withLock {
            entries[name]?.values.merge(read()) { _, new in new }
            entries[name]?.calls += 1
            condition.broadcast()
        }
    }

    /// How many observers there are and how many calls they had.
    var summary: (observers: Int, calls: Int) {
        condition.withLock { (entries.count, entries.values.reduce(0) { $0 + $1.calls }) }
    }

    /// Waits up to `timeout` seconds for every observer (or only those that end on the store's
    /// value) to hold `expected` for each key it covers; returns one line per observer that does not.
    func waitUntilMatching(_ expected: [String: String], onlyStoreValueObservers: Bool, timeout: Double) -> [String] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            var mismatches: [String] = []
            for (name, entry) in entries.sorted(by: { $0.key < $1.key })
            where entry.endsOnStoreValue || !onlyStoreValueObservers {
                let wrong = entry.keys.filter { entry.values[$0] != expected[$0] }
                guard !wrong.isEmpty else { continue }
                let detail = wrong.map { "\($0) saw \(entry.values[$0] ?? "nothing"), expected \(expected[$0] ?? "?")" }
                mismatches.append("\(name) (\(entry.calls) calls): " + detail.joined(separator: "; "))
            }
            if mismatches.isEmpty || !condition.wait(until: deadline) { return mismatches }
        }
    }
}

/// The observers of one process that live for the whole run: every kind `DefaultsObservation`
/// offers off the main actor; ``MainActorObservers`` has the main actor's.
final class LongLivedObservers: @unchecked Sendable {  // set up in `init`, stopped once by `stop()`
    private var observations: [Defaults.Observation] = []
    private var tasks: [Task<Void, Never>] = []
    private let owner = Owner()
    private let model: DefaultModel

    init(keys: SoakKeys, board: ObserverBoard) {
        model = DefaultModel(keys: keys)
        let hot = SoakKeys.hotNames
        // `observe` one key, told the change.
        board.register("observe(key) KeyChange", keys: ["hot.int"], endsOnStoreValue: false)
        observations.append(
            Defaults.observe(keys.int) { change in
                board.set("observe(key) KeyChange", ["hot.int": canonical(change.newValue)])
            }
        )
        // `observe` one key without the initial call, tied to an owner that lives as long as this.
        board.register("observe(key, options: []) tied", keys: ["hot.profile"], endsOnStoreValue: false)
        Defaults.observe(keys.profile, options: []) { change in
            board.set("observe(key, options: []) tied", ["hot.profile": canonical(change.newValue)])
        }
        .tieToLifetime(of: owner)
        // `@Default`'s projected `observe`.
        board.register("@Default $x.observe", keys: ["hot.double"], endsOnStoreValue: false)
        observations.append(
            model.$double.observe { change in
                board.set("@Default $x.observe", ["hot.double": canonical(change.newValue)])
            }
        )
        // `observe(keys:)`: told that something changed, reads.
        board.register("observe(keys:)", keys: ["hot.bool", "hot.double"], endsOnStoreValue: true)
        observations.append(
            Defaults.observe(keys: keys.bool, keys.double) {
                board.read("observe(keys:)") { keys.canonicalValues(of: ["hot.bool", "hot.double"]) }
            }
        )
        // `observe(keys:debounce:)`: one call after a burst has been quiet for 30 ms.
        board.register("observe(keys:debounce:)", keys: ["hot.list", "hot.optional"], endsOnStoreValue: true)
        board.read("observe(keys:debounce:)") { keys.canonicalValues(of: ["hot.list", "hot.optional"]) }
        observations.append(
            Defaults.observe(keys: [keys.list, keys.optional], debounce: .milliseconds(30)) { _ in
                board.read("observe(keys:debounce:)") { keys.canonicalValues(of: ["hot.list", "hot.optional"]) }
            }
        )
        // `observe(suite:)`: every change to the file.
        board.register("observe(suite:)", keys: hot, endsOnStoreValue: true)
        observations.append(
            Defaults.observe(suite: keys.suite) {
                board.read("observe(suite:)") { keys.canonicalValues(of: hot) }
            }
        )
        // `updates` of one key, of a tuple of keys, of an array of keys, and `@Default`'s `updates`.
        board.register("updates(key)", keys: ["hot.profile"], endsOnStoreValue: true)
        board.register("updates(key, key) tuple", keys: ["hot.int", "hot.string"], endsOnStoreValue: true)
        board.register("updates([keys]) Void", keys: ["hot.list"], endsOnStoreValue: true)
        board.register("@Default $x.updates()", keys: ["hot.optional"], endsOnStoreValue: true)
        let profiles = Defaults.updates(keys.profile)
        let tuples = Defaults.updates(keys.int, keys.string)
        let events = Defaults.updates([keys.list])
        let optionals = model.$optional.updates()
        tasks.append(
            Task {
                for await profile in profiles {
                    board.set("updates(key)", ["hot.profile": canonical(profile)])
                }
            }
        )
        tasks.append(
            Task {
                for await (int, string) in tuples {
                    board.set("updates(key, key) tuple", ["hot.int": canonical(int), "hot.string": canonical(string)])
                }
            }
        )
        tasks.append(
            Task {
                for await _ in events {
                    board.read("updates([keys]) Void") { keys.canonicalValues(of: ["hot.list"]) }
                }
            }
        )
        tasks.append(
            Task {
                for await optional in optionals {
                    board.set("@Default $x.updates()", ["hot.optional": canonical(optional)])
                }
            }
        )
    }

    /// Ends every observation and stream.
    func stop() {
        for observation in observations { observation.invalidate() }
        for task in tasks { task.cancel() }
        observations = []
        tasks = []
    }
}

/// How `withObservationTracking` rounds over `@ObservableDefault` properties went in this process:
/// Observation calls a round's `onChange` once, at the first change after it was armed.
///
/// Except for one race of Observation's own, with any `@Observable` property: a change reported
/// while `withObservationTracking` is still installing the round (after it registers the round,
/// before it keeps the registration to cancel it later) calls `onChange`, whose cancel then finds
/// nothing to cancel, and the round stays registered and is told of every later change. A plain
/// `@Observable` class whose mutations are all serialized does it too (62 rounds of 2.1 million,
/// one thread arming, one mutating). Such rounds, the ones whose first call came before
/// `withObservationTracking` returned, are counted apart; any other extra call is a failure.
final class TrackingRounds: Sendable {
    private let rounds = Atomic<Int>(0)
    private let extraCalls = Atomic<Int>(0)
    private let racedRounds = Atomic<Int>(0)
    private let racedExtraCalls = Atomic<Int>(0)

    /// The `onChange` calls of one round.
    final class Calls: Sendable {
        fileprivate let count = Atomic<Int>(0)
        /// Set once `withObservationTracking` has returned.
        fileprivate let installed = Atomic<Bool>(false)
        /// Whether the first call came before that.
        fileprivate let firstWhileInstalling = Atomic<Bool>(false)
    }

    /// Counts a new round; returns its counter of `onChange` calls.
    func arming() -> Calls {
        rounds.add(1, ordering: .relaxed)
        return Calls()
    }

    /// Notes that `withObservationTracking` has returned for the round.
    func armed(_ calls: Calls) {
        calls.installed.store(true, ordering: .sequentiallyConsistent)
    }

    /// Counts a call of a round's `onChange`; true for its first.
    func changed(_ calls: Calls) -> Bool {
        let first = calls.count.wrappingAdd(1, ordering: .sequentiallyConsistent).oldValue == 0
        if first {
            if !calls.installed.load(ordering: .sequentiallyConsistent) {
                calls.firstWhileInstalling.store(true, ordering: .sequentiallyConsistent)
                racedRounds.add(1, ordering: .relaxed)
            }
        } else if calls.firstWhileInstalling.load(ordering: .sequentiallyConsistent) {
            racedExtraCalls.add(1, ordering: .relaxed)
        } else {
            extraCalls.add(1, ordering: .relaxed)
        }
        return first
    }

    /// The rounds armed, the extra calls of rounds that were installed before their first call, and
    /// the rounds first told while installing with their extra calls.
    var totals: (rounds: Int, extraCalls: Int, racedRounds: Int, racedExtraCalls: Int) {
        (
            rounds.load(ordering: .relaxed), extraCalls.load(ordering: .relaxed),
            racedRounds.load(ordering: .relaxed), racedExtraCalls.load(ordering: .relaxed)
        )
    }
}

/// The rounds of this process.
let tracking = TrackingRounds()

/// The main actor's observers of one process: `withObservationTracking` re-armed after each change,
/// and an `Observations` loop, both over a `@ObservableDefault` view-model.
@MainActor
final class MainActorObservers {
    private let model: SoakViewModel
    private let board: ObserverBoard
    private var task: Task<Void, Never>?
    private var stopped = false

    init(keys: SoakKeys, board: ObserverBoard) {
        model = SoakViewModel(keys: keys)
        self.board = board
        board.register("@ObservableDefault withObservationTracking", keys: ["hot.string"], endsOnStoreValue: false)
        board.register("@ObservableDefault Observations", keys: ["hot.int", "hot.bool"], endsOnStoreValue: true)
        arm()
        let model = model
        let values = Observations { [canonical(model.int), canonical(model.bool)] }
        task = Task {
            for await value in values {
                board.set("@ObservableDefault Observations", ["hot.int": value[0], "hot.bool": value[1]])
            }
        }
    }

    /// One round of `withObservationTracking`; its first `onChange` arms the next on the main actor.
    private func arm() {
        guard !stopped else { return }
        let calls = tracking.arming()
        withObservationTracking {
            board.set("@ObservableDefault withObservationTracking", ["hot.string": canonical(model.string)])
        } onChange: { [weak self] in
            // NB: only the first call re-arms. Observation promises one call per round; when writers
            // on several threads made more, re-arming on each multiplied the rounds without bound.
            guard tracking.changed(calls) else { return }
            Task { @MainActor in self?.arm() }
        }
        tracking.armed(calls)
    }

    /// Ends both.
    func stop() {
        stopped = true
        task?.cancel()
        task = nil
    }
}
