import Foundation
import Synchronization

/// Measures how long the cooperative pool leaves a task waiting, and can say what holds it.
///
/// With two cores the pool has two threads and never adds more. A test that blocks one (waiting
/// for a thread, a process, a semaphore) or works for seconds holds it, and every task of every
/// other test waits meanwhile: an `updates` loop that must deliver a value, a continuation after
/// an `await`. A task beats every 100 ms and a thread of its own watches the beat. When the beat
/// is older than `DEFAULTS_TEST_POOL_WATCHDOG` seconds, the stall's length is printed on the
/// standard error when it ends; with `DEFAULTS_TEST_POOL_WATCHDOG_STACKS` set too, every thread's
/// stack is written (through `gdb`) to a file in `/tmp` when it starts. Off unless asked for:
///
///     DEFAULTS_TEST_POOL_WATCHDOG=3 DEFAULTS_TEST_POOL_WATCHDOG_STACKS=1 swift test
package enum PoolWatchdog {
    private static let started: Bool = {
        guard let text = ProcessInfo.processInfo.environment["DEFAULTS_TEST_POOL_WATCHDOG"],
            let limit = Double(text), limit > 0
        else { return false }
        let lastBeat = Atomic<UInt64>(DispatchTime.now().uptimeNanoseconds)
        Task.detached {
            while true {
                try? await Task.sleep(for: .milliseconds(100))
                lastBeat.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
            }
        }
        let stacks = ProcessInfo.processInfo.environment["DEFAULTS_TEST_POOL_WATCHDOG_STACKS"] != nil
        let thread = Thread {
            var longest = 0.0
            while true {
                usleep(100_000)
                // NB: the beat may land between the two reads, after `now`: no age then, not an
                // overflow (a trap, seen once in a hunt run under TSan).
                let now = DispatchTime.now().uptimeNanoseconds
                let beat = lastBeat.load(ordering: .relaxed)
                let age = Double(now > beat ? now - beat : 0) / 1e9
                if age >= limit {
                    if longest == 0, stacks { dumpStacks(age: age) }
                    longest = max(longest, age)
                } else if longest > 0 {
                    FileHandle.standardError.write(Data("pool watchdog: the pool ran nothing for \(longest) s\n".utf8))
                    longest = 0
                }
            }
        }
        thread.start()
        return true
    }()

    /// Starts the watchdog, once per process, when the environment asks for it.
    package static func startIfAsked() {
        _ = started
    }

    private static func dumpStacks(age: Double) {
        let pid = ProcessInfo.processInfo.processIdentifier
        // NB: into a file, not a pipe: gdb stops this whole process, the reader of a pipe too.
        let path = "/tmp/pool-stall-\(pid)-\(UInt64(Date().timeIntervalSince1970 * 1000)).txt"
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let file = FileHandle(forWritingAtPath: path) else { return }
        let gdb = Process()
        gdb.executableURL = URL(fileURLWithPath: "/usr/bin/gdb")
        gdb.arguments = ["-p", "\(pid)", "-batch", "-ex", "thread apply all bt 30"]
        gdb.standardOutput = file
        gdb.standardError = FileHandle.nullDevice
        gdb.standardInput = FileHandle.nullDevice
        do {
            try gdb.run()
        } catch {
            FileHandle.standardError.write(Data("pool watchdog: gdb did not start: \(error)\n".utf8))
            return
        }
        gdb.waitUntilExit()
        try? file.close()
        FileHandle.standardError.write(
            Data("pool watchdog: the cooperative pool ran nothing for \(age) s; stacks in \(path)\n".utf8)
        )
    }
}
