// What a process of the soak tells the coordinator. In a worker process each report is one line of
// standard output; in the coordinator's own process it is handed over directly.

/// One thing a process reports.
enum Report: Sendable {
    /// The progress counters of the process's threads, at `time`.
    case progress(time: Int, counts: [Int])
    /// Key `key` was set to `sequence` at `writeStart`, and a `synchronize()` after it returned at `syncEnd`.
    case synced(key: String, sequence: Int, writeStart: Int, syncEnd: Int)
    /// A `removeAll()` (in an exclusive transaction that keeps the counter) ran from `start` to `end`.
    case removedAll(start: Int, end: Int)
    /// The library reported a problem to the error handler at `time`.
    case libraryError(time: Int, text: String)
    /// Something a check forbids was seen.
    case failure(check: Check, text: String)
    /// After stopping: the last value thread's key `key` was set to, and when.
    case written(key: String, sequence: Int, writeStart: Int)
    /// After stopping: how many exclusive-transaction increments of the counter succeeded.
    case increments(Int)
    /// After stopping: how many operations of kind `name` the process made.
    case operations(name: String, count: Int)
    /// Every thread stopped and the process synchronized.
    case stopped
    /// Observers that do not hold the expected values at the end of round `round` (none: all do).
    case observers(round: String, count: Int, mismatches: [String])

    /// The line that carries it.
    var line: String {
        switch self {
        case .progress(let time, let counts):
            return (["progress", "\(time)"] + counts.map(String.init)).joined(separator: "\t")
        case .synced(let key, let sequence, let writeStart, let syncEnd):
            return "synced\t\(key)\t\(sequence)\t\(writeStart)\t\(syncEnd)"
        case .removedAll(let start, let end):
            return "removedAll\t\(start)\t\(end)"
        case .libraryError(let time, let text):
            return "libraryError\t\(time)\t\(oneLine(text))"
        case .failure(let check, let text):
            return "failure\t\(check.rawValue)\t\(oneLine(text))"
        case .written(let key, let sequence, let writeStart):
            return "written\t\(key)\t\(sequence)\t\(writeStart)"
        case .increments(let count):
            return "increments\t\(count)"
        case .operations(let name, let count):
            return "operations\t\(name)\t\(count)"
        case .stopped:
            return "stopped"
        case .observers(let round, let count, let mismatches):
            return (["observers", round, "\(count)"] + mismatches.map(oneLine)).joined(separator: "\t")
        }
    }

    /// The report a line carries; `nil` for a line that is not one.
    init?(line: String) {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        func int(_ index: Int) -> Int? { index < fields.count ? Int(fields[index]) : nil }
        switch fields.first {
        case "progress":
            guard let time = int(1) else { return nil }
            self = .progress(time: time, counts: fields.dropFirst(2).compactMap { Int($0) })
        case "synced":
            guard fields.count == 5, let sequence = int(2), let start = int(3), let end = int(4) else { return nil }
            self = .synced(key: fields[1], sequence: sequence, writeStart: start, syncEnd: end)
        case "removedAll":
            guard let start = int(1), let end = int(2) else { return nil }
            self = .removedAll(start: start, end: end)
        case "libraryError":
            guard fields.count == 3, let time = int(1) else { return nil }
            self = .libraryError(time: time, text: fields[2])
        case "failure":
            guard fields.count == 3, let check = Check(rawValue: fields[1]) else { return nil }
            self = .failure(check: check, text: fields[2])
        case "written":
            guard fields.count == 4, let sequence = int(2), let start = int(3) else { return nil }
            self = .written(key: fields[1], sequence: sequence, writeStart: start)
        case "increments":
            guard let count = int(1) else { return nil }
            self = .increments(count)
        case "operations":
            guard fields.count == 3, let count = int(2) else { return nil }
            self = .operations(name: fields[1], count: count)
        case "stopped":
            self = .stopped
        case "observers":
            guard fields.count >= 3, let count = int(2) else { return nil }
            self = .observers(round: fields[1], count: count, mismatches: Array(fields.dropFirst(3)))
        default:
            return nil
        }
    }
}

/// The checks, in the order they are printed.
enum Check: String, CaseIterable, Sendable {
    case deadlock
    case memory
    case parses
    case libraryErrors
    case halfTransactions
    case synchronized
    case observersLive
    case observersQuiet
    case temporaryFiles
    case counter
    case withoutPropagation
    case synchronousDelivery
    case trackingOnce
    case processes

    /// What passing it means, for the check's line.
    var title: String {
        switch self {
        case .deadlock: "no deadlock: every thread of every process made progress at least every 10 s"
        case .memory: "RSS flat: at most 10% growth over the second half, each process"
        case .parses: "the file parses at every moment it is read (but while the third actor breaks it)"
        case .libraryErrors: "the library reported no problem, and moved no file aside"
        case .halfTransactions: "no half transaction seen: pair.a = pair.b in every read of the file and of a suite"
        case .synchronized: "every value a process synchronize()d is there afterwards, unless a later write replaced it"
        case .observersLive:
            "observers that read the store end on what a fresh suite reads, after the run, with no final write"
        case .observersQuiet: "every observer ends on what a fresh suite reads after one final quiet write"
        case .temporaryFiles: "no temporary file remains (settings folder, TMPDIR)"
        case .counter: "the counter equals the number of increments made under the file's lock"
        case .withoutPropagation: "no write made inside withoutPropagation reached an observer of its process"
        case .synchronousDelivery: "a write's observers in its own process ran before the write returned"
        case .trackingOnce: "withObservationTracking over @ObservableDefault calls onChange once per round"
        case .processes: "every process ran to the end and exited normally"
        }
    }
}
