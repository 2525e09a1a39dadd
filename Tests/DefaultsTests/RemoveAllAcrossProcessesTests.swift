import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// `removeAll()` on a file suite empties the file when it is written, keys another process wrote
/// that this one had not read included; keys written after it, by anyone, stay.
@Suite struct RemoveAllAcrossProcessesTests {
    enum Watcher: String, CaseIterable, CustomTestStringConvertible {
        case inotify, poll
        var testDescription: String { rawValue }
        var environment: [String: String] { self == .poll ? ["DEFAULTS_WATCHER": "poll"] : [:] }
    }

    /// Another process writes `name` = `value` to `file` and synchronizes.
    private func write(_ name: String, _ value: Int, to file: URL) async throws {
        let result = try await HelperProcess.run(["write", file.path, name, "\(value)"])
        #expect(result.status == 0, "\(result.errorOutput)")
    }

    /// The remover helper (`remove-all`), after another process wrote `b`: it removes everything,
    /// having waited until it saw `b`, or at once (with polling, before it could look); alone, or
    /// in a transaction with a write after it.
    @Test(arguments: Watcher.allCases, [(waitsUntilSeen: true, inTransaction: false), (false, false), (false, true)])
    func removeAllRemovesKeysAnotherProcessWroteAndKeepsLaterOnes(
        _ watcher: Watcher,
        _ order: (waitsUntilSeen: Bool, inTransaction: Bool)
    ) async throws {
        try await withTemporaryDirectory(prefix: "DefaultsStoreTests") { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"a" : 1}"#.utf8))
            let remover = try RunningHelper(
                ["remove-all", file.path],
                environment: watcher.environment,
                takesInput: true
            )
            defer { remover.send(SIGKILL) }
            #expect(await remover.nextLine() == "ready")
            try await write("b", 2, to: file)
            if order.waitsUntilSeen {
                remover.send(line: "wait b")
                #expect(await remover.nextLine() == "seen b")
            }
            remover.send(line: order.inTransaction ? "remove-all in-transaction" : "remove-all")
            let before = await remover.nextLine()
            #expect(
                before == "memory had a,b" || (!order.waitsUntilSeen && before == "memory had a"),
                "\(before ?? "nothing")"
            )
            #expect(await remover.nextLine() == "removed")
            let kept: NSDictionary = order.inTransaction ? ["kept": 4] : [:]
            #expect(try storeFileObject(file) as NSDictionary == kept, "b, written by another process, must go too")

            // Written after the removal: stays, in the file and in the remover's memory.
            try await write("c", 3, to: file)
            remover.send(line: "wait c")
            #expect(await remover.nextLine() == "seen c")
            remover.send(line: "keys")
            #expect(await remover.nextLine() == (order.inTransaction ? "memory c,kept" : "memory c"))
        }
    }

    @Test func removeAllKeepsTheUsersValuesOfLockedKeys() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let system = directory.appendingPathComponent("system.json")
            try storeWriteFile(file, Array(#"{"a" : 1, "locked" : 5}"#.utf8))
            try storeWriteFile(system, Array(#"{"" : {"locked" : ["locked"]}, "locked" : 9}"#.utf8))
            let suite = Defaults.Suite(fileURL: file, systemFiles: [system]) { _ in }
            suite.removeAll()
            // The removal of the locked key was refused: the next synchronize() says so.
            let refusal = #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
            guard case .lockedKey(let key, _)? = refusal else {
                Issue.record("\(String(describing: refusal))")
                return
            }
            #expect(key == "locked")
            #expect(try storeFileObject(file) as NSDictionary == ["locked": 5] as NSDictionary)
        }
    }
}
