import Foundation

/// Runs `body` with a fresh, empty directory under the system temporary directory, and removes it
/// and everything in it afterwards.
func withTemporaryDirectory<Result>(_ body: (URL) async throws -> Result) async throws -> Result {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("DefaultsConfigurationTests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    // NB: resolved, as the suite resolves the paths it reports.
    return try await body(directory.resolvingSymlinksInPath())
}

/// Writes `text` to `file` as an editor saves: a new file renamed over the old one.
func save(_ text: String, to file: URL) throws {
    try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
    try Data(text.utf8).write(to: file, options: .atomic)
}
