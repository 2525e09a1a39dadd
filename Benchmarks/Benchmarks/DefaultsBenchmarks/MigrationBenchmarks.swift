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

    /// A program whose every key a new version renamed.
    ///
    /// 80 renames of an `Int`, and 20 conversions of minutes (`Int`) under another name to hours
    /// (`Double`). Names made once, as a program's are literals.
    static let hundred = (0..<100)
        .map { index in
            index < 80 ? ("setting-\(index)", ["old-\(index)"]) : ("hours-\(index)", ["minutes-\(index)"])
        }

    /// Declares the 100 keys, with their migrations when `migrated`, and reads every one.
    static func declareAndReadHundred(_ suite: Defaults.Suite, migrated: Bool) -> Int {
        var sum = 0
        for (index, (name, formerly)) in hundred.enumerated() {
            if index < 80 {
                let key =
                    migrated
                    ? Defaults.Key<Int>(name, default: 0, suite: suite, formerly: formerly)
                    : Defaults.Key<Int>(name, default: 0, suite: suite)
                sum &+= suite[key]
            } else {
                let key =
                    migrated
                    ? Defaults.Key<Double>(name, default: 1, suite: suite, formerly: formerly) { (minutes: Int) in
                        Double(minutes) / 60
                    }
                    : Defaults.Key<Double>(name, default: 1, suite: suite)
                sum &+= Int(suite[key])
            }
        }
        return sum
    }

    /// Writes the old version of the 100 keys' file at `url`.
    static func writeOldHundred(_ url: URL) throws {
        let suite = Defaults.Suite(fileURL: url)
        suite.setStoredValues(
            Dictionary(uniqueKeysWithValues: hundred.enumerated().map { ($1.1[0], .number(String($0 + 30))) })
        )
        try suite.synchronize()
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
    openMigrated(
        "Migrations/open a suite and declare 20 keys, 4 with migrations applied, and with none, in turns",
        declare: MigrationBench.declareAndRead,
        writeOld: MigrationBench.writeOldVersion,
        applied: 4
    )
    openMigrated(
        "Migrations/open a suite and declare 100 keys, all with migrations applied, and with none, in turns",
        declare: MigrationBench.declareAndReadHundred,
        writeOld: MigrationBench.writeOldHundred,
        applied: 100
    )
    firstOpenMigrating()
}

/// Opens copies of a file whose migrations ran and of the same values without any, in turns.
func openMigrated(
    _ name: String,
    declare: @escaping @Sendable (Defaults.Suite, Bool) -> Int,
    writeOld: @escaping @Sendable (URL) throws -> Void,
    applied: Int
) {
    let tag = "\(applied)"
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
    Benchmark(name, configuration: configuration) { benchmark, _ in
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
                            fileURL: Scratch.url("migration\(tag)-\(isMigrated)-\(index)-\(open).json")
                        )
                        blackHole(declare(suite, isMigrated))
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
        let migratedSource = Scratch.url("migration\(tag)-source-migrated.json")
        try writeOld(migratedSource)
        do {
            let suite = Defaults.Suite(fileURL: migratedSource)
            precondition(declare(suite, true) > 0)
            precondition(suite.appliedMigrations.count == applied)
            try suite.synchronize()
        }
        let plainSource = Scratch.url("migration\(tag)-source-plain.json")
        do {
            let suite = Defaults.Suite(fileURL: plainSource)
            suite.setStoredValues(Defaults.Suite(fileURL: migratedSource).userStoredValues())
            try suite.synchronize()
        }
        for index in 0..<(rounds + warmupIterations + 5) {
            for open in 0..<opensPerTurn {
                for (isMigrated, source) in [(true, migratedSource), (false, plainSource)] {
                    let copy = Scratch.url("migration\(tag)-\(isMigrated)-\(index)-\(open).json")
                    try FileManager.default.copyItem(at: source, to: copy)
                }
            }
        }
    }
}

// MARK: Open an old version's file and migrate 100 keys

/// A first open that migrates every key of 100 (the old version's file), per open, in nanoseconds.
///
/// To its end: the keys declared and read, and `synchronize()` returned.
let firstOpenMetric: BenchmarkMetric = .custom("firstOpen", polarity: .prefersSmaller, useScalingFactor: false)
/// The same keys opened over the file once migrated, in the same round.
let migratedOpenMetric: BenchmarkMetric = .custom("migratedOpen", polarity: .prefersSmaller, useScalingFactor: false)

func firstOpenMigrating() {
    let rounds = 20
    let warmupIterations = 2
    let configuration = Benchmark.Configuration(
        metrics: [firstOpenMetric, migratedOpenMetric],
        warmupIterations: warmupIterations,
        scalingFactor: .one,
        maxDuration: .seconds(20),
        maxIterations: rounds
    )
    let round = Mutex(0)
    Benchmark(
        "Migrations/first open of an old version's file migrating 100 keys, and the next",
        configuration: configuration
    ) {
        benchmark,
        _ in
        for _ in benchmark.scaledIterations {
            let index = round.withLock { round in
                defer { round += 1 }
                return round
            }
            let url = Scratch.url("first-open-\(index).json")
            let clock = ContinuousClock()
            let first = clock.measure {
                let suite = Defaults.Suite(fileURL: url)
                blackHole(MigrationBench.declareAndReadHundred(suite, migrated: true))
                try! suite.synchronize()
            }
            let next = clock.measure {
                let suite = Defaults.Suite(fileURL: url)
                blackHole(MigrationBench.declareAndReadHundred(suite, migrated: true))
                try! suite.synchronize()
            }
            benchmark.measurement(firstOpenMetric, Int(first / .nanoseconds(1)))
            benchmark.measurement(migratedOpenMetric, Int(next / .nanoseconds(1)))
        }
    } setup: {
        let source = Scratch.url("first-open-source.json")
        try MigrationBench.writeOldHundred(source)
        for index in 0..<(rounds + warmupIterations + 5) {
            try FileManager.default.copyItem(at: source, to: Scratch.url("first-open-\(index).json"))
        }
    }
}
