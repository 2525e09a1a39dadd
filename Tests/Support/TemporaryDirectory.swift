import Foundation

/// Runs `body` with a fresh, empty directory under the system temporary directory, and removes the
/// directory and everything in it afterwards.
package func withTemporaryDirectory<Result>(
    prefix: String = "DefaultsTests",
    _ body: (URL) throws -> Result
) throws -> Result {
    let directory = try makeTemporaryDirectory(prefix: prefix)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory)
}

/// ``withTemporaryDirectory(prefix:_:)`` for async tests.
package func withTemporaryDirectory<Result>(
    prefix: String = "DefaultsTests",
    _ body: (URL) async throws -> Result
) async throws -> Result {
    let directory = try makeTemporaryDirectory(prefix: prefix)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

private func makeTemporaryDirectory(prefix: String) throws -> URL {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    // NB: resolved, so paths the store reports (it resolves symlinks) compare equal to these.
    return directory.resolvingSymlinksInPath()
}
