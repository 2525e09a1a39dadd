import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// Behaviour that needs a second process: the flush at exit, and a disk that fills up.
@Suite struct ProcessTests {
    @Test func helperExecutableSitsBesideTheTestBinary() {
        #expect(FileManager.default.isExecutableFile(atPath: HelperProcess.executableURL.path))
    }

    @Test func valuesWrittenWithoutSynchronizeAreFlushedAtExit() async throws {
        try await withTemporaryDirectory(prefix: "DefaultsStoreTests") { directory in
            let file = storeSettingsURL(in: directory.appendingPathComponent("app", isDirectory: true))
            let result = try await HelperProcess.run(["write-and-exit", file.path, "greeting", "saved at exit"])
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(result.lines == ["wrote"])
            let object = try storeFileObject(file)
            #expect(object["greeting"] as? String == "saved at exit")
            #expect(try storePermissions(file) == 0o600)
            #expect(
                try storeDirectoryListing(file.deletingLastPathComponent()) == ["settings.json", "settings.json.lock"]
            )
        }
    }

    @Test func exitFlushKeepsWhatTheFileAlreadyHeld() async throws {
        try await withTemporaryDirectory(prefix: "DefaultsStoreTests") { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"untouched" : [1, 2, 3]}"#.utf8))
            let result = try await HelperProcess.run(["write-and-exit", file.path, "added", "value"])
            #expect(result.status == 0, "\(result.errorOutput)")
            let object = try storeFileObject(file)
            #expect(object["added"] as? String == "value")
            #expect(object["untouched"] as? [Int] == [1, 2, 3])
        }
    }

    @Test func aFullDiskIsReportedKeepsTheOldFileAndRecovers() async throws {
        try await withTemporaryDirectory(prefix: "DefaultsStoreTests") { directory in
            let file = storeSettingsURL(in: directory)
            let before = Array(#"{"setting" : "old"}"#.utf8)
            try storeWriteFile(file, before)
            let value = "a value much longer than the whole file was, so the write cannot fit under the limit"

            let result = try await HelperProcess.run(["full-disk", file.path, "setting", value])

            #expect(result.status == 0, "\(result.errorOutput)")
            let lines = result.lines
            let failure = try #require(lines.first, "\(result.output)")
            #expect(failure.hasPrefix("synchronize failed: "), "\(result.output)")
            #expect(failure.contains("cannot write"), "\(failure)")
            #expect(lines.dropFirst().first == "reported: true")
            #expect(lines.dropFirst(2).first == "file intact: true")
            #expect(lines.dropFirst(3).first == "value in memory: \(value)")
            #expect(lines.dropFirst(4).first == "after lifting the limit: true")
            #expect(lines.count == 5, "\(result.output)")
            #expect(try storeFileObject(file)["setting"] as? String == value)
            let leftovers = try storeDirectoryListing(directory)
                .filter { $0 != "settings.json" && $0 != "settings.json.lock" }
            #expect(leftovers.isEmpty, "no temporary file may be left: \(leftovers)")
        }
    }
}
