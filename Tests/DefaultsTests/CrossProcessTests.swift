import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Several processes on one file.
///
/// The lock, the merge, the cross-process transaction, and the litter of writers that were killed.
/// Every other process is a real one (the test helper), waited for without holding a thread of the
/// cooperative pool.
@Suite struct CrossProcessTests {
    @Test(arguments: [(processes: 2, keys: 2_000), (processes: 4, keys: 500)])
    func processesWritingDistinctKeysLoseNone(processes: Int, keys: Int) async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let writers = try (0..<processes)
                .map { index in
                    try RunningHelper(["write-keys", file.path, "p\(index)", "\(keys)"])
                }
            for writer in writers {
                let result = await writer.waitForExit()
                #expect(result.status == 0, "\(result.errorOutput)")
            }
            let members = try storeFileObject(file)
            #expect(members.count == processes * keys, "\(processes * keys - members.count) keys were lost")
            for index in 0..<processes {
                #expect(members["p\(index)-0"] as? Int == 0)
                #expect(members["p\(index)-\(keys - 1)"] as? Int == keys - 1)
            }
        }
    }

    @Test func exclusiveTransactionsInFourProcessesCountEveryIncrement() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let incrementers = try (0..<4).map { _ in try RunningHelper(["increment", file.path, "counter", "250"]) }
            for incrementer in incrementers {
                let result = await incrementer.waitForExit()
                #expect(result.status == 0, "\(result.errorOutput)")
                #expect(result.lines == ["incremented 250"])
            }
            #expect(try storeFileObject(file)["counter"] as? Int == 1_000)
        }
    }

    @Test func anExclusiveTransactionStartsFromTheFileAndWritesItBeforeReturning() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let counter = Defaults.Key<Int>("counter", default: 0, suite: suite)
            #expect(suite[counter] == 0)
            // Another process moves the counter on; this one has not seen it yet when it starts.
            let result = try await HelperProcess.run(["write", file.path, "counter", "41"])
            #expect(result.status == 0, "\(result.errorOutput)")
            let seen = try suite.exclusiveTransaction {
                suite[counter] += 1
                return suite[counter]
            }
            #expect(seen == 42)
            #expect(try storeFileObject(file)["counter"] as? Int == 42, "written before it returned")
        }
    }

    @Test func anExclusiveTransactionWhoseWriteFailsKeepsNothing() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"n" : 5}"#.utf8))
            let result = try await HelperProcess.run(["exclusive-full-disk", file.path])
            #expect(result.status == 0, "\(result.errorOutput)")
            // Neither in memory nor later: a counter must not move once the disk has room again,
            // possibly after another process moved it on.
            #expect(result.lines == ["threw", "in memory 5", "synchronized"])
            #expect(try storeFileObject(file)["n"] as? Int == 5)
        }
    }

    @Test func theLockFileSitsBesideTheFileWithMode0600() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory.appendingPathComponent("app"))
            let suite = Defaults.Suite(fileURL: file)
            suite[Defaults.Key<Int>("n", default: 0, suite: suite)] = 1
            try suite.synchronize()
            let lock = file.deletingLastPathComponent().appendingPathComponent("settings.json.lock")
            #expect(try storePermissions(lock) == 0o600)
            #expect(try storeFileObject(file)["n"] as? Int == 1, "the lock file is not the data file")
        }
    }

    @Test func temporaryFilesOfWritersThatWereKilledAreRemovedByTheNextWrite() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            // Left by writers of this file killed mid-write (by a pid that exited, and by one that
            // is now reused): no writer at work can have one while the next holds the lock.
            let left = [".settings.json.tmp-999999-12345", ".settings.json.tmp-1-67890"]
            // Another file's temporary file, in the same directory, is not this file's to remove.
            let unrelated = ".other.json.tmp-999999-1"
            for name in left + [unrelated] {
                try storeWriteFile(directory.appendingPathComponent(name), Array("{ half a fi".utf8))
            }
            let suite = Defaults.Suite(fileURL: file)
            suite[Defaults.Key<Int>("n", default: 0, suite: suite)] = 1
            try suite.synchronize()
            #expect(
                try storeDirectoryListing(directory) == [unrelated, "settings.json", "settings.json.lock"].sorted()
            )
        }
    }

    /// Names of every length, up to the longest a file system takes: the scan of the directory
    /// once read 256 bytes of each entry's name, past the end of readdir's buffer for short last
    /// entries (found by the fuzzer under AddressSanitizer; only a sanitizer build sees the read).
    @Test func temporaryFilesWithNamesOfEveryLengthAreFoundAndOthersKept() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let prefix = ".settings.json.tmp-"
            var left: [String] = []
            var kept: [String] = []
            for length in stride(from: 1, through: 255 - prefix.utf8.count, by: 7) {
                left.append(prefix + String(repeating: "7", count: length))
                kept.append("x" + String(repeating: "k", count: min(length, 250)))
            }
            for name in left + kept { try storeWriteFile(directory.appendingPathComponent(name), [0x7B]) }
            let suite = Defaults.Suite(fileURL: file)
            suite[Defaults.Key<Int>("n", default: 0, suite: suite)] = 1
            try suite.synchronize()
            #expect(try storeDirectoryListing(directory) == (kept + ["settings.json", "settings.json.lock"]).sorted())
        }
    }

    @Test func aHundredKilledWritersNeverBreakTheFileOrLoseASynchronizedValue() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let keys = ["big-a", "big-b"]
            var first = [1, 1]
            var lastSynchronized = [0, 0]
            func start(_ index: Int) throws -> RunningHelper {
                try RunningHelper(["write-forever", file.path, keys[index], "65536", "\(first[index])"])
            }
            var writers = try [start(0), start(1)]
            var generator = SystemRandomNumberGenerator()
            for kill in 0..<100 {
                let index = kill % 2
                // Killed at a random moment: after 1 to 3 values reached the disk, somewhere in the next.
                let target = first[index] + Int.random(in: 0...2, using: &generator)
                let reached = await writers[index].line { $0 == "synced \(target)" }
                try #require(reached != nil, "writer \(keys[index]) stopped before value \(target)")
                writers[index].send(SIGKILL)
                let result = await writers[index].waitForExit()
                #expect(result.status == SIGKILL)
                let printed = result.lines.compactMap { Int($0.dropFirst("synced ".count)) }
                lastSynchronized[index] = max(target, printed.max() ?? target)

                // The file parses, and holds a value at least as new as the last one synchronized.
                let members = try storeFileObject(file)
                let stored = (members[keys[index]] as? [String])?.first.flatMap { Int($0) } ?? 0
                #expect(stored >= lastSynchronized[index], "\(keys[index]): \(stored) < \(lastSynchronized[index])")

                first[index] = lastSynchronized[index] + 1_000_000
                writers[index] = try start(index)
            }
            for writer in writers {
                writer.send(SIGKILL)
                _ = await writer.waitForExit()
            }
            // The next writer clears what the killed ones left.
            let suite = Defaults.Suite(fileURL: file)
            suite[Defaults.Key<Int>("after", default: 0, suite: suite)] = 1
            try suite.synchronize()
            #expect(try storeDirectoryListing(directory) == ["settings.json", "settings.json.lock"])
            let members = try storeFileObject(file)
            for (index, key) in keys.enumerated() {
                let stored = (members[key] as? [String])?.first.flatMap { Int($0) } ?? 0
                #expect(stored >= lastSynchronized[index])
            }
        }
    }
}
