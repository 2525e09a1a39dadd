import Benchmark
import Defaults
import Foundation
import Synchronization

// MARK: Open a suite whose keys declare migrations already applied

/// Opening a suite and declaring its keys, where four keys declare migrations the file records as
/// run, per open, in nanoseconds: one sample per round.
let openMigratedMetric: BenchmarkMetric = .custom("openMigrated", polarity: .prefersSmaller, useScalingFactor: false)
/// The same with the same keys declaring no migration, in the same round.
let openPlainMetric: BenchmarkMetric = .custom("openPlain", polarity: .prefersSmaller, useScalingFactor: false)
/// The first over the second in the same round, in thousandths.
let openRatioMetric: BenchmarkMetric = .custom("openRatio", polarity: .prefersSmaller, useScalingFactor: false)

/// The suite the migration benchmark opens: twenty keys, four of which a new version renamed or
/// converted.
enum MigrationBench {
    static let plainKeys = (0..<16).map { "setting-\($0)" }

    /// Declares the suite's keys, four with their migrations when `migrated`, and reads every one.
    static func declareAndRead(_ suite: Defaults.Suite, migrated: Bool) -> Int {
        var sum = 0
        for name in plainKeys { sum &+= suite[Defaults.Key<Int>(name, default: 0, suite: suite)] }
        if migrated {
            sum &+= suite[Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])]
            sum &+= suite[Defaults.Key<String>("user.name", default: "", suite: suite, formerly: ["name"])].count
            sum &+= Int(
                suite[
                    Defaults.Key<Double>("refreshHours", default: 1, suite: suite, formerly: ["refreshMinutes"]) {
                        (minutes: Int) in Double(minutes) / 60
                    }
                ]
            )
            sum &+= suite[Defaults.Key<[Int]>("window.size", default: [], suite: suite, formerly: ["windowSize"])].count
        } else {
            sum &+= suite[Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite)]
            sum &+= suite[Defaults.Key<String>("user.name", default: "", suite: suite)].count
            sum &+= Int(suite[Defaults.Key<Double>("refreshHours", default: 1, suite: suite)])
            sum &+= suite[Defaults.Key<[Int]>("window.size", default: [], suite: suite)].count
        }
        return sum
    }

    /// Writes the old version's file at `url`.
    static func writeOldVersion(_ url: URL) throws {
        let suite = Defaults.Suite(fileURL: url)
        suite.transaction {
            for (index, name) in plainKeys.enumerated() {
                suite[Defaults.Key<Int>(name, default: 0, suite: suite)] = index
            }
            suite[Defaults.Key<Int>("fontSize", default: 13, suite: suite)] = 16
            suite[Defaults.Key<String>("name", default: "", suite: suite)] = "Ada"
            suite[Defaults.Key<Int>("refreshMinutes", default: 60, suite: suite)] = 90
            suite[Defaults.Key<[Int]>("windowSize", default: [], suite: suite)] = [800, 600]
        }
        try suite.synchronize()
    }
}

func openMigrated() {
    let rounds = 40
    let warmupIterations = 3
    let opensPerTurn = 20
    // NB: the two kinds of suite take turns within each round (and which goes first alternates),
    // so a machine that slows down during the run weighs on both alike.
    let configuration = Benchmark.Configuration(
        metrics: [openMigratedMetric, openPlainMetric, openRatioMetric],
        warmupIterations: warmupIterations,
        scalingFactor: .one,
        maxDuration: .seconds(20),
        maxIterations: rounds
    )
    let round = Mutex(0)
    Benchmark(
        "Migrations/open a suite and declare 20 keys, 4 with migrations applied, and with none, in turns",
        configuration: configuration
    ) { benchmark, _ in
        for _ in benchmark.scaledIterations {
            let index = round.withLock { round in
                defer { round += 1 }
                return round
            }
            var migrated = Duration.zero
            var plain = Duration.zero
            let clock = ContinuousClock()
            for turn in 0..<2 {
                let isMigrated = (turn == 0) == (index % 2 == 0)
                // Kept until the turn is measured: releasing a suite (its watcher) is not opening one.
                var suites: [Defaults.Suite] = []
                suites.reserveCapacity(opensPerTurn)
                let elapsed = clock.measure {
                    for open in 0..<opensPerTurn {
                        let suite = Defaults.Suite(
                            fileURL: Scratch.url("migration-\(isMigrated)-\(index)-\(open).json")
                        )
                        blackHole(MigrationBench.declareAndRead(suite, migrated: isMigrated))
                        suites.append(suite)
                    }
                }
                if isMigrated { migrated = elapsed } else { plain = elapsed }
            }
            let migratedNanoseconds = migrated / .nanoseconds(1) / Double(opensPerTurn)
            let plainNanoseconds = plain / .nanoseconds(1) / Double(opensPerTurn)
            benchmark.measurement(openMigratedMetric, Int(migratedNanoseconds))
            benchmark.measurement(openPlainMetric, Int(plainNanoseconds))
            benchmark.measurement(openRatioMetric, Int((migratedNanoseconds / plainNanoseconds * 1000).rounded()))
        }
    } setup: {
        // The new version's file, migrated once (its record lists the four), and the same values
        // in a file that never had a migration.
        let migratedSource = Scratch.url("migration-source-migrated.json")
        try MigrationBench.writeOldVersion(migratedSource)
        do {
            let suite = Defaults.Suite(fileURL: migratedSource)
            precondition(MigrationBench.declareAndRead(suite, migrated: true) > 0)
            precondition(suite.appliedMigrations.count == 4)
            try suite.synchronize()
        }
        let plainSource = Scratch.url("migration-source-plain.json")
        do {
            let suite = Defaults.Suite(fileURL: plainSource)
            suite.setStoredValues(Defaults.Suite(fileURL: migratedSource).userStoredValues())
            try suite.synchronize()
        }
        for index in 0..<(rounds + warmupIterations + 5) {
            for open in 0..<opensPerTurn {
                for (isMigrated, source) in [(true, migratedSource), (false, plainSource)] {
                    let copy = Scratch.url("migration-\(isMigrated)-\(index)-\(open).json")
                    try FileManager.default.copyItem(at: source, to: copy)
                }
            }
        }
    }
}
