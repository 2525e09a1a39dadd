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
}
