import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A settings file that is a symlink to a file that holds no settings (`ln -s /etc/passwd
/// settings.json`): the file it leads to is never moved, written, nor locked beside.
@Suite struct ForeignFileLinkTests {
    @Test func aSettingsFileLinkedToAFileThatIsNotJSONLeavesThatFileAndItsFolderAsTheyAre() async throws {
        try await withTemporaryDirectory { directory in
            let elsewhere = directory.appendingPathComponent("etc", isDirectory: true)
            try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
            let foreign = elsewhere.appendingPathComponent("passwd")
            let text = "root:x:0:0:root:/root:/bin/bash\n"
            try storeWriteFile(foreign, Array(text.utf8))
            let folder = directory.appendingPathComponent("app", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let file = folder.appendingPathComponent("settings.json")
            #expect(symlink(foreign.path, file.path) == 0)
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let key = Defaults.Key<String>("greeting", default: "hello", suite: suite)
            #expect(suite[key] == "hello")
            suite[key] = "written"
            #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
            #expect(await errors.wait(forCount: 1))
            #expect(errors.errors.first?.description.contains("symlink") == true, "\(errors.errors)")
            #expect(try storeDirectoryListing(elsewhere) == ["passwd"])
            #expect(String(decoding: try storeFileBytes(foreign), as: UTF8.self) == text)
            // The link is still the settings file, and still leads there.
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: file.path) == foreign.path)
            // Another process's writes are refused the same way.
            let other = try await HelperProcess.run(["write", file.path, "n", "1"])
            #expect(other.status != 0)
            // Said once, though the open, the write and the commit at exit each met it (it was
            // printed three times).
            let reports = other.errorOutput.split(separator: "\n").filter { $0.hasPrefix("Defaults: cannot read") }
            #expect(reports.count == 1, "\(other.errorOutput)")
            #expect(try storeDirectoryListing(elsewhere) == ["passwd"])
            #expect(String(decoding: try storeFileBytes(foreign), as: UTF8.self) == text)
        }
    }

    @Test func aLinkedFileThatStopsBeingJSONWhileOpenIsLeftAsItIsAndTheValuesStay() async throws {
        try await withTemporaryDirectory { directory in
            let elsewhere = directory.appendingPathComponent("dotfiles", isDirectory: true)
            try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
            let target = elsewhere.appendingPathComponent("app.json")
            try storeWriteFile(target, Array(#"{"greeting": "hi"}"#.utf8))
            let folder = directory.appendingPathComponent("app", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let file = folder.appendingPathComponent("settings.json")
            #expect(symlink(target.path, file.path) == 0)
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let key = Defaults.Key<String>("greeting", default: "hello", suite: suite)
            #expect(suite[key] == "hi")
            let listing = try storeDirectoryListing(elsewhere)
            // Replaced by something that is no settings file, as a person might by mistake.
            let text = "not json at all\n"
            let temporary = elsewhere.appendingPathComponent("app.json.new")
            try storeWriteFile(temporary, Array(text.utf8))
            #expect(rename(temporary.path, target.path) == 0)
            #expect(await errors.wait(forCount: 1))
            #expect(errors.errors.first?.description.contains("symlink") == true, "\(errors.errors)")
            #expect(suite[key] == "hi")
            suite[key] = "written"
            #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
            #expect(try storeDirectoryListing(elsewhere) == listing)
            #expect(String(decoding: try storeFileBytes(target), as: UTF8.self) == text)
        }
    }
}
