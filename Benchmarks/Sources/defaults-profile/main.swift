// A plain loop driver for profiling one benchmark scenario under valgrind, without the benchmark
// harness around it:
//
//   swift build -c release --product defaults-profile
//   valgrind --tool=callgrind --toggle-collect='*measured*' .build/release/defaults-profile read-int 100000
//
// `--toggle-collect` limits the counts to the measured loop (the `measured` function below), so
// setup is left out. Instruction counts are repeatable whatever else the machine is doing.

import Defaults
import DefaultsObservation
import Foundation
import OutsideBackend
import Synchronization

struct Profile: Codable, Equatable, Sendable, Defaults.Serializable {
    var name: String
    var width: Int
    var height: Int
    var scale: Double
    var isCompact: Bool
    var tags: [String]
}

final class Counter: Sendable {
    let count = Atomic<Int>(0)
}

@inline(never)
func measured(_ iterations: Int, _ body: (Int) -> Void) {
    for index in 0..<iterations { body(index) }
}

@inline(never)
func sink<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    print("usage: defaults-profile <scenario> [iterations]")
    print(
        "scenarios: read-int read-int-file read-int-backend read-int-floor stored-value read-codable read-codable-file read-codable-backend write-floor write-unused write-0 write-file write-backend write-1 write-10k write-string write-string-1 write-keys commit-onto observe-pair tied-pair open10k open-one open-layers burst absorb10k tied-owners declare-migrated declare-plain"
    )
    exit(2)
}
let scenario = arguments[1]
let iterations = arguments.count > 2 ? Int(arguments[2])! : 100_000
let directory = NSTemporaryDirectory() + "/defaults-profile-\(getpid())"
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }

/// This process's resident memory, from /proc/self/status.
func residentKilobytes() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
}

/// The suite a read scenario names: a file suite for "-file", a suite over a backend written outside
/// the library (`OutsideBackend`) for "-backend", else an in-memory one.
func readSuite(_ scenario: String, in directory: String) -> Defaults.Suite {
    if scenario.hasSuffix("-file") { return Defaults.Suite(fileURL: URL(fileURLWithPath: directory + "/read.json")) }
    if scenario.hasSuffix("-backend") { return Defaults.Suite(backend: DictionaryBackend()) }
    return .inMemory()
}

func installRegistry() {
    Defaults.observe(Defaults.Key<Int>("warm-up", default: 0, suite: .inMemory()), options: []) { _ in }.invalidate()
}

