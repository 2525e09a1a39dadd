// The coordinator: starts the worker processes, runs its own worker threads, the third actor, the
// file's reader and the watchdog, stops everything, and checks what happened.
import DefaultsObservation
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The run, from the coordinator's side.
final class Coordinator {
    let options: Options
    let fileURL: URL
    let ledger = Ledger(runStart: now())
    var children: [Child] = []
    var rss: [Int: [(time: Int, kilobytes: Int)]] = [:]
    var quietSince: [String: (value: Int, since: Int)] = [:]
    var longestQuiet: (lane: String, nanoseconds: Int) = ("", 0)
    var runEnd = 0

    init(options: Options, fileURL: URL) {
        self.options = options
        self.fileURL = fileURL
    }

    func say(_ text: String) {
        Output.line(text)
    }

    func run() -> Int32 {
        let ledger = ledger
        let report: @Sendable (Report) -> Void = { ledger.handle($0, from: 0) }
        Defaults.errorHandler = { error in report(.libraryError(time: now(), text: error.description)) }
        let folder = fileURL.deletingLastPathComponent()
        let temporaryFolder = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        let temporaryBefore = Set((try? FileManager.default.contentsOfDirectory(atPath: temporaryFolder)) ?? [])
        say(
            "soak: \(options.seconds) s, seed \(options.seed); \(options.threads) threads here, "
                + "\(options.processes) more processes × \(options.workerThreads) threads, the third actor; "
                + "file \(fileURL.path)"
        )

        let suite = Defaults.Suite(fileURL: fileURL)
        let keys = SoakKeys(suite: suite)
        suite.transaction {
            suite[keys.pairA] = "start"
            suite[keys.pairB] = "start"
        }
        do {
            try suite.synchronize()
        } catch {
            say("cannot write \(fileURL.path): \(error)")
            return 2
        }
        let board = ObserverBoard()
        let observers = LongLivedObservers(keys: keys, board: board)
        let mainObservers = onMainActor { MainActorObservers(keys: keys, board: board) }

        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        for index in 1...max(1, options.processes) where options.processes > 0 {
            let child = Child(
                index: index,
                executable: executable,
                arguments: [
                    "--worker", "\(index)", "--seed", "\(options.seed)", "--threads", "\(options.workerThreads)",
                    "--file", fileURL.path, "--only", options.only.sorted().joined(separator: ","),
                ]
            )
            do {
                try child.start(ledger: ledger)
            } catch {
                say("cannot start a worker process: \(error)")
                return 2
            }
            children.append(child)
        }
        guard ledger.wait(timeout: 60, until: { $0.isReady(self.options.processes) }) else {
            abort("the worker processes did not get ready within 60 s")
        }

        let workers = WorkerProcess(
            process: 0,
            threads: options.threads,
            keys: keys,
            fileURL: fileURL,
            seed: options.seed,
            only: options.only,
            report: report
        )
        let thirdActor = ThirdActor(fileURL: fileURL, toolPath: options.toolPath, seed: options.seed, report: report)
        let reader = RawReader(path: fileURL.path, ledger: ledger, thirdActor: thirdActor)
        let lanes = workers.lanes + [reader.lane] + (options.thirdActor ? [thirdActor.lane] : [])
        let start = now()
        workers.start()
        if options.thirdActor { thirdActor.start() }
        reader.start()

        // The watchdog, on this thread: progress, memory, samples, a line of status now and then.
        let end = start + options.seconds * 1_000_000_000
        let statusEvery = max(10, options.seconds / 20) * 1_000_000_000
        var nextStatus = start + statusEvery
        while now() < end {
            usleep(250_000)
            let time = now()
            sampleMemory(at: time)
            // NB: a runaway would take the shared machine's memory long before the end.
            for (index, samples) in rss {
                guard let last = samples.last, last.kilobytes > options.rssLimitMegabytes * 1024 else { continue }
                abort(
                    "the RSS of p\(index) reached \(last.kilobytes / 1024) MB, over the \(options.rssLimitMegabytes) MB limit",
                    check: .memory
                )
            }
            if let stalled = stalledLane(lanes: lanes, at: time) { abort("no progress for 10 s: \(stalled)") }
            let stamps = children.compactMap { ledger.lastProgress(of: $0.index)?.time }
            ledger.checkSamples(before: min(time, stamps.min() ?? time) - 10_000_000_000)
            if time >= nextStatus {
                nextStatus += statusEvery
                say(status(at: time, lanes: lanes, thirdActor: thirdActor))
            }
        }
        runEnd = now()

        // Stop everything, then check.
        say("stopping: every thread, the third actor, each process synchronizes")
        for child in children { child.send(["stop"]) }
        guard !options.thirdActor || thirdActor.stop(timeout: 30) else {
            abort("the third actor did not stop within 30 s")
        }
        guard workers.stop(timeout: 60) else { abort("this process's worker threads did not stop within 60 s") }
        do {
            try suite.synchronize()
        } catch {
            ledger.fail(.libraryErrors, "p0: the last synchronize() threw \(error)")
        }
        workers.reportTotals()
        let others = children.map(\.index)
        guard ledger.wait(timeout: 90, until: { $0.haveStopped(others) }) else {
            abort("a worker process did not stop within 90 s")
        }
        guard reader.stop(timeout: 10) else { abort("the file reader did not stop within 10 s") }
        if reader.readOnce(sample: true) == nil { ledger.fail(.parses, "the file does not parse after the run") }
        ledger.checkSamples(before: .max)

        // Round one: no more writes; observers that read the store must end on a fresh suite's values.
        guard let live = freshValues() else { abort("a fresh suite could not read the file within 60 s") }
        compareObservers(round: "live", expected: live, board: board, onlyStoreValueObservers: true)

        // Round two: one quiet write of every hot key, in one transaction; every observer must end on it.
        let quiet = 777_000_000_000
        suite.transaction {
            for (offset, name) in SoakKeys.hotNames.enumerated() { keys.write(name, tag: quiet + offset) }
            suite[keys.pairA] = "quiet"
            suite[keys.pairB] = "quiet"
        }
        do {
            try suite.synchronize()
        } catch {
            ledger.fail(.libraryErrors, "p0: synchronize() after the quiet write threw \(error)")
        }
        guard let final = freshValues() else { abort("a fresh suite could not read the file within 60 s") }
        let written = keys.canonicalValues(of: SoakKeys.hotNames)
        for name in SoakKeys.hotNames where final[name] != written[name] {
            ledger.fail(
                .observersQuiet,
                "a fresh suite reads \(name) = \(final[name] ?? "nothing"), written \(written[name]!)"
            )
        }
        compareObservers(round: "quiet", expected: final, board: board, onlyStoreValueObservers: false)

        for child in children { child.send(["exit"]) }
        for child in children {
            child.process.waitUntilExit()
            if child.process.terminationReason != .exit || child.process.terminationStatus != 0 {
                let how = child.process.terminationReason == .exit ? "exited with" : "was killed by signal"
                ledger.fail(.processes, "p\(child.index) \(how) \(child.process.terminationStatus)")
            }
        }
        observers.stop()
        onMainActor { mainObservers.stop() }

        // The checks.
        let summary = checkEverything(
            final: final,
            folder: folder,
            temporaryFolder: temporaryFolder,
            temporaryBefore: temporaryBefore,
            thirdActor: thirdActor,
            reader: reader
        )
        return summary.failed == 0 ? 0 : 1
    }

