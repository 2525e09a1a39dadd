import Defaults
import Foundation
import Testing

/// The suite's file: its layout, unknown keys, permissions, atomic replacement and coalescing.
@Suite struct FileWriteTests {
    @Test func fileIsPrettyJSONWithSortedKeys() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            Defaults[Defaults.Key<String>("zebra", default: "", suite: suite)] = "last"
            Defaults[Defaults.Key<Int>("apple", default: 0, suite: suite)] = 1
            Defaults[Defaults.Key<[String: Int]>("mango", default: [:], suite: suite)] = ["y": 2, "x": 1]
            Defaults[Defaults.Key<[Bool]>("banana", default: [], suite: suite)] = [true, false]
            try suite.synchronize()

            let expected = """
                {
                  "apple" : 1,
                  "banana" : [
                    true,
                    false
                  ],
                  "mango" : {
                    "x" : 1,
                    "y" : 2
                  },
                  "zebra" : "last"
                }

                """
            #expect(try storeFileText(file) == expected)
        }
    }

    @Test func aSuiteOpenedOnTheFileReadsWhatWasWritten() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let writer = Defaults.Suite(fileURL: file)
            Defaults[Defaults.Key<Int>("count", default: 0, suite: writer)] = 12
            Defaults[Defaults.Key<String?>("name", suite: writer)] = "n\u{E9}"
            try writer.synchronize()

            let reader = try storeSuiteOnACopy(of: file)
            #expect(Defaults[Defaults.Key<Int>("count", default: 0, suite: reader)] == 12)
            #expect(Defaults[Defaults.Key<String?>("name", suite: reader)] == "n\u{E9}")
        }
    }

    @Test func keysWrittenAndRemovedLeaveNothingBehindOnceFlushed() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let keys = (0..<1_000).map { Defaults.Key<Int>("session-\($0)", default: 0, suite: suite) }
            for key in keys { Defaults[key] = 1 }
            try suite.synchronize()
            // Each key keeps its decoded value beside the stored one.
            #expect(suite.keyEntryCount == keys.count)
            // Each key is marked for the next flush, which writes the removal and clears the mark.
            for key in keys { key.reset() }
            try suite.synchronize()
            #expect(suite.keyEntryCount == 0)
            #expect(try storeFileText(file).filter { !$0.isWhitespace } == "{}")
        }
    }

    @Test func unknownKeysInTheFileAreKeptOnEveryWrite() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let original = #"""
                {"foreign": {"nested": [1, 2.50, "x", null, {"deep": true}]}, "big": 1.0e3, "known": 1,
                 "removable": "r", "resettable": "s"}
                """#
            try storeWriteFile(file, Array(original.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let known = Defaults.Key<Int>("known", default: 0, suite: suite)
            let removable = Defaults.Key<String?>("removable", suite: suite)

            Defaults[known] = 2
            try suite.synchronize()
            try expectForeignMembersKept(in: file)

            Defaults[removable] = nil
            try suite.synchronize()
            try expectForeignMembersKept(in: file)

            Defaults.reset("resettable", suite: suite)
            try suite.synchronize()
            try expectForeignMembersKept(in: file)

            let object = try storeFileObject(file)
            #expect(object["known"] as? Int == 2)
            #expect(object["removable"] == nil)
            #expect(object["resettable"] == nil)
            #expect(object.keys.sorted() == ["big", "foreign", "known"])
        }
    }

    private func expectForeignMembersKept(in file: URL) throws {
        let text = try storeFileText(file)
        // NB: kept as they are, so the number text a person wrote survives too.
        #expect(text.contains("2.50"), "\(text)")
        #expect(text.contains("1.0e3"), "\(text)")
        let object = try storeFileObject(file)
        let foreign = try #require(object["foreign"] as? [String: Any])
        let nested = try #require(foreign["nested"] as? [Any])
        #expect(nested.count == 5)
        #expect(nested[0] as? Int == 1)
        #expect(nested[2] as? String == "x")
        #expect(nested[3] is NSNull)
        #expect((nested[4] as? [String: Any])?["deep"] as? Bool == true)
    }

    @Test func fileHasMode0600() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            Defaults[Defaults.Key<String>("secret", default: "", suite: suite)] = "token"
            try suite.synchronize()
            #expect(try storePermissions(file) == 0o600)

            Defaults[Defaults.Key<String>("secret", default: "", suite: suite)] = "another"
            try suite.synchronize()
            #expect(try storePermissions(file) == 0o600)
        }
    }

    @Test func anExistingWiderFileBecomes0600WhenReplaced() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"a" : 1}"#.utf8))
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
            let suite = Defaults.Suite(fileURL: file)
            Defaults[Defaults.Key<Int>("a", default: 0, suite: suite)] = 2
            try suite.synchronize()
            #expect(try storePermissions(file) == 0o600)
        }
    }

    @Test func directoriesTheSuiteCreatesHaveMode0700IncludingMissingParents() throws {
        try withStoreTemporaryDirectory { directory in
            let top = directory.appendingPathComponent("one", isDirectory: true)
            let middle = top.appendingPathComponent("two", isDirectory: true)
            let leaf = middle.appendingPathComponent("three", isDirectory: true)
            let file = storeSettingsURL(in: leaf)
            let suite = Defaults.Suite(fileURL: file)
            #expect(!FileManager.default.fileExists(atPath: top.path), "the directory is created on the first write")

            Defaults[Defaults.Key<Int>("n", default: 0, suite: suite)] = 1
            try suite.synchronize()

            #expect(try storePermissions(top) == 0o700)
            #expect(try storePermissions(middle) == 0o700)
            #expect(try storePermissions(leaf) == 0o700)
            #expect(try storePermissions(file) == 0o600)
            #expect(try storeFileObject(file)["n"] as? Int == 1)
        }
    }

    @Test func anExistingDirectoryKeepsItsMode() throws {
        try withStoreTemporaryDirectory { directory in
            let existing = directory.appendingPathComponent("existing", isDirectory: true)
            try FileManager.default.createDirectory(
                at: existing,
                withIntermediateDirectories: false,
                attributes: [.posixPermissions: 0o755]
            )
            let suite = Defaults.Suite(fileURL: storeSettingsURL(in: existing))
            Defaults[Defaults.Key<Int>("n", default: 0, suite: suite)] = 1
            try suite.synchronize()
            #expect(try storePermissions(existing) == 0o755)
        }
    }

    @Test func replacementIsAtomicAndLeavesNoTemporaryFiles() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            let key = Defaults.Key<String>("value", default: "", suite: suite)
            Defaults[key] = "first"
            try suite.synchronize()
            let firstInode = try storeInode(file)
            let firstBytes = try storeFileBytes(file)
            let oldReader = try FileHandle(forReadingFrom: file)
            defer { try? oldReader.close() }

            for round in 0..<5 {
                Defaults[key] = "round \(round) " + String(repeating: "x", count: round * 100)
                try suite.synchronize()
            }

            #expect(try storeDirectoryListing(directory) == ["settings.json", "settings.json.lock"])
            #expect(try storeInode(file) != firstInode, "the file must be replaced by rename, not rewritten in place")
            let oldContent = [UInt8](try oldReader.readToEnd() ?? Data())
            #expect(oldContent == firstBytes, "a reader of the old file must still see the complete old document")
            #expect(try storeFileObject(file)["value"] as? String == Defaults[key])
        }
    }

    @Test func synchronizeWithNothingPendingWritesNothing() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            try suite.synchronize()
            #expect(suite.fileReplacementCount == 0)
            #expect(!FileManager.default.fileExists(atPath: file.path), "an untouched suite creates no file")

            Defaults[Defaults.Key<Int>("n", default: 0, suite: suite)] = 1
            try suite.synchronize()
            let count = suite.fileReplacementCount
            try suite.synchronize()
            try suite.synchronize()
            #expect(suite.fileReplacementCount == count)
        }
    }

    @Test func valuesWrittenBeforeTheSuiteIsReleasedAreOnDisk() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            do {
                let suite = Defaults.Suite(fileURL: file)
                Defaults[Defaults.Key<String>("farewell", default: "", suite: suite)] = "written before deinit"
                Defaults[Defaults.Key<Int>("count", default: 0, suite: suite)] = 3
            }
            let object = try storeFileObject(file)
            #expect(object["farewell"] as? String == "written before deinit")
            #expect(object["count"] as? Int == 3)
        }
    }
}