// NB: in a function rather than top-level code, so the loops' closures are not main-actor
// isolated (which would add an executor check to every iteration).
func run(_ scenario: String, _ iterations: Int, in directory: String) throws {
    switch scenario {
    case "read-int", "read-int-file", "read-int-backend":
        let suite = readSuite(scenario, in: directory)
        let key = Defaults.Key<Int>("answer", default: 0, suite: suite)
        suite[key] = 42
        try suite.synchronize()
        _ = suite[key]
        measured(iterations) { _ in sink(suite[key]) }
    case "stored-value":
        let suite = Defaults.Suite.inMemory()
        suite[Defaults.Key<Int>("http.port", default: 80, suite: suite)] = 8080
        measured(iterations) { _ in sink(suite.storedValue(named: "http.port")) }
    case "read-int-floor":
        let floor = Mutex<[String: Int]>(["answer": 42])
        let name = String("answer")
        measured(iterations) { _ in sink(floor.withLock { $0[name] }) }
    case "write-floor":
        let floor = Mutex<[String: Int]>(["answer": 42])
        let name = String("answer")
        measured(iterations) { index in floor.withLock { $0[name] = index & 1 } }
    case "read-codable", "read-codable-file", "read-codable-backend":
        let suite = readSuite(scenario, in: directory)
        let key = Defaults.Key<Profile>(
            "profile",
            default: Profile(name: "", width: 0, height: 0, scale: 1, isCompact: true, tags: []),
            suite: suite
        )
        suite[key] = Profile(
            name: "main window",
            width: 1280,
            height: 800,
            scale: 2,
            isCompact: false,
            tags: ["sidebar", "toolbar", "status"]
        )
        try suite.synchronize()
        _ = suite[key]
        measured(iterations) { _ in sink(suite[key]) }
    case "write-unused", "write-0", "write-file", "write-backend", "write-1", "write-10k":
        // NB: "write-file" is "write-0" on a file suite, "write-backend" on a suite over a backend
        // written outside the library: the loop ends before the coalescing timer fires, so it
        // counts what a write costs the writer, not the file's replacement or the commit.
        let suite =
            switch scenario {
            case "write-file": Defaults.Suite(fileURL: URL(fileURLWithPath: directory + "/write.json"))
            case "write-backend": Defaults.Suite(backend: DictionaryBackend())
            default: Defaults.Suite.inMemory()
            }
        let key = Defaults.Key<Int>("answer", default: 0, suite: suite)
        if scenario != "write-unused" { installRegistry() }
        let counter = Counter()
        var observations: [Defaults.Observation] = []
        if scenario == "write-1" {
            observations.append(Defaults.observe(key, options: []) { _ in counter.count.add(1, ordering: .relaxed) })
        }
        if scenario == "write-10k" {
            for index in 0..<10_000 {
                observations.append(
                    Defaults.observe(Defaults.Key<Int>("other-\(index)", default: 0, suite: suite), options: []) { _ in
                    }
                )
            }
        }
        suite[key] = 5
        measured(iterations) { index in suite[key] = index & 1 }
        sink(observations)
    case "write-string", "write-string-1":
        // The one-key write by JSON (`Store.commitOne`): a value that cannot be written in place,
        // unobserved and with one observer.
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<String>("title", default: "", suite: suite)
        installRegistry()
        let counter = Counter()
        var observations: [Defaults.Observation] = []
        if scenario == "write-string-1" {
            observations.append(Defaults.observe(key, options: []) { _ in counter.count.add(1, ordering: .relaxed) })
        }
        let titles = ["Untitled", "Untitled 2"]
        suite[key] = "first"
        measured(iterations) { index in suite[key] = titles[index & 1] }
        sink(observations)
    case "tied-owners":
        // Not for callgrind: prints the resident memory before and after `iterations` view-models
        // that observe a never-written key, tie the observation to themselves, and are released.
        final class ViewModel: Sendable {
            init(_ key: Defaults.Key<String>) {
                let label = "row \(ObjectIdentifier(self).hashValue)"
                Defaults.observe(key, options: []) { change in sink((label, change.newValue)) }.tieToLifetime(of: self)
            }
        }
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<String>("theme", default: "light", suite: suite)
        installRegistry()
        let before = residentKilobytes()
        measured(iterations) { _ in sink(ViewModel(key)) }
        let after = residentKilobytes()
        print("VmRSS before \(before) kB, after \(after) kB, growth \(after - before) kB over \(iterations) owners")
    case "tied-pair":
        // observe + tieToLifetime(of:) + the owner released: the cost of a tie, and its share of
        // the sweeps that remove the ties whose owner is gone.
        final class Owner: Sendable {}
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("answer", default: 0, suite: suite)
        installRegistry()
        measured(iterations) { _ in
            let owner = Owner()
            Defaults.observe(key, options: []) { _ in }.tieToLifetime(of: owner)
        }
    case "observe-pair":
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("answer", default: 0, suite: suite)
        installRegistry()
        measured(iterations) { _ in
            let observation = Defaults.observe(key, options: []) { _ in }
            observation.invalidate()
        }
    case "open10k":
        let source = URL(fileURLWithPath: directory + "/open.json")
        do {
            let writer = Defaults.Suite(fileURL: source)
            writer.transaction {
                for index in 0..<10_000 { writer[Defaults.Key<Int>("key-\(index)", default: 0, suite: writer)] = index }
            }
            try writer.synchronize()
        }
        // NB: a copy per open: a file another suite still has open would not be loaded again.
        let copies = (0..<iterations).map { URL(fileURLWithPath: directory + "/open-\($0).json") }
        for copy in copies { try FileManager.default.copyItem(at: source, to: copy) }
        let key = Defaults.Key<Int>("key-5000", default: -1, suite: .inMemory())
        measured(iterations) { index in sink(Defaults.Suite(fileURL: copies[index])[key]) }
    case "open-one", "open-layers":
        // A 100-key user file, over two 10-key system files (one lock each) for "open-layers".
        let layers = scenario == "open-layers" ? 2 : 0
        func write(_ path: String, _ prefix: String, _ count: Int, lock: Bool) throws {
            var members = (0..<count).map { "\"\(prefix)-\($0)\" : \($0)" }
            if lock { members.append("\"\" : {\"locked\" : [\"\(prefix)-0\"]}") }
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent,
                withIntermediateDirectories: true
            )
            try Data(("{" + members.joined(separator: ",") + "}").utf8).write(to: URL(fileURLWithPath: path))
        }
        var opened: [(URL, [URL])] = []
        for round in 0..<iterations {
            let user = directory + "/\(round)/home/app/settings.json"
            try write(user, "user", Int(ProcessInfo.processInfo.environment["USER_KEYS"] ?? "100")!, lock: false)
            var system: [URL] = []
            for index in 0..<layers {
                let path = directory + "/\(round)/xdg\(index)/app/settings.json"
                try write(path, "system\(index)", 10, lock: true)
                system.append(URL(fileURLWithPath: path))
            }
            opened.append((URL(fileURLWithPath: user), system))
        }
        let key = Defaults.Key<Int>("user-50", default: -1, suite: .inMemory())
        measured(iterations) { index in
            let (user, system) = opened[index]
            sink(Defaults.Suite(fileURL: user, systemFiles: system)[key])
        }
    case "absorb10k":
        // Another process's write of one key of a 10,000-key file reaching an observer here, as in
        // the CrossProcess 10,000-key benchmark: the file is replaced by rename (as the library
        // replaces it) with "stamp" changed, and the loop waits for the observer. The reader's work
        // runs on the library's threads: count it with `--toggle-collect` on them (README.md).
        let source = URL(fileURLWithPath: directory + "/absorb-source.json")
        do {
            let writer = Defaults.Suite(fileURL: source)
            writer.transaction {
                for index in 0..<9_999 {
                    writer[Defaults.Key<String>("setting-\(index)", default: "", suite: writer)] = "value \(index)"
                }
                writer[Defaults.Key<Int>("stamp", default: 0, suite: writer)] = 0
            }
            try writer.synchronize()
        }
        let template = try String(contentsOf: source, encoding: .utf8)
        precondition(template.contains("\"stamp\" : 0\n"))
        let versions = (0..<iterations)
            .map { Array(template.replacingOccurrences(of: "\"stamp\" : 0\n", with: "\"stamp\" : \($0 + 1)\n").utf8) }
        let path = directory + "/absorb.json"
        try FileManager.default.copyItem(at: source, to: URL(fileURLWithPath: path))
        let suite = Defaults.Suite(fileURL: URL(fileURLWithPath: path))
        let arrived = DispatchSemaphore(value: 0)
        let observation = Defaults.observe(Defaults.Key<Int>("stamp", default: 0, suite: suite), options: []) { _ in
            arrived.signal()
        }
        let temporary = directory + "/absorb.tmp"
        measured(iterations) { index in
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            versions[index].withUnsafeBytes { _ = write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
            rename(temporary, path)
            arrived.wait()
        }
        precondition(suite[Defaults.Key<Int>("stamp", default: 0, suite: suite)] == iterations)
        sink(observation)
    case "burst":
        let suite = Defaults.Suite(fileURL: URL(fileURLWithPath: directory + "/burst.json"))
        let key = Defaults.Key<Int>("burst", default: 0, suite: suite)
        measured(iterations) { round in
            for index in 0..<10_000 { suite[key] = round * 10_000 + index }
            try! suite.synchronize()
        }
    case "write-keys":
        // As `defaults-bench-peer write-keys`: 10,000 new keys on a new file, each written once,
        // then one flush; a round per file.
        measured(iterations) { round in
            let suite = Defaults.Suite(fileURL: URL(fileURLWithPath: directory + "/keys-\(round).json"))
            let keys = (0..<10_000).map { Defaults.Key<Int>("p0-\($0)", default: -1, suite: suite) }
            for (index, key) in keys.enumerated() { suite[key] = index }
            try! suite.synchronize()
        }
    case "commit-onto":
        // The last of four writers (`defaults-bench-peer write-keys`): its suite opened on an empty
        // file and wrote 2,500 keys; the others' 7,500 reach the file by rename just before it
        // flushes, so the commit reads them, writes 10,000 and takes the 7,500 in. One flush;
        // profile it with `--toggle-collect` on the commit or on `absorbOutside`, since the
        // watcher may read the file first on a slow run (the flush then finds it read already).
        let path = directory + "/onto.json"
        let suite = Defaults.Suite(fileURL: URL(fileURLWithPath: path))
        let keys = (0..<2500).map { Defaults.Key<Int>("p3-\($0)", default: -1, suite: suite) }
        var text = "{\n"
        for writer in 0..<3 {
            for index in 0..<2500 { text += "  \"p\(writer)-\(index)\" : \(index),\n" }
        }
        text.removeLast(2)
        text += "\n}\n"
        try! text.write(toFile: path + ".tmp", atomically: false, encoding: .utf8)
        for (index, key) in keys.enumerated() { suite[key] = index }
        rename(path + ".tmp", path)
        measured(1) { _ in try! suite.synchronize() }
        precondition(suite.storedValues().count == 10_000)
    case "declare-migrated", "declare-plain":
        // Creating four keys whose migrations the store records as run, or the same keys without.
        let suite = Defaults.Suite(fileURL: URL(fileURLWithPath: directory + "/declare.json"))
        suite.setStoredValues(["fontSize": .number("16"), "refreshMinutes": .number("90")])
        let migrated = scenario == "declare-migrated"
        sink(declareKeys(suite, migrated: migrated))
        precondition(suite.appliedMigrations.count == (migrated ? 4 : 0))
        measured(iterations) { _ in sink(declareKeys(suite, migrated: migrated)) }
    case "declare100-migrated", "declare100-plain":
        // Creating 100 keys that each declare a rename the store records as run, or the same keys
        // without: what opening a program whose every key was renamed costs.
        let suite = Defaults.Suite(fileURL: URL(fileURLWithPath: directory + "/declare100.json"))
        let migrated = scenario == "declare100-migrated"
        sink(declareHundredKeys(suite, migrated: migrated))
        try! suite.synchronize()
        precondition(suite.appliedMigrations.count == (migrated ? 100 : 0))
        measured(iterations) { _ in sink(declareHundredKeys(suite, migrated: migrated)) }
    case "open100-migrated", "open100-plain":
        // As the benchmark "open a suite and declare 100 keys": a new suite on a file of its own
        // each time, 80 renamed keys and 20 converted ones declared and read (or the same keys
        // with no migrations, on the same values without a record).
        let migrated = scenario == "open100-migrated"
        let source = URL(fileURLWithPath: directory + "/open100-source.json")
        do {
            let old = Defaults.Suite(fileURL: source)
            old.setStoredValues(
                Dictionary(
                    uniqueKeysWithValues: hundredMixed.enumerated().map { ($1.1[0], .number(String($0 + 30))) }
                )
            )
            try! old.synchronize()
        }
        do {
            let suite = Defaults.Suite(fileURL: source)
            sink(declareAndReadHundredMixed(suite, migrated: true))
            try! suite.synchronize()
            if !migrated { suite.setAppliedMigrations([]) }
            try! suite.synchronize()
        }
        for index in 0..<iterations {
            try! FileManager.default.copyItem(atPath: source.path, toPath: directory + "/open100-\(index).json")
        }
        var suites: [Defaults.Suite] = []
        measured(iterations) { index in
            let suite = Defaults.Suite(fileURL: URL(fileURLWithPath: directory + "/open100-\(index).json"))
            sink(declareAndReadHundredMixed(suite, migrated: migrated))
            suites.append(suite)
        }
        sink(suites)
    default:
        print("unknown scenario \(scenario)")
        exit(2)
    }
}

