// The stored-JSON API a tool uses when it has no keys for a program's settings: where a suite's
// file is, its own values, raw writes, JSON text as bytes, and a key's reading of stored JSON.
import Defaults
import DefaultsTestSupport
import Foundation
import Testing

@Suite struct StoredValuesTests {
    @Test func rawWritesReachTheFileAsOneChange() async throws {
        try await withTemporaryDirectory { directory in
            let url = storeSettingsURL(in: directory)
            try storeWriteFile(url, Array(#"{"gone": 1, "kept": "a"}"#.utf8))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: url, errorHandler: errors.handler)
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            suite.setStoredValues(["port": .number("8080"), "deep": .array([.array([.bool(true)])]), "gone": nil])
            #expect(await recorder.waitForEvents(1))
            #expect(recorder.changedKeySets == [["port", "deep", "gone"]])
            try suite.synchronize()
            let file = try storeFileText(url)
            #expect(
                try Defaults.JSONValue(parsing: Array(file.utf8))
                    == .object([
                        "port": .number("8080"), "deep": .array([.array([.bool(true)])]), "kept": .string("a"),
                    ])
            )
            // Typed reads decode what was stored raw.
            #expect(suite[Defaults.Key<Int>("port", default: 0, suite: suite)] == 8080)
            #expect(errors.errors.isEmpty)
        }
    }

    @Test func aValueTooDeepOrAnEmptyNameIsRefusedAndNothingIsWritten() throws {
        try withStoreTemporaryDirectory { directory in
            let url = storeSettingsURL(in: directory)
            let original = Array(#"{"kept": 1}"#.utf8)
            try storeWriteFile(url, original)
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: url, errorHandler: errors.handler)
            var deep = Defaults.JSONValue.number("1")
            for _ in 0..<Defaults.JSONValue.maximumStoredDepth { deep = .array([deep]) }
            #expect(deep.isNested(deeperThan: Defaults.JSONValue.maximumStoredDepth))
            suite.setStoredValues(["fine": .bool(true), "deep": deep, "kept": nil])
            suite.setStoredValues(["": .bool(true), "fine": .bool(true)])
            try suite.synchronize()
            #expect(try storeFileBytes(url) == original)
            #expect(suite.storedValues() == ["kept": .number("1")])
            let refused = errors.errors.compactMap { error -> String? in
                guard case .serializationFailed(let key, _) = error else { return nil }
                return key
            }
            #expect(refused == ["deep", ""])
            #expect(errors.errors.count == 2)
            #expect(errors.errors.first?.description.contains("511 levels") == true)

            // One level less is stored, and read back from the file.
            guard case .array(let elements) = deep else { return }
            suite.setStoredValues(["deep": elements[0]])
            try suite.synchronize()
            let reopened = Defaults.Suite(fileURL: url)
            #expect(reopened.storedValue(named: "deep") == elements[0])
        }
    }

    @Test func rawWritesInsideATransactionArePartOfIt() async throws {
        try await withTemporaryDirectory { directory in
            let suite = Defaults.Suite(fileURL: storeSettingsURL(in: directory))
            let recorder = StoreChangeRecorder(suite)
            defer { recorder.stop() }
            let key = Defaults.Key<Int>("typed", default: 0, suite: suite)
            suite.transaction {
                suite[key] = 3
                suite.setStoredValues(["raw": .string("x")])
                #expect(suite.storedValue(named: "raw") == .string("x"))
            }
            #expect(await recorder.waitForEvents(1))
            #expect(recorder.changedKeySets == [["typed", "raw"]])
        }
    }

    @Test func userStoredValuesLeaveTheSystemFilesOut() throws {
        try withStoreTemporaryDirectory { directory in
            let user = storeSettingsURL(in: directory)
            let site = directory.appendingPathComponent("site.json")
            try storeWriteFile(user, Array(#"{"mine": 1}"#.utf8))
            try storeWriteFile(site, Array(#"{"theirs": 2, "mine": 3}"#.utf8))
            let suite = Defaults.Suite(fileURL: user, systemFiles: [site])
            #expect(suite.userStoredValues() == ["mine": .number("1")])
            #expect(suite.storedValues() == ["mine": .number("1"), "theirs": .number("2")])
            suite.setStoredValues(["theirs": .number("4")])
            #expect(suite.userStoredValues() == ["mine": .number("1"), "theirs": .number("4")])
        }
    }

    @Test func aSuitesFileIsFoundByName() throws {
        let name = "org.example.StoredValuesTests-\(UUID().uuidString)"
        let file = try Defaults.Suite.fileURL(forSuiteNamed: name)
        // Where a suite opened by that name keeps its file (nothing is written here).
        #expect(file == (try Defaults.Suite(name: name)).fileURL)
        // The XDG rule, worked out here from the environment.
        let environment = ProcessInfo.processInfo.environment
        let home =
            environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.config"
        #expect(
            Defaults.Suite.configurationDirectory.standardizedFileURL.path
                == URL(fileURLWithPath: home).standardizedFileURL.path
        )
        #expect(file.path.hasSuffix("/\(name)/settings.json"))
        for name in ["", ".", "..", "a/b", "tab\there"] {
            #expect(throws: Defaults.SuiteNameError.self) { try Defaults.Suite.fileURL(forSuiteNamed: name) }
        }
    }

    @Test func removingTheReservedMemberIsAllowed() throws {
        try withStoreTemporaryDirectory { directory in
            let url = storeSettingsURL(in: directory)
            try storeWriteFile(url, Array(#"{"": ["copied"], "kept": 1}"#.utf8))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: url, errorHandler: errors.handler)
            suite.setStoredValues(["": nil])
            try suite.synchronize()
            #expect(errors.errors.isEmpty)
            #expect(try Defaults.JSONValue(parsing: try storeFileBytes(url)) == .object(["kept": .number("1")]))
        }
    }

    @Test func bytesParseAsTheFileIsRead() throws {
        let marked: [UInt8] = [0xEF, 0xBB, 0xBF] + Array(#"{"a": [1, "é"]}"#.utf8)
        #expect(try Defaults.JSONValue(parsing: marked) == .object(["a": .array([.number("1"), .string("é")])]))
        let invalid: [UInt8] = Array(#"{"a": ""#.utf8) + [0xFF] + Array(#""}"#.utf8)
        let error = #expect(throws: Defaults.JSONValue.ParseError.self) { try Defaults.JSONValue(parsing: invalid) }
        #expect(error?.line == 1)
        #expect(error?.reason.contains("UTF-8") == true)
        let second = #expect(throws: Defaults.JSONValue.ParseError.self) {
            try Defaults.JSONValue(parsing: Array("{\n  \"a\": tru\n}".utf8))
        }
        #expect(second?.line == 2)
    }

    @Test func aKeyReadsStoredJSONAsARead() {
        let port = Defaults.Key<Int>("port", default: 80, suite: .inMemory())
        #expect(port.value(decoding: .number("8080")) == 8080)
        #expect(port.value(decoding: nil) == 80)
        #expect(port.value(decoding: .string("eighty")) == 80)
        #expect(port.value(decoding: .number("1.5")) == 80)
        let tags = Defaults.Key<[String]>("tags", default: [], suite: .inMemory())
        #expect(tags.value(decoding: .array([.string("a"), .string("b")])) == ["a", "b"])
    }
}
