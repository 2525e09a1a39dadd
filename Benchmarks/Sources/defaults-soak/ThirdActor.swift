// The third actor: a person and their tools at the settings file while the program runs. It edits
// the file in place (`echo > file`), saves it as an editor does (a new file renamed over it), runs
// `defaults write`, and now and then breaks the file for a moment before restoring it.
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The third actor, on a thread of the coordinator.
///
/// Its own edits take the file's lock first (an exclusive `flock` of `settings.json.lock`, the
/// convention the library documents for every writer), so they are read-modify-writes that lose no
/// other process's write, and the counter it increases under it stays exact. It records the
/// moments the file is not whole because of it (an in-place rewrite, a deliberate break), so the
/// reader can tell those from a real torn file.
final class ThirdActor: Sendable {
    /// What it did.
    struct Counts {
        var inPlace = 0
        var renamed = 0
        var tool = 0
        var broken = 0
        var increments = 0
    }

    /// A span of time when the file may not be whole because of the third actor.
    private struct Window {
        let start: Int
        var end: Int?
    }

    let lane = Lane("third actor")
    private let path: String
    private let lockPath: String
    private let directory: String
    private let toolPath: String
    private let seed: UInt64
    private let report: @Sendable (Report) -> Void
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let windows = Mutex<[Window]>([])
    private let counts = Mutex(Counts())

    init(fileURL: URL, toolPath: String, seed: UInt64, report: @escaping @Sendable (Report) -> Void) {
        path = fileURL.path
        lockPath = path + ".lock"
        directory = fileURL.deletingLastPathComponent().path
        self.toolPath = toolPath
        self.seed = seed
        self.report = report
    }

    var totals: Counts { counts.withLock { $0 } }

    /// Whether a read from `start` to `end` overlapped a moment the third actor had the file broken.
    func excuses(readFrom start: Int, to end: Int) -> Bool {
        windows.withLock { windows in
            windows.contains { $0.start <= end && ($0.end ?? .max) >= start }
        }
    }

    /// How many times it broke or rewrote the file in place.
    var windowCount: Int { counts.withLock { $0.inPlace + $0.broken } }

    func start() {
        let thread = Thread { [self] in
            var random = SoakRandom(seed: threadSeed(seed, process: 0, thread: 99))
            var tag = 1_000_000_000_000
            while !stopping.load(ordering: .relaxed) {
                tag += 1
                switch random.int(0..<100) {
                case 0..<30: edit(inPlace: true, tag: tag, random: &random)
                case 30..<60: edit(inPlace: false, tag: tag, random: &random)
                case 60..<85: runTool(tag: tag, random: &random)
                default: breakForAMoment(random: &random)
                }
                lane.tick()
                usleep(UInt32(random.int(10_000..<100_000)))
            }
            finished.signal()
        }
        thread.name = "soak third actor"
        thread.start()
    }

    /// Tells it to stop and waits up to `timeout` seconds; false if it did not.
    func stop(timeout: Double) -> Bool {
        stopping.store(true, ordering: .relaxed)
        return finished.wait(timeout: .now() + timeout) == .success
    }

    private func fail(_ check: Check, _ text: String) {
        report(.failure(check: check, text: "third actor: \(text)"))
    }