/// The names of `declareHundredKeys`' keys, and the former name of each: made once, as a
/// program's are literals.
let hundredNames = (0..<100).map { ("setting-\($0)", ["old-\($0)"]) }

/// Creates 100 keys, each renamed from `old-<i>` when `migrated`.
@inline(never)
func declareHundredKeys(_ suite: Defaults.Suite, migrated: Bool) -> [Defaults.Keys] {
    hundredNames.map { name, formerly in
        migrated
            ? Defaults.Key<Int>(name, default: 0, suite: suite, formerly: formerly)
            : Defaults.Key<Int>(name, default: 0, suite: suite)
    }
}

/// The benchmark's 100 keys: 80 renames of an `Int`, 20 conversions of minutes to hours.
let hundredMixed = (0..<100)
    .map { index in
        index < 80 ? ("setting-\(index)", ["old-\(index)"]) : ("hours-\(index)", ["minutes-\(index)"])
    }

/// Declares and reads `hundredMixed`, with their migrations when `migrated`.
@inline(never)
func declareAndReadHundredMixed(_ suite: Defaults.Suite, migrated: Bool) -> Int {
    var sum = 0
    for (index, (name, formerly)) in hundredMixed.enumerated() {
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

/// Creates four keys, with their migrations when `migrated`.
@inline(never)
func declareKeys(_ suite: Defaults.Suite, migrated: Bool) -> [Defaults.Keys] {
    guard migrated else {
        return [
            Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite),
            Defaults.Key<String>("user.name", default: "", suite: suite),
            Defaults.Key<Double>("refreshHours", default: 1, suite: suite),
            Defaults.Key<[Int]>("window.size", default: [], suite: suite),
        ]
    }
    return [
        Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"]),
        Defaults.Key<String>("user.name", default: "", suite: suite, formerly: ["name"]),
        Defaults.Key<Double>("refreshHours", default: 1, suite: suite, formerly: ["refreshMinutes"]) { (minutes: Int) in
            Double(minutes) / 60
        },
        Defaults.Key<[Int]>("window.size", default: [], suite: suite, formerly: ["windowSize"]),
    ]
}

try run(scenario, iterations, in: directory)
