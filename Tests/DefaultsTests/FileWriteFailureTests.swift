import Defaults
import Foundation
import Testing

/// Writes that cannot reach the disk: reported, kept in memory, retried.
@Suite struct FileWriteFailureTests {
    /// Found by a black-box probe: a write that made the file larger than a settings file may be
    /// (32 MiB) went through, and then no process could read or write the suite again.
    @Test func aWriteThatWouldMakeTheFileTooLargeToReadFailsAndLeavesTheFile() throws {
        try withStoreTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("settings.json")
            try Data(#"{"kept" : 1}"#.utf8).write(to: file)
            let before = try Data(contentsOf: file)
            let suite = Defaults.Suite(fileURL: file) { _ in }
            let big = Defaults.Key<String>("big", default: "", suite: suite)
            // NB: held, so the timer's commit does not meet the failure first.
            suite.holdingTimedCommits {
                suite[big] = String(repeating: "x", count: 32 << 20)
                let error = #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
                #expect(
                    error?.description.contains("larger than 32 MiB, the most a settings file may be") == true,
                    "\(String(describing: error))"
                )
            }
            #expect(try Data(contentsOf: file) == before)
            // Nothing lost: memory keeps the value, and the file is left as others can read it.
            #expect(suite[big].count == 32 << 20)
            // A smaller value is written again: it recovers by itself.
            suite[big] = "small"
            try suite.synchronize()
            let members = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
            #expect(members?["big"] as? String == "small")
            #expect(members?["kept"] as? Int == 1)
        }
    }

    @Test func anUncreatableDirectoryFailsTheWriteAndKeepsTheValueInMemory() throws {
        try withStoreTemporaryDirectory { directory in
            // NB: a regular file where a parent directory should be; permissions would not stop root.
            let obstacle = directory.appendingPathComponent("blocked", isDirectory: false)
            try storeWriteFile(obstacle, Array("not a directory".utf8))
            let file = storeSettingsURL(in: obstacle.appendingPathComponent("suite", isDirectory: true))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let key = Defaults.Key<String>("value", default: "default", suite: suite)
            #expect(errors.errors.isEmpty, "there is no file yet, so there is nothing to report: \(errors.errors)")

            // NB: held, so the timer's commit does not fail first: a failure is reported once, and
            // the handler would hear of it later, on another thread.
            try suite.holdingTimedCommits {
                Defaults[key] = "kept in memory"
                try expectWriteFailure(of: suite, at: file, reportedTo: errors)
            }
            #expect(Defaults[key] == "kept in memory")
            #expect(try storeFileText(obstacle) == "not a directory", "the obstacle must be left alone")

            try FileManager.default.removeItem(at: obstacle)
            try suite.synchronize()

            #expect(try storeFileObject(file)["value"] as? String == "kept in memory")
            #expect(Defaults[key] == "kept in memory")
        }
    }

    @Test func aDirectoryThatBecomesUncreatableAfterOpeningFailsTheWriteUntilItIsFixed() throws {
        try withStoreTemporaryDirectory { directory in
            let parent = directory.appendingPathComponent("parent", isDirectory: true)
            let file = storeSettingsURL(in: parent.appendingPathComponent("suite", isDirectory: true))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let key = Defaults.Key<Int>("count", default: 0, suite: suite)
            try storeWriteFile(parent, Array("in the way".utf8))

            // NB: held, as above.
            try suite.holdingTimedCommits {
                Defaults[key] = 41
                Defaults[key] += 1
                try expectWriteFailure(of: suite, at: file, reportedTo: errors)
            }
            #expect(Defaults[key] == 42)

            try FileManager.default.removeItem(at: parent)
            try suite.synchronize()
            #expect(try storeFileObject(file)["count"] as? Int == 42)
            #expect(try storePermissions(parent) == 0o700)
        }
    }

    /// Checks that `synchronize()` throws `.writeFailed` for `file` and that the handler heard of it.
    private func expectWriteFailure(
        of suite: Defaults.Suite,
        at file: URL,
        reportedTo errors: StoreErrorCollector
    ) throws {
        let thrown = try #require(throws: Defaults.StorageError.self) { try suite.synchronize() }
        var failedURL: URL?
        if case .writeFailed(let url, let reason) = thrown {
            failedURL = url
            #expect(!reason.isEmpty)
        }
        #expect(failedURL?.path == file.path, "expected .writeFailed for \(file.path), got \(thrown)")
        #expect(thrown.description.contains(file.path))
        #expect(!errors.writeFailedReports.isEmpty, "the error handler must hear of the failure: \(errors.errors)")
        #expect(errors.writeFailedReports.allSatisfy { $0.url.path == file.path })
        #expect(suite.fileReplacementCount == 0)
    }

    @Test func aFailedRenameLeavesNoTemporaryFileAndIsRetried() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
            let key = Defaults.Key<Int>("count", default: 0, suite: suite)
            // NB: the timer's commit (or its retry of the failed one) would make a temporary file of
            // its own, which the listing below could catch while it is written.
            try suite.holdingTimedCommits {
                Defaults[key] = 1
                try suite.synchronize()
                let good = try storeFileBytes(file)

                // NB: a non-empty directory at the settings path: a file cannot be renamed over it, so the
                // write fails after its temporary file was made.
                try FileManager.default.removeItem(at: file)
                try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
                let inside = file.appendingPathComponent("occupant", isDirectory: false)
                try storeWriteFile(inside, good)

                Defaults[key] = 2
                #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
                #expect(!errors.writeFailedReports.isEmpty)
                #expect(Defaults[key] == 2)
                #expect(try storeFileBytes(inside) == good, "what was at the path must be untouched")
                let leftovers = try storeDirectoryListing(directory)
                    .filter { $0 != "settings.json" && $0 != "settings.json.lock" }
                #expect(leftovers.isEmpty, "a failed write must remove its temporary file: \(leftovers)")
            }
            try FileManager.default.removeItem(at: file)
            try suite.synchronize()
            #expect(try storeFileObject(file)["count"] as? Int == 2)
        }
    }
}
