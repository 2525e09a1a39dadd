// defaults-soak: many threads and processes on one settings file for a long time, then checks.
//
//   defaults-soak --seconds N --defaults PATH [--seed S] [--threads 8] [--processes 2] [--worker-threads 4]
//       the coordinator (run it through scripts/soak, which gives it a temporary XDG_CONFIG_HOME)
//   defaults-soak --worker INDEX --seed S --threads N --file PATH
//       a worker process, started by the coordinator; reports on standard output, commands on standard input
//   defaults-soak --dump PATH
//       opens a fresh suite on PATH and prints its values, one "key<TAB>value" a line
//
// See Benchmarks/README.md, "The soak", for what each check means.
import DefaultsObservation
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The entry point: picks the mode from the arguments.
@main
enum Soak {
    @MainActor
    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        let arguments = Array(CommandLine.arguments.dropFirst())
        func value(_ flag: String) -> String? {
            guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
            return arguments[index + 1]
        }
        if let path = value("--dump") {
            exit(dump(path))
        }
        if let worker = value("--worker").flatMap(Int.init), let path = value("--file") {
            let seed = value("--seed").flatMap { UInt64($0) } ?? 1
            let threads = value("--threads").flatMap(Int.init) ?? 4
            let only = Set((value("--only") ?? "").split(separator: ",").map(String.init))
            exit(await onThread { runWorker(index: worker, seed: seed, threads: threads, only: only, path: path) })
        }
        var options = Options()
        if let seconds = value("--seconds").flatMap(Int.init) { options.seconds = seconds }
        if let seed = value("--seed").flatMap({ UInt64($0) }) { options.seed = seed }
        if let threads = value("--threads").flatMap(Int.init) { options.threads = threads }
        if let processes = value("--processes").flatMap(Int.init) { options.processes = processes }
        if let threads = value("--worker-threads").flatMap(Int.init) { options.workerThreads = threads }
        if let only = value("--only") { options.only = Set(only.split(separator: ",").map(String.init)) }
        if arguments.contains("--no-third-actor") { options.thirdActor = false }
        if let limit = value("--rss-limit-mb").flatMap(Int.init) { options.rssLimitMegabytes = limit }
        guard let tool = value("--defaults") else {
            FileHandle.standardError.write(
                Data("usage: defaults-soak --seconds N --defaults PATH (see scripts/soak)\n".utf8)
            )
            exit(2)
        }
        options.toolPath = tool
        // NB: never the real ~/.config: the script points XDG_CONFIG_HOME at a temporary folder.
        guard let home = ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"], home.hasPrefix("/") else {
            FileHandle.standardError.write(
                Data("defaults-soak: XDG_CONFIG_HOME must name a scratch folder; run scripts/soak\n".utf8)
            )
            exit(2)
        }
        let fileURL = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent("soak/settings.json")
        exit(await onThread { [options] in Coordinator(options: options, fileURL: fileURL).run() })
    }
}

/// Runs `body` on a thread of its own and returns its result, leaving the main actor free for the
/// observers that live there.
func onThread(_ body: @escaping @Sendable () -> Int32) async -> Int32 {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.stackSize = 8 << 20
        thread.start()
    }
}

/// The `--dump` mode: a fresh suite's values of the hot keys, the counter and the `sync.*` keys.
func dump(_ path: String) -> Int32 {
    let suite = Defaults.Suite(fileURL: URL(fileURLWithPath: path))
    let keys = SoakKeys(suite: suite)
    var lines = SoakKeys.hotNames.map { "\($0)\t\(keys.canonicalValue(of: $0))" }
    lines.append("counter\t\(suite[keys.counter])")
    for name in suite.storedValues().keys.sorted() where name.hasPrefix("sync.") {
        lines.append("\(name)\t\(suite[Defaults.Key<Int>(name, default: -1, suite: suite)])")
    }
    Output.line(lines.joined(separator: "\n"))
    return 0
}

/// The `--worker` mode: threads like the coordinator's, long-lived observers, and the commands
/// `stop`, `expect <round> <n>` (then n lines "key<TAB>value") and `exit` on standard input.
func runWorker(index: Int, seed: UInt64, threads: Int, only: Set<String>, path: String) -> Int32 {
    let report: @Sendable (Report) -> Void = { Output.line($0.line) }
    Defaults.errorHandler = { error in report(.libraryError(time: now(), text: error.description)) }
    let fileURL = URL(fileURLWithPath: path)
    let suite = Defaults.Suite(fileURL: fileURL)
    let keys = SoakKeys(suite: suite)
    let board = ObserverBoard()
    let observers = LongLivedObservers(keys: keys, board: board)
    let mainObservers = onMainActor { MainActorObservers(keys: keys, board: board) }
    let workers = WorkerProcess(
        process: index,
        threads: threads,
        keys: keys,
        fileURL: fileURL,
        seed: seed,
        only: only,
        report: report
    )
    let reporting = Thread {
        while true {
            report(.progress(time: now(), counts: workers.lanes.map(\.value)))
            usleep(250_000)
        }
    }
    reporting.name = "soak progress"
    reporting.start()
    Output.line("ready")
    workers.start()

    let input = LineReader(descriptor: 0)
    while let line = input.next() {
        let fields = line.split(separator: "\t").map(String.init)
        switch fields.first {
        case "stop":
            guard workers.stop(timeout: 60) else {
                report(.failure(check: .deadlock, text: "the worker threads did not stop within 60 s"))
                continue
            }
            do {
                try suite.synchronize()
            } catch {
                report(.failure(check: .libraryErrors, text: "the last synchronize() threw \(error)"))
            }
            workers.reportTotals()
            report(.stopped)
        case "expect":
            guard fields.count == 3, let count = Int(fields[2]) else { continue }
            var expected: [String: String] = [:]
            for _ in 0..<count {
                let pair = (input.next() ?? "").split(separator: "\t", maxSplits: 1).map(String.init)
                if pair.count == 2 { expected[pair[0]] = pair[1] }
            }
            let mismatches = board.waitUntilMatching(
                expected,
                onlyStoreValueObservers: fields[1] == "live",
                timeout: 20
            )
            report(.observers(round: fields[1], count: board.summary.observers, mismatches: mismatches))
        case "exit":
            observers.stop()
            onMainActor { mainObservers.stop() }
            return 0
        default:
            continue
        }
    }
    return 0
}
