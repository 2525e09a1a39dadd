// Other processes for the tests in Tests/DefaultsEtcdTests; not an example to copy.
//
//     etcd-test-helper increment <endpoints> <prefix> <key> <count>
//         adds one to the Int key <count> times, each in an exclusive transaction; prints "done".
//     etcd-test-helper write <endpoints> <prefix> <key>=<int>...
//         writes the keys in one transaction, synchronizes, and prints "written".
//     etcd-test-helper write-many <endpoints> <prefix> <name> <count>
//         writes "<name>-<i>" = i for each i below <count>, each followed by synchronize(), which it
//         calls again (after a short pause) until it succeeds; prints "synced <i+1>" after each.
//     etcd-test-helper write-burst <endpoints> <prefix> <name> <count>
//         writes "<name>-<i>" = i for each i below <count> as fast as it can, then synchronizes once;
//         prints "written".
//     etcd-test-helper migrate <endpoints> <prefix>
//         opens the suite as a new version whose "editor.fontSize" was "fontSize", and runs the
//         suite's migration "2: count the runs" (which adds one to "migrationRuns", and a line to
//         the file $DEFAULTS_TEST_MIGRATION_RUNS_LOG names, if it is set, after a pause of
//         $DEFAULTS_TEST_MIGRATION_PAUSE_MS); it starts migrating at $DEFAULTS_TEST_START_AT (seconds
//         since 1970), if set; prints "applied <ids>" (what this process ran) and
//         "editor.fontSize <value>".
//     etcd-test-helper open-migrating <endpoints> <prefix>
//         opens the suite as a new version whose "port" was "listenPort", whose "theme" was the
//         Bool "darkMode", and whose "window" gained a member; prints what the three read at once
//         ("read <port> <theme> <width>x<height> <maximized>"), then after synchronize() again.
//
// <endpoints> is a comma-separated list of client URLs.
import Defaults
import DefaultsEtcd
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("etcd-test-helper: \(message)\n".utf8))
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count >= 4 else { fail("usage: etcd-test-helper <command> <endpoints> <prefix> ...") }
let endpoints = arguments[2].split(separator: ",").compactMap { URL(string: String($0)) }
let suite = Defaults.Suite(etcd: endpoints, prefix: arguments[3]) { error in
    FileHandle.standardError.write(Data("etcd-test-helper: reported: \(error)\n".utf8))
}

switch arguments[1] {
case "increment":
    guard arguments.count == 6, let count = Int(arguments[5]) else {
        fail("usage: increment <endpoints> <prefix> <key> <count>")
    }
    let key = Defaults.Key<Int>(arguments[4], default: 0, suite: suite)
    for _ in 0..<count {
        do {
            try suite.exclusiveTransaction { suite[key] += 1 }
        } catch {
            fail("exclusiveTransaction threw \(error)")
        }
    }
    print("done")
case "migrate":
    let counting = Defaults.Migration("2: count the runs") { values in
        let runs = try values.value(named: "migrationRuns", as: Int.self) ?? 0
        try values.setValue(runs + 1, named: "migrationRuns")
        // A body that takes a while, so processes started together overlap in it.
        if let pause = ProcessInfo.processInfo.environment["DEFAULTS_TEST_MIGRATION_PAUSE_MS"].flatMap(Int.init) {
            usleep(UInt32(pause) * 1000)
        }
        // Each time the body runs, in any process: a line in the log the test names.
        if let log = ProcessInfo.processInfo.environment["DEFAULTS_TEST_MIGRATION_RUNS_LOG"],
            let handle = FileHandle(forWritingAtPath: log)
        {
            handle.seekToEndOfFile()
            handle.write(Data("ran \(getpid())\n".utf8))
            handle.closeFile()
        }
    }
    // A barrier: processes started together migrate at the same moment, whenever each started.
    if let start = ProcessInfo.processInfo.environment["DEFAULTS_TEST_START_AT"].flatMap(Double.init) {
        let wait = start - Date().timeIntervalSince1970
        if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
    }
    let report: Defaults.MigrationReport
    do {
        report = try suite.migrate([counting])
    } catch {
        fail("migrate threw \(error)")
    }
    let fontSize = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
    do {
        try suite.synchronize()
    } catch {
        fail("synchronize threw \(error)")
    }
    print("applied \(report.applied.joined(separator: "|"))")
    print("editor.fontSize \(suite[fontSize])")
case "open-migrating":
    struct WindowV1: Codable, Defaults.Serializable {
        var width: Int
        var height: Int
    }
    struct Window: Codable, Defaults.Serializable {
        var width: Int
        var height: Int
        var maximized: Bool
    }
    let port = Defaults.Key<Int>("port", default: 8080, suite: suite, formerly: ["listenPort"])
    let theme = Defaults.Key<String>("theme", default: "system", suite: suite, formerly: ["darkMode"]) {
        (dark: Bool) in dark ? "dark" : "light"
    }
    let window = Defaults.Key<Window>(
        "window",
        default: Window(width: 640, height: 480, maximized: false),
        suite: suite
    ) { (old: WindowV1) in Window(width: old.width, height: old.height, maximized: false) }
    func show() {
        let shown = suite[window]
        print("read \(suite[port]) \(suite[theme]) \(shown.width)x\(shown.height) \(shown.maximized)")
    }
    show()
    do {
        try suite.synchronize()
    } catch {
        fail("synchronize threw \(error)")
    }
    show()
case "write":
    suite.transaction {
        for pair in arguments.dropFirst(4) {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let value = Int(parts[1]) else { fail("not key=int: \(pair)") }
            suite[Defaults.Key<Int>(String(parts[0]), default: 0, suite: suite)] = value
        }
    }
    do {
        try suite.synchronize()
    } catch {
        fail("synchronize threw \(error)")
    }
    print("written")
case "write-many":
    guard arguments.count == 6, let count = Int(arguments[5]) else {
        fail("usage: write-many <endpoints> <prefix> <name> <count>")
    }
    for index in 0..<count {
        suite[Defaults.Key<Int>("\(arguments[4])-\(index)", default: -1, suite: suite)] = index
        // A write is committed once synchronize() returns; while the cluster elects a new
        // leader it throws, and the write waits in memory for the next try.
        while (try? suite.synchronize()) == nil { usleep(50_000) }
        print("synced \(index + 1)")
        fflush(nil)
    }
case "write-burst":
    guard arguments.count == 6, let count = Int(arguments[5]) else {
        fail("usage: write-burst <endpoints> <prefix> <name> <count>")
    }
    for index in 0..<count { suite[Defaults.Key<Int>("\(arguments[4])-\(index)", default: -1, suite: suite)] = index }
    do {
        try suite.synchronize()
    } catch {
        fail("synchronize threw \(error)")
    }
    print("written")
default:
    fail("unknown command \(arguments[1])")
}
