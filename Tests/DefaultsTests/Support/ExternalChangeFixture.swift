import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A suite on `directory/app/settings.json`, recording its events.
struct ExternalChangeFixture {
    let file: URL
    let suite: Defaults.Suite
    let recorder: StoreChangeRecorder
    let errors = StoreErrorCollector()

    init(in directory: URL, folder: String = "app", seed: String? = nil) throws {
        file = storeSettingsURL(in: directory.appendingPathComponent(folder, isDirectory: true))
        if let seed {
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try storeWriteFile(file, Array(seed.utf8))
        }
        suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
        recorder = StoreChangeRecorder(suite)
    }

    func key(_ name: String, default value: Int = 0) -> Defaults.Key<Int> {
        Defaults.Key<Int>(name, default: value, suite: suite)
    }

    /// Another process writes `values` to `name`, one after the other.
    func writeFromAnotherProcess(_ name: String, _ values: Int...) async throws {
        let result = try await HelperProcess.run(["write", file.path, name] + values.map(String.init))
        #expect(result.status == 0, "\(result.errorOutput)")
    }

    /// Saves `text` the way most editors do: a new file, renamed over the old one.
    func saveLikeAnEditor(_ text: String) throws {
        let temporary = file.deletingLastPathComponent().appendingPathComponent(".settings.json.swp")
        try storeWriteFile(temporary, Array(text.utf8))
        guard rename(temporary.path, file.path) == 0 else {
            throw StoreSystemError(operation: "rename", code: errno)
        }
    }

    /// Rewrites the file in place, the way `nano` or `echo >` do: same inode, new bytes.
    ///
    /// NB: with broken-file retries held, so a pause between the two steps on a busy machine
    /// is never taken for a finished, broken save.
    func rewriteInPlace(_ text: String) throws {
        try suite.holdingBrokenFileRetries {
            let handle = try FileHandle(forWritingTo: file)
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: Data(text.utf8))
            try handle.close()
        }
    }

    func waitForEvents(_ count: Int) async {
        #expect(await recorder.waitForEvents(count), "expected \(count) events, got \(recorder.changedKeySets)")
    }
}
