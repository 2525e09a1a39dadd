import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// A corrupt file is moved aside and reported; the suite starts from defaults and never loses it.
@Suite struct FileCorruptionTests {
    /// Contents that are not a JSON object.
    enum Corruption: String, CaseIterable, Sendable {
        case garbageBytes
        case truncatedDocument
        case emptyFile
        case topLevelArray
        case topLevelString
        case trailingGarbage

        var bytes: [UInt8] {
            switch self {
            case .garbageBytes: return [0xFF, 0xFE, 0x00, 0x41, 0x7B, 0x80, 0x0A, 0xC3, 0x28]
            case .truncatedDocument: return Array(#"{"count" : 4, "list" : [1, 2"#.utf8)
            case .emptyFile: return []
            case .topLevelArray: return Array(#"[{"count" : 4}]"#.utf8)
            case .topLevelString: return Array(#""count""#.utf8)
            case .trailingGarbage: return Array(#"{"count" : 4} }"#.utf8)
            }
        }
    }

    /// A file that breaks while another process holds the lock and is stopped (SIGSTOP) is not
    /// moved aside until the lock is free, and nothing waits for it meanwhile: a good file put
    /// back is read at once (found by a black-box probe: `defaults watch` went silent until the
    /// holder went on).
    @Test func aFileThatBreaksWhileAStoppedProcessHoldsTheLockStopsNoLaterChange() async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"count": 1}"#.utf8))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let count = Defaults.Key<Int>("count", default: -1, suite: suite)
            #expect(suite[count] == 1)
            let holder = try RunningHelper(["hold-lock", file.path])
            defer {
                holder.send(SIGCONT)
                holder.send(SIGKILL)
            }
            #expect(await holder.nextLine() == "locked")
            holder.send(SIGSTOP)
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            // Broken for a moment, then good again: both replace the file by rename.
            let temporary = directory.appendingPathComponent("next.json")
            try storeWriteFile(temporary, Array(#"{"count":"#.utf8))
            #expect(rename(temporary.path, file.path) == 0)
            // Once it stayed broken through every retry, it is said, once: the lock is not free.
            #expect(await errors.wait(forCount: 1))
            #expect(
                errors.errors.first?.description.contains("another process holds its lock") == true,
                "\(errors.errors)"
            )
            try storeWriteFile(temporary, Array(#"{"count": 4}"#.utf8))
            #expect(rename(temporary.path, file.path) == 0)
            #expect(await recorder.wait { suite[count] == 4 })
            #expect(errors.errors.count == 1, "\(errors.errors)")
            // Nothing was moved aside while the lock was held.
            let names = try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path)
            #expect(!names.contains { $0.contains(".corrupt") }, "\(names)")
        }
    }

    @Test(arguments: Corruption.allCases)
    func corruptFileIsMovedAsideAndTheSuiteStartsFromDefaults(_ corruption: Corruption) throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let original = corruption.bytes
            try storeWriteFile(file, original)
            let errors = StoreErrorCollector()

            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let count = Defaults.Key<Int>("count", default: -1, suite: suite)

            #expect(Defaults[count] == -1)
            #expect(errors.errors.count == 1, "\(errors.errors)")
            let report = try #require(errors.corruptFileReports.first)
            #expect(report.url.path == file.path)
            #expect(!report.reason.isEmpty)
            let movedTo = report.movedTo
            #expect(movedTo.deletingLastPathComponent().path == directory.path)
            let prefix = "settings.json.corrupt-"
            #expect(movedTo.lastPathComponent.hasPrefix(prefix), "\(movedTo.lastPathComponent)")
            let stamp = movedTo.lastPathComponent.dropFirst(prefix.count)
            #expect(stamp.count >= 8 && stamp.allSatisfy { $0.isASCII && ($0.isNumber || $0 == "-") }, "\(stamp)")
            #expect(try storeFileBytes(movedTo) == original, "the moved file must hold exactly the original bytes")
            #expect(!FileManager.default.fileExists(atPath: file.path), "the corrupt file is moved, not copied")

            Defaults[count] = 7
            try suite.synchronize()
            #expect(try storeFileObject(file)["count"] as? Int == 7)
            #expect(try storeFileBytes(movedTo) == original, "the moved-aside copy must stay untouched")
            #expect(
                try storeDirectoryListing(directory)
                    == ["settings.json", "settings.json.lock", movedTo.lastPathComponent].sorted()
            )
            #expect(errors.errors.count == 1, "\(errors.errors)")
        }
    }

    @Test func theDescriptionOfACorruptFileReportNamesBothFiles() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array("not json".utf8))
            let errors = StoreErrorCollector()
            _ = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let error = try #require(errors.errors.first)
            let report = try #require(errors.corruptFileReports.first)
            #expect(error.description.contains(file.path))
            #expect(error.description.contains(report.movedTo.path))
        }
    }

    @Test func corruptLoadsInQuickSuccessionDoNotOverwriteEachOthersCopies() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let errors = StoreErrorCollector()
            var originals: [[UInt8]] = []
            // NB: back to back, these loads almost always fall in the same second, so they share a
            // timestamp and must still get distinct names.
            for round in 0..<4 {
                let bytes = Array("corrupt document number \(round) {".utf8)
                originals.append(bytes)
                try storeWriteFile(file, bytes)
                _ = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
                // NB: the store can outlive its suite for a moment (its watcher's thread holds it
                // while it looks at an event); the next suite would share it and load nothing.
                let open = Defaults.Suite.waitUntilNoFileIsOpen(under: directory, until: Date() + 120)
                #expect(open.isEmpty)
            }

            let destinations = errors.corruptFileReports.map(\.movedTo)
            #expect(destinations.count == 4)
            #expect(Set(destinations.map(\.path)).count == 4, "\(destinations.map(\.lastPathComponent))")
            for (destination, original) in zip(destinations, originals) {
                #expect(try storeFileBytes(destination) == original)
            }
            #expect(try storeDirectoryListing(directory).filter { $0.contains(".corrupt-") }.count == 4)
        }
    }

    @Test func aValidFileWithAValueOfTheWrongTypeIsNotCorrupt() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"count" : "four", "other" : 1}"#.utf8))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let count = Defaults.Key<Int>("count", default: -1, suite: suite)
            #expect(Defaults[count] == -1)
            #expect(errors.errors.isEmpty)

            Defaults[Defaults.Key<Int>("other", default: 0, suite: suite)] = 2
            try suite.synchronize()
            #expect(try storeFileObject(file)["count"] as? String == "four", "a mistyped value stays on disk")
        }
    }
}
