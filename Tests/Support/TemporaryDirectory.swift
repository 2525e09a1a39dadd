import Defaults
import Foundation

/// Runs `body` with a fresh, empty directory under the system temporary directory, and removes the
/// directory and everything in it afterwards.
///
/// Before removing it, waits until no suite has a file under it open (see ``removeTemporaryDirectory(_:)``).
package func withTemporaryDirectory<Result>(
    prefix: String = "DefaultsTests",
    _ body: (URL) throws -> Result
) throws -> Result {
    let directory = try makeTemporaryDirectory(prefix: prefix)
    defer { removeTemporaryDirectory(directory) }
    return try body(directory)
}

/// ``withTemporaryDirectory(prefix:_:)`` for async tests.
package func withTemporaryDirectory<Result>(
    prefix: String = "DefaultsTests",
    _ body: (URL) async throws -> Result
) async throws -> Result {
    let directory = try makeTemporaryDirectory(prefix: prefix)
    do {
        let result = try await body(directory)
        await removeTemporaryDirectoryOffThePool(directory)
        return result
    } catch {
        await removeTemporaryDirectoryOffThePool(directory)
        throw error
    }
}

/// ``removeTemporaryDirectory(_:)`` on a thread of its own: its wait must not hold one of the few
/// threads that run tasks, or the task that would let the last suite go could be the one starved.
private func removeTemporaryDirectoryOffThePool(_ directory: URL) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread.detachNewThread {
            removeTemporaryDirectory(directory)
            continuation.resume()
        }
    }
}

private func makeTemporaryDirectory(prefix: String) throws -> URL {
    PoolWatchdog.startIfAsked()
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    // NB: resolved, so paths the store reports (it resolves symlinks) compare equal to these.
    return directory.resolvingSymlinksInPath()
}

/// Removes `directory` once no suite has a file under it open.
///
/// A suite still open when a test ends (held by a task or an observer that finishes a moment
/// later) writes what is pending when it goes, and a flush takes the file's lock, which makes the
/// folder again: removed before that, the directory came back with a lone lock file in it. A
/// suite still open after a few seconds is named on the standard error, and the directory is
/// removed anyway.
private func removeTemporaryDirectory(_ directory: URL) {
    let open = Defaults.Suite.waitUntilNoFileIsOpen(under: directory, until: Date(timeIntervalSinceNow: 5))
    if !open.isEmpty {
        FileHandle.standardError.write(Data("temporary directory: still open after 5 s: \(open)\n".utf8))
    }
    try? FileManager.default.removeItem(at: directory)
}
