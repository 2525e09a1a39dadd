import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// What opening a program whose every key was renamed costs in writes.
@Suite struct MigrationBatchTests {
    @Test(arguments: [true, false])
    func aFirstOpenThatMigratesAHundredKeysIsOneLockedWrite(holdsOldValues: Bool) throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            var old: [String: Int] = [:]
            if holdsOldValues { for index in 0..<100 { old["old-\(index)"] = index } }
            try storeWriteFile(file, Array(try JSONSerialization.data(withJSONObject: old)))
            let suite = Defaults.Suite(fileURL: file)
            // The timer held, so a machine slower than the coalescing delay cannot split the burst:
            // what is tested is that the keys created before a look at the store migrate together.
            let keys = try suite.holdingTimedCommits {
                let keys = (0..<100)
                    .map { index in
                        Defaults.Key<Int>("setting-\(index)", default: -1, suite: suite, formerly: ["old-\(index)"])
                    }
                // Read through before they run.
                for (index, key) in keys.enumerated() { #expect(suite[key] == (holdsOldValues ? index : -1)) }
                #expect(try storeFileObject(file).count == (holdsOldValues ? 100 : 0))
                try suite.synchronize()
                return keys
            }
            #expect(suite.fileReplacementCount == 1)
            let stored = try storeFileObject(file)
            #expect(stored.count == (holdsOldValues ? 101 : 1), "\(stored.keys.sorted())")
            #expect(suite.appliedMigrations.count == 100)
            for (index, key) in keys.enumerated() { #expect(suite[key] == (holdsOldValues ? index : -1)) }
        }
    }

    /// Once a store records its migrations, a key asks whether its former names hold a value
    /// by a sieve of the names held, made when first asked: each of 300 former names an old
    /// version writes afterwards, in this process, is still found and moved.
    @Test func everyFormerNameWrittenAfterTheRecordIsFoundAndMoved() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(#"{"": {"migrations": ["first from first-old"]}, "first": 1}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            // The sieve is made here, over the values as they are.
            #expect(suite[Defaults.Key<Int>("first", default: 0, suite: suite, formerly: ["first-old"])] == 1)
            let names = (0..<300).map { "n\($0 * 7919 % 1000)-\(String(repeating: "x", count: $0 % 13))" }
            suite.setStoredValues(Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, .number("\($0)")) }))
            for (index, former) in names.enumerated() {
                let key = Defaults.Key<Int>("new-\(index)", default: -1, suite: suite, formerly: [former])
                #expect(suite[key] == index, "\(former)")
            }
            try suite.synchronize()
            let stored = try storeFileObject(file)
            #expect(names.allSatisfy { stored[$0] == nil }, "former names left: \(names.filter { stored[$0] != nil })")
            let wrong = (0..<300).filter { index in stored["new-" + String(index)] as? Int != index }
            #expect(wrong.isEmpty, "new names without their value: \(wrong)")
        }
    }

    /// A former name an old version wrote again is found by the sieve and moved, whether the
    /// file spells it with an escape or not, in ASCII or not (the sieve goes by the name's UTF-8
    /// text, which an escape does not change).
    @Test(arguments: [#"old\u002dx"#, #"old-x"#, #"\u00e9t\u00e9"#, "été"])
    func aFormerNameWrittenAgainIsFoundInAFileWhoseRecordComesFirst(written: String) throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let former = written.contains("\\u002d") || written == "old-x" ? "old-x" : "été"
            let text = #"{"": {"migrations": ["new from "# + former + #""]}, "new": 1, ""# + written + #"": 5}"#
            try storeWriteFile(file, Array(text.utf8))
            let suite = Defaults.Suite(fileURL: file)
            #expect(suite[Defaults.Key<Int>("new", default: 0, suite: suite, formerly: [former])] == 1)
            try suite.synchronize()
            let stored = try storeFileObject(file)
            #expect(stored[former] == nil, "the former name was left: \(stored)")
            #expect(stored["new"] as? Int == 1)
        }
    }
}
