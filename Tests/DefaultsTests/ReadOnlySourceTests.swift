import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A file the process may read but not write: read, writes refused clearly, nothing left beside it.
///
/// Such a file is a mounted ConfigMap, a store path, another user's file. The tests run as root,
/// whom permissions do not stop, so the suite is opened by a helper running as `nobody`.
@Suite struct ReadOnlySourceTests {
    /// A directory only root may write, holding `settings.json` with `text`, readable by everyone.
    private func rootOwnedFile(in directory: URL, _ text: String) throws -> URL {
        let folder = directory.appendingPathComponent("etc-app", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("settings.json")
        try storeWriteFile(file, Array(text.utf8))
        chmod(directory.path, 0o755)
        chmod(folder.path, 0o755)
        chmod(file.path, 0o644)
        return file
    }

    @Test func aFileThisProcessMayNotWriteIsReadAndEveryWriteIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            let file = try rootOwnedFile(in: directory, #"{"port": 8080}"#)
            let before = try storeFileBytes(file)
            let result = try await HelperProcess.runAsNobody(["read-only", file.path], copyingInto: directory)
            #expect(result.status == 0, "\(result.errorOutput)")
            let refused =
                "Defaults: not writing \(file.path): the file may not be written by this user (refused: \"port\"); nothing was changed"
            let refusedWhole =
                "error Defaults: not writing \(file.path): the file may not be written by this user; nothing was changed"
            #expect(
                result.lines == [
                    "port 8080", "source the user's file \(file.path)",
                    "error " + refused,  // The write.
                    "error " + refused,  // removeAll().
                    refusedWhole,  // The exclusive transaction, which runs nothing.
                    "exclusive threw",
                    "synchronize threw " + refused,  // The first refusal since the last one.
                    "port 8080",
                ]
            )
            #expect(try storeFileBytes(file) == before)
            #expect(try storeDirectoryListing(file.deletingLastPathComponent()) == ["settings.json"])
        }
    }

    @Test func aBrokenReadOnlyFileReadsAsDefaultsIsReportedAndKeepsItsBytes() async throws {
        try await withTemporaryDirectory { directory in
            let file = try rootOwnedFile(in: directory, #"{"port": 80"#)
            let result = try await HelperProcess.runAsNobody(["read-only", file.path], copyingInto: directory)
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(
                result.lines.first?.hasPrefix("error Defaults: \(file.path) is corrupt (") == true,
                "\(result.lines)"
            )
            #expect(result.lines.first?.hasSuffix("; leaving it as it is and reading it as empty") == true)
            #expect(Array(result.lines.dropFirst().prefix(2)) == ["port -1", "source the program's default"])
            #expect(result.lines.last == "port -1")
            #expect(try storeFileText(file) == #"{"port": 80"#)
            #expect(try storeDirectoryListing(file.deletingLastPathComponent()) == ["settings.json"])
        }
    }

    @Test func aWriteStillWaitingWhenTheLinkMovesIntoAReadOnlyPlaceIsRefusedNotRetriedForEver() async throws {
        try await withTemporaryDirectory { directory in
            let readOnly = try rootOwnedFile(in: directory, #"{"port": 7}"#)
            let writable = directory.appendingPathComponent("home-app", isDirectory: true)
            try FileManager.default.createDirectory(at: writable, withIntermediateDirectories: true)
            chmod(writable.path, 0o777)
            let link = writable.appendingPathComponent("settings.json")
            try storeWriteFile(writable.appendingPathComponent("own.json"), Array(#"{"port": 1}"#.utf8))
            chmod(writable.appendingPathComponent("own.json").path, 0o666)
            #expect(symlink("own.json", link.path) == 0)
            let before = try storeFileBytes(readOnly)
            let result = try await HelperProcess.runAsNobody(
                ["pending-then-read-only", link.path, readOnly.path],
                copyingInto: directory
            )
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(
                result.lines == [
                    "error Defaults: not writing \(link.path): the file may not be written by this user; nothing was changed",
                    "port 7",
                ]
            )
            #expect(try storeFileBytes(readOnly) == before)
            #expect(try storeDirectoryListing(readOnly.deletingLastPathComponent()) == ["settings.json"])
        }
    }

    @Test func aLinkRepointedIntoAReadOnlyDirectoryIsFollowedAndThenRefusesWrites() async throws {
        try await withTemporaryDirectory { directory in
            let readOnly = try rootOwnedFile(in: directory, #"{"port": 7}"#)
            // Somewhere `nobody` may write: the link leads there first.
            let writable = directory.appendingPathComponent("home-app", isDirectory: true)
            try FileManager.default.createDirectory(at: writable, withIntermediateDirectories: true)
            chmod(writable.path, 0o777)
            let link = directory.appendingPathComponent("settings.json")
            #expect(symlink(writable.appendingPathComponent("settings.json").path, link.path) == 0)
            let before = try storeFileBytes(readOnly)

            let helper = try HelperProcess.startAsNobody(["follow-read-only", link.path], copyingInto: directory)
            #expect(await helper.nextLine() == "ready")
            #expect(try storeFileObject(writable.appendingPathComponent("settings.json"))["port"] as? Int == 1)
            try repointSymlink(link, to: readOnly.path)
            let result = await helper.waitForExit()
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(
                result.lines == [
                    "changed port=7",
                    "error Defaults: not writing \(link.path): the file may not be written by this user (refused: \"port\"); nothing was changed",
                    "port 7",
                ]
            )
            #expect(try storeFileBytes(readOnly) == before)
            #expect(try storeDirectoryListing(readOnly.deletingLastPathComponent()) == ["settings.json"])
        }
    }
}