    /// Reads the file with a fresh suite in a process of its own: the hot keys' canonical values,
    /// the counter and the `sync.*` keys.
    func freshValues() -> [String: String]? {
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--dump", fileURL.path]
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            return nil
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        var values: [String: String] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: "\t", maxSplits: 1).map(String.init)
            if fields.count == 2 { values[fields[0]] = fields[1] }
        }
        return values
    }

    /// Every process compares its observers with `expected`, waiting up to 20 s for them.
    func compareObservers(
        round: String,
        expected: [String: String],
        board: ObserverBoard,
        onlyStoreValueObservers: Bool
    ) {
        let hot = SoakKeys.hotNames.map { "\($0)\t\(expected[$0] ?? "")" }
        for child in children { child.send(["expect\t\(round)\t\(hot.count)"] + hot) }
        let mismatches = board.waitUntilMatching(
            expected,
            onlyStoreValueObservers: onlyStoreValueObservers,
            timeout: 20
        )
        ledger.handle(.observers(round: round, count: board.summary.observers, mismatches: mismatches), from: 0)
        let others = children.map(\.index)
        if !ledger.wait(timeout: 60, until: { $0.haveObserverResults(round, from: others) }) {
            ledger.fail(
                round == "live" ? .observersLive : .observersQuiet,
                "a worker process did not answer within 60 s"
            )
        }
    }

    // MARK: - The watchdog

    func sampleMemory(at time: Int) {
        let last = rss[0]?.last?.time ?? 0
        guard time - last >= 1_000_000_000 else { return }
        for (index, pid) in [(0, getpid())] + children.map({ ($0.index, $0.pid) }) {
            if let kilobytes = residentKilobytes(of: pid) { rss[index, default: []].append((time, kilobytes)) }
        }
    }

    /// A lane (a thread, here or in a worker process) whose counter has not moved for 10 s.
    func stalledLane(lanes: [Lane], at time: Int) -> String? {
        var current: [(String, Int)] = lanes.map { ($0.name, $0.value) }
        for child in children {
            // NB: a process that stopped reporting at all stalls every lane it has.
            let counts = ledger.lastProgress(of: child.index)?.counts ?? []
            for (thread, count) in counts.enumerated() { current.append(("p\(child.index) thread \(thread)", count)) }
            current.append(("p\(child.index) reports", ledger.lastProgress(of: child.index)?.time ?? 0))
        }
        for (name, value) in current {
            guard let seen = quietSince[name], seen.value == value else {
                quietSince[name] = (value, time)
                continue
            }
            let quiet = time - seen.since
            if quiet > longestQuiet.nanoseconds { longestQuiet = (name, quiet) }
            if quiet > 10_000_000_000 { return name }
        }
        return nil
    }

    func status(at time: Int, lanes: [Lane], thirdActor: ThirdActor) -> String {
        var perProcess = ["p0 \(lanes.filter { $0.name.hasPrefix("p0 ") }.reduce(0) { $0 + $1.value })"]
        for child in children {
            perProcess.append("p\(child.index) \(ledger.lastProgress(of: child.index)?.counts.reduce(0, +) ?? 0)")
        }
        let third = thirdActor.totals
        let memory = rss.keys.sorted()
            .compactMap { index in rss[index]?.last.map { "p\(index) \($0.kilobytes / 1024) MB" } }
        return
            "\(ledger.at(time)): operations \(perProcess.joined(separator: ", ")); third actor \(third.inPlace) in place, "
            + "\(third.renamed) renamed, \(third.tool) defaults write, \(third.broken) broken; RSS "
            + memory.joined(separator: ", ")
    }

    /// Ends the run at once: for a stall, with every thread's stack of every process first.
    func abort(_ reason: String, check: Check = .deadlock) -> Never {
        if check == .deadlock {
            say("DEADLOCK? \(reason); the stacks of every process follow")
            for (index, pid) in [(0, getpid())] + children.map({ ($0.index, $0.pid) }) {
                say("---- p\(index), pid \(pid)")
                say(stacks(of: pid))
            }
        } else {
            say("STOPPED: \(reason)")
        }
        for child in children { kill(child.pid, SIGKILL) }
        say("FAIL  \(check.title)\n      \(reason)")
        for other in Check.allCases where other != check {
            say("FAIL  \(other.title)\n      not checked: the run was stopped")
        }
        say("0 passed, \(Check.allCases.count) failed")
        // NB: no exit handlers: the library's last flush may wait for the threads that are stuck.
        _exit(1)
    }

    /// Every thread's stack of process `pid`: gdb when installed, else what /proc tells.
    func stacks(of pid: Int32) -> String {
        for gdb in ["/usr/bin/gdb", "/usr/local/bin/gdb"] where FileManager.default.isExecutableFile(atPath: gdb) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
            process.arguments = [
                "120", gdb, "-p", "\(pid)", "-batch", "-nx", "-ex", "set pagination off", "-ex", "thread apply all bt",
            ]
            // NB: into a file, not a pipe: gdb stops every thread of the process it looks at, so
            // this process's own stacks would stop the thread reading the pipe, and gdb with it.
            let file = NSTemporaryDirectory() + "/soak-stacks-\(pid).txt"
            guard FileManager.default.createFile(atPath: file, contents: nil),
                let handle = FileHandle(forWritingAtPath: file)
            else { continue }
            defer { try? FileManager.default.removeItem(atPath: file) }
            process.standardOutput = handle
            process.standardError = handle
            if (try? process.run()) != nil {
                process.waitUntilExit()
                try? handle.close()
                return readWholeFile(file).map { String(decoding: $0, as: UTF8.self) } ?? "(gdb wrote nothing)"
            }
        }
        var text = "(no gdb: each thread's name, wait channel and system call from /proc)\n"
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks.sorted() {
            let base = "/proc/\(pid)/task/\(task)/"
            func field(_ name: String) -> String {
                readWholeFile(base + name).map { String(decoding: $0, as: UTF8.self) }?
                    .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            }
            text += "thread \(task) \(field("comm")): wchan \(field("wchan")), syscall \(field("syscall"))\n"
            let stack = field("stack")
            if stack != "?" { text += stack + "\n" }
        }
        return text
    }
}

/// Runs `body` on the main actor and waits for it, from a thread that is not the main thread.
func onMainActor<Result: Sendable>(_ body: @escaping @MainActor @Sendable () -> Result) -> Result {
    let result = Mutex<Result?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task { @MainActor in
        let value = body()
        result.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return result.withLock { $0! }
}