    /// Runs `body` holding the file's lock, as every writer of the file does.
    private func withFileLock(_ body: () -> Void) {
        let descriptor = open(lockPath, O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            fail(.libraryErrors, "cannot open the lock file: \(String(cString: strerror(errno)))")
            return
        }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else {
                fail(.libraryErrors, "cannot lock the lock file: \(String(cString: strerror(errno)))")
                return
            }
        }
        defer { flock(descriptor, LOCK_UN) }
        body()
    }

    /// The file's members, read under the lock: it must parse then, since every writer replaces it whole.
    private func membersUnderLock() -> (Data, [String: AnyJSON])? {
        guard let bytes = readWholeFile(path) else {
            fail(.parses, "the file is missing")
            return nil
        }
        guard let members = AnyJSON.members(of: bytes) else {
            fail(
                .parses,
                "the file does not parse under the lock: \(String(decoding: bytes.prefix(200), as: UTF8.self))"
            )
            return nil
        }
        return (bytes, members)
    }

    private func openWindow() -> Int {
        let start = now()
        windows.withLock { windows in
            // NB: only recent windows can excuse a read; older ones go, so the list stays short.
            windows.removeAll { ($0.end ?? .max) < start - 60_000_000_000 }
            windows.append(Window(start: start))
        }
        return start
    }

    private func closeWindow(_ start: Int) {
        let end = now()
        windows.withLock { windows in
            if let index = windows.lastIndex(where: { $0.start == start }) { windows[index].end = end }
        }
    }

    /// Writes `data` over the file in place: truncate, then write, as a shell's `>` does.
    private func writeInPlace(_ data: Data) -> Bool {
        let descriptor = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        let written = writeAll(data, to: descriptor)
        return close(descriptor) == 0 && written
    }

    /// Writes `data` to a new file beside the settings file and renames it over, as an editor saves.
    private func writeByRename(_ data: Data) -> Bool {
        let temporary = directory + "/.settings.json.soak-editor"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        let written = writeAll(data, to: descriptor) && fsync(descriptor) == 0
        guard close(descriptor) == 0, written, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    /// Changes some hot keys, the pair and the counter, and saves the whole file.
    private func edit(inPlace: Bool, tag: Int, random: inout SoakRandom) {
        let wrongType = random.chance(0.05)
        let flag = random.chance(0.5)
        withFileLock {
            guard var (_, members) = membersUnderLock() else { return }
            let counter: Int
            switch members["counter"] {
            case nil: counter = 0
            case .int(let value)?: counter = value
            case let other?:
                fail(.counter, "the counter is not an integer: \(other)")
                return
            }
            members["hot.int"] = .int(tag)
            members["hot.double"] = .double(Double(tag % 1_000_000) / 4)
            members["hot.bool"] = .bool(flag)
            // NB: now and then a value of the wrong type: it reads as the default, and stays.
            members["hot.optional"] = wrongType ? .int(tag) : .string("e\(tag)")
            members["pair.a"] = .string("e\(tag)")
            members["pair.b"] = .string("e\(tag)")
            members["counter"] = .int(counter + 1)
            members["third.edit"] = .int(tag)
            let document = AnyJSON.document(members)
            let saved: Bool
            if inPlace {
                let window = openWindow()
                saved = writeInPlace(document)
                closeWindow(window)
            } else {
                saved = writeByRename(document)
            }
            guard saved else {
                fail(.parses, "could not save the file: \(String(cString: strerror(errno)))")
                return
            }
            counts.withLock { counts in
                counts.increments += 1
                if inPlace { counts.inPlace += 1 } else { counts.renamed += 1 }
            }
        }
    }

    /// Runs the `defaults` command to write one key, naming the suite or the file.
    private func runTool(tag: Int, random: inout SoakRandom) {
        let suite = random.chance(0.5) ? path : "soak"
        let arguments: [String]
        switch random.int(0..<4) {
        case 0: arguments = ["write", suite, "hot.string", "--string", "d\(tag)"]
        case 1: arguments = ["write", suite, "hot.list", "[\"d\(tag)\", \"x\"]"]
        case 2: arguments = ["write", suite, "hot.int", "\(tag)"]
        default: arguments = ["write", suite, "third.tool", "\(tag)"]
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: toolPath)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            fail(.processes, "cannot run \(toolPath): \(error)")
            return
        }
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            fail(
                .processes,
                "defaults \(arguments.joined(separator: " ")) ended with \(process.terminationStatus): "
                    + String(decoding: message, as: UTF8.self)
            )
            return
        }
        counts.withLock { $0.tool += 1 }
    }

    /// Breaks the file in place for 5 to 100 ms, then restores it in place or by rename.
    private func breakForAMoment(random: inout SoakRandom) {
        let pause = random.int(5_000..<100_000)
        let style = random.int(0..<3)
        let restoresByRename = random.chance(0.5)
        withFileLock {
            guard let (good, _) = membersUnderLock() else { return }
            let broken: Data =
                switch style {
                case 0: good.prefix(good.count / 2)
                case 1: Data("{\n  \"hot.int\" : ".utf8)
                default: Data("not json at all\n".utf8)
                }
            let window = openWindow()
            let wrote = writeInPlace(broken)
            usleep(UInt32(pause))
            let restored = restoresByRename ? writeByRename(good) : writeInPlace(good)
            closeWindow(window)
            guard wrote, restored else {
                fail(.parses, "could not break and restore the file: \(String(cString: strerror(errno)))")
                return
            }
            counts.withLock { $0.broken += 1 }
        }
    }
}
