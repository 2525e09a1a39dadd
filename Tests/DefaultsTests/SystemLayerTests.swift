import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// System files beneath a suite's own file, as `$XDG_CONFIG_DIRS` gives them: values for the keys
/// the user's file lacks, locks, every layer watched live, and writes to the user's file only.
@Suite struct SystemLayerTests {
    /// A user file over two system files, `site` (listed first, wins) and `vendor`.
    private struct Fixture {
        let user: URL
        let site: URL
        let vendor: URL
        let suite: Defaults.Suite
        let recorder: StoreChangeRecorder
        let errors = StoreErrorCollector()

        init(in directory: URL, user: String?, site: String?, vendor: String?) throws {
            self.user = directory.appendingPathComponent("home/app/settings.json")
            self.site = directory.appendingPathComponent("site/app/settings.json")
            self.vendor = directory.appendingPathComponent("vendor/app/settings.json")
            for (url, text) in [(self.user, user), (self.site, site), (self.vendor, vendor)] {
                guard let text else { continue }
                try FileManager.default.createDirectory(
                    at: url.deletingLastPathComponent(),
                    withIntermediateDirectories: true
                )
                try storeWriteFile(url, Array(text.utf8))
            }
            suite = Defaults.Suite(
                fileURL: self.user,
                systemFiles: [self.site, self.vendor],
                errorHandler: errors.handler
            )
            recorder = StoreChangeRecorder(suite)
        }

        func key(_ name: String) -> Defaults.Key<Int> {
            Defaults.Key<Int>(name, default: -1, suite: suite)
        }

        func int(_ name: String) -> Int { suite[key(name)] }

        /// Saves `text` over `url` the way most editors do: a new file, renamed over the old one.
        func save(_ text: String, to url: URL) throws {
            let temporary = url.deletingLastPathComponent().appendingPathComponent(".swp")
            try storeWriteFile(temporary, Array(text.utf8))
            #expect(rename(temporary.path, url.path) == 0)
        }

        /// Stops recording and writes what is pending, so the suite's last flush, whenever the
        /// suite is released, has nothing to write into the removed temporary folder.
        func finish() {
            recorder.stop()
            try? suite.synchronize()
        }

        /// Waits for `count` events in all and returns the changes of the last one.
        func changes(afterEvents count: Int) async -> [String: StoreValueChange] {
            #expect(await recorder.waitForEvents(count), "expected \(count) events, got \(recorder.changedKeySets)")
            return recorder.events.last?.valueChanges ?? [:]
        }
    }

    @Test func eachKeyReadsTheHighestLayerThatSetsIt() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(
                in: directory,
                user: #"{"a": 1}"#,
                site: #"{"a": 2, "b": 2}"#,
                vendor: #"{"a": 3, "b": 3, "c": 3}"#
            )
            defer { fixture.finish() }
            #expect(fixture.int("a") == 1)
            #expect(fixture.int("b") == 2)
            #expect(fixture.int("c") == 3)
            #expect(fixture.int("d") == -1)
            #expect(fixture.suite.source(of: fixture.key("a")) == .userFile(fixture.user))
            #expect(fixture.suite.source(of: fixture.key("b")) == .systemFile(fixture.site))
            #expect(fixture.suite.source(of: fixture.key("c")) == .systemFile(fixture.vendor))
            #expect(fixture.suite.source(of: fixture.key("d")) == .defaultValue)
            #expect(fixture.suite.storedValues() == ["a": .number("1"), "b": .number("2"), "c": .number("3")])
            #expect(fixture.suite.systemFileURLs == [fixture.site, fixture.vendor])
            #expect(fixture.errors.errors.isEmpty, "\(fixture.errors.errors)")
        }
    }

    @Test func writesGoToTheUserFileOnlyAndResetBringsBackTheSystemValue() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, user: nil, site: #"{"b": 2}"#, vendor: #"{"c": 3}"#)
            defer { fixture.finish() }
            let site = try storeFileBytes(fixture.site)
            let vendor = try storeFileBytes(fixture.vendor)

            fixture.suite[fixture.key("b")] = 20
            #expect(await fixture.changes(afterEvents: 1) == ["b": StoreValueChange(.number("2"), .number("20"))])
            try fixture.suite.synchronize()
            #expect(try storeFileObject(fixture.user) as NSDictionary == ["b": 20] as NSDictionary)
            #expect(try storeFileBytes(fixture.site) == site)
            #expect(try storeFileBytes(fixture.vendor) == vendor)

            fixture.key("b").reset()
            #expect(fixture.int("b") == 2)
            #expect(await fixture.changes(afterEvents: 2) == ["b": StoreValueChange(.number("20"), .number("2"))])
            try fixture.suite.synchronize()
            #expect(try storeFileObject(fixture.user).isEmpty)

            // Writing the system value itself changes the user's file, and nothing reads see.
            fixture.suite[fixture.key("c")] = 3
            try fixture.suite.synchronize()
            #expect(try storeFileObject(fixture.user)["c"] as? Int == 3)
            fixture.suite[fixture.key("b")] = 21
            #expect(await fixture.changes(afterEvents: 3) == ["b": StoreValueChange(.number("2"), .number("21"))])
            #expect(fixture.recorder.events.count == 3)
        }
    }

    @Test func aSystemFileChangedLiveIsOneChangeOfTheKeysReadsSee() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(
                in: directory,
                user: #"{"a": 1}"#,
                site: #"{"b": 2}"#,
                vendor: #"{"a": 3, "c": 3}"#
            )
            defer { fixture.finish() }
            #expect(fixture.int("c") == 3)

            // `a` is the user's, `b` the site's: only `c` changes for reads.
            try fixture.save(#"{"a": 30, "b": 30, "c": 30}"#, to: fixture.vendor)
            #expect(await fixture.changes(afterEvents: 1) == ["c": StoreValueChange(.number("3"), .number("30"))])
            #expect(fixture.int("c") == 30)
            #expect(fixture.int("a") == 1)
            #expect(fixture.int("b") == 2)

            // A system file that appears is read; one that goes takes its values with it.
            try FileManager.default.removeItem(at: fixture.site)
            #expect(await fixture.changes(afterEvents: 2) == ["b": StoreValueChange(.number("2"), .number("30"))])
            try fixture.save(#"{"b": 4, "d": 4}"#, to: fixture.site)
            #expect(
                await fixture.changes(afterEvents: 3) == [
                    "b": StoreValueChange(.number("30"), .number("4")), "d": StoreValueChange(nil, .number("4")),
                ]
            )
            #expect(fixture.recorder.events.allSatisfy { $0.origin == .external })
            #expect(fixture.errors.errors.isEmpty, "\(fixture.errors.errors)")
        }
    }

    @Test func aLockedKeyReadsTheSystemValueOverTheUserFileArgumentsAndEnvironment() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(
                in: directory,
                user: #"{"a": 1, "b": 1}"#,
                site: #"{"": {"locked": ["a", "c"]}, "a": 2}"#,
                vendor: #"{"b": 3}"#
            )
            defer { fixture.finish() }
            fixture.suite.overrideWithLaunchArguments(["program", "-a", "7", "-b", "7"])
            fixture.suite.overrideWithEnvironment(prefix: "APP_", ["APP_A": "8", "APP_C": "8"])
            #expect(fixture.int("a") == 2)
            #expect(fixture.int("b") == 7)
            #expect(fixture.int("c") == -1, "locked with no system value: the default")
            #expect(fixture.suite.source(of: fixture.key("a")) == .locked(by: fixture.site, valueFrom: fixture.site))
            #expect(fixture.suite.source(of: fixture.key("b")) == .launchArgument)
            #expect(fixture.suite.source(of: fixture.key("c")) == .locked(by: fixture.site, valueFrom: nil))
            #expect(fixture.suite.storedValue(named: "a") == .number("2"))
            #expect(fixture.suite.storedValue(named: "c") == nil)
            #expect(fixture.suite.storedValues()[""] == nil, "the lock list is no setting")
        }
    }

    @Test func aWriteToALockedKeyIsRefusedAndReportedAndLosesNothing() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(
                in: directory,
                user: #"{"a": 1}"#,
                site: #"{"": {"locked": true}, "a": 2, "b": 2}"#,
                vendor: nil
            )
            defer { fixture.finish() }
            let before = try storeFileBytes(fixture.user)

            fixture.suite[fixture.key("a")] = 5
            fixture.key("b").reset()
            fixture.suite.transaction {
                fixture.suite[fixture.key("b")] = 6
                fixture.suite[fixture.key("free")] = 6
            }
            try fixture.suite.exclusiveTransaction { fixture.suite[fixture.key("a")] = 9 }
            #expect(fixture.int("a") == 2)
            #expect(fixture.int("b") == 2)
            #expect(fixture.int("free") == 6)
            let locked = fixture.errors.errors.compactMap { error -> String? in
                guard case .lockedKey(let key, let file) = error, file == fixture.site else { return nil }
                return key
            }
            #expect(locked == ["a", "b", "a"], "\(fixture.errors.errors)")
            #expect(fixture.errors.errors.first?.description.contains("locked by \(fixture.site.path)") == true)
            // The next synchronize() stores what it may, and throws the first refusal, once.
            let refusal = #expect(throws: Defaults.StorageError.self) { try fixture.suite.synchronize() }
            #expect(refusal?.description == fixture.errors.errors.first?.description)
            try fixture.suite.synchronize()
            #expect(try storeFileObject(fixture.user) as NSDictionary == ["a": 1, "free": 6] as NSDictionary)
            #expect(try storeFileBytes(fixture.user) != before)
            #expect(fixture.recorder.changedKeySets == [["free"]])
        }
    }

    @Test func liftingALockBringsTheUsersValueBack() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(
                in: directory,
                user: #"{"a": 1, "b": 1}"#,
                site: #"{"": {"locked": ["a", "b"]}, "a": 2, "b": 2}"#,
                vendor: nil
            )
            defer { fixture.finish() }
            fixture.suite.overrideWithLaunchArguments(["program", "-b", "7"])
            #expect(fixture.int("a") == 2)
            #expect(fixture.int("b") == 2)

            try fixture.save(#"{"a": 2, "b": 2}"#, to: fixture.site)
            #expect(
                await fixture.changes(afterEvents: 1) == [
                    "a": StoreValueChange(.number("2"), .number("1")),
                    "b": StoreValueChange(.number("2"), .number("7")),
                ]
            )
            #expect(fixture.int("a") == 1)
            #expect(fixture.int("b") == 7)
            fixture.suite[fixture.key("a")] = 3
            #expect(fixture.int("a") == 3)

            // Locked again, live: reads go back to the system value, writes are refused again.
            try fixture.save(#"{"": {"locked": ["a"]}, "a": 2}"#, to: fixture.site)
            #expect(await fixture.changes(afterEvents: 3) == ["a": StoreValueChange(.number("3"), .number("2"))])
            fixture.suite[fixture.key("a")] = 4
            #expect(fixture.int("a") == 2)
        }
    }

    @Test func aLockAddedOverAnOverrideReadsTheSystemValueNotAValueWrittenMeanwhile() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, user: nil, site: #"{"marker": 1}"#, vendor: nil)
            defer { fixture.finish() }
            fixture.suite.overrideWithLaunchArguments(["program", "-fontSize", "5"])
            #expect(fixture.int("fontSize") == 5)
            fixture.suite[fixture.key("fontSize")] = 3
            #expect(fixture.int("fontSize") == 5, "the override stands in front of the write")

            // Locked at the override's value: reads do not change, and the lock is reported all the
            // same (old and new equal), so widgets bound to the key follow it at once.
            try fixture.save(#"{"": {"locked": ["fontSize"]}, "fontSize": 5, "marker": 2}"#, to: fixture.site)
            #expect(
                await fixture.changes(afterEvents: 1) == [
                    "marker": StoreValueChange(.number("1"), .number("2")),
                    "fontSize": StoreValueChange(.number("5"), .number("5")),
                ]
            )
            #expect(fixture.int("fontSize") == 5)
            #expect(
                fixture.suite.source(of: fixture.key("fontSize")) == .locked(by: fixture.site, valueFrom: fixture.site)
            )
        }
    }

    @Test func aLockListThatIsNotOneIsReportedAndLocksNothing() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, user: #"{"a": 1}"#, site: #"{"": ["a"], "b": 2}"#, vendor: nil)
            defer { fixture.finish() }
            #expect(fixture.int("a") == 1)
            #expect(fixture.int("b") == 2)
            guard case .invalidLocks(let url, let reason)? = fixture.errors.errors.first else {
                Issue.record("expected .invalidLocks, got \(fixture.errors.errors)")
                return
            }
            #expect(url == fixture.site)
            #expect(reason.contains("must be an object"))
        }
    }

    @Test func aBrokenSystemFileIsReportedLeftAsItIsAndReadAsEmpty() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, user: nil, site: #"{"b": "#, vendor: #"{"b": 3}"#)
            defer { fixture.finish() }
            #expect(fixture.int("b") == 3)
            guard case .corruptFileLeftInPlace(let url, _)? = fixture.errors.errors.first else {
                Issue.record("expected .corruptFileLeftInPlace, got \(fixture.errors.errors)")
                return
            }
            #expect(url == fixture.site)
            #expect(try storeFileText(fixture.site) == #"{"b": "#)
            #expect(try storeDirectoryListing(fixture.site.deletingLastPathComponent()) == ["settings.json"])
        }
    }

    @Test func aSuiteByNameReadsTheXDGConfigDirsFirstListedFirst() async throws {
        try await withTemporaryDirectory { directory in
            let files = [
                ("home", #"{"a": 1}"#), ("site", #"{"a": 2, "b": 2}"#), ("vendor", #"{"a": 3, "b": 3, "c": 3}"#),
            ]
            for (folder, text) in files {
                let file = directory.appendingPathComponent("\(folder)/tool/settings.json")
                try FileManager.default.createDirectory(
                    at: file.deletingLastPathComponent(),
                    withIntermediateDirectories: true
                )
                try storeWriteFile(file, Array(text.utf8))
            }
            let path = { (folder: String) in directory.appendingPathComponent(folder).path }
            let result = try await HelperProcess.run(
                ["layers", "tool", "a", "b", "c", "d"],
                environment: [
                    "XDG_CONFIG_HOME": path("home"),
                    // A relative entry is ignored, as the XDG spec says; the user's own directory too.
                    "XDG_CONFIG_DIRS": "\(path("site")):relative:\(path("home")):\(path("vendor"))",
                ]
            )
            #expect(result.status == 0, "\(result.errorOutput)")
            let file = { (folder: String) in "\(path(folder))/tool/settings.json" }
            #expect(
                result.lines == [
                    "a=1 from the user's file \(file("home"))", "b=2 from the system file \(file("site"))",
                    "c=3 from the system file \(file("vendor"))", "d=-1 from the program's default", "standard: true",
                ]
            )
        }
    }

    @Test func aSystemFileChangeUnderASecretIsNoChangeOfItsReads() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, user: "{}", site: nil, vendor: #"{"token": "one", "c": 1}"#)
            defer { fixture.finish() }
            let secrets = directory.appendingPathComponent("secrets", isDirectory: true)
            try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true)
            try Data("from the secret".utf8).write(to: secrets.appendingPathComponent("token"))
            fixture.suite.readSecrets(from: secrets)
            let token = Defaults.Key<String>(secret: "token", suite: fixture.suite)
            #expect(fixture.suite[token] == "from the secret")
            // The secret stands in front of the system file's value: one change, told once.
            #expect(
                await fixture.changes(afterEvents: 1) == [
                    "token": StoreValueChange(.string("one"), .string("from the secret"))
                ]
            )

            // Reads of the secret see its file, whatever a system file says beneath it: only `c`
            // changes for reads (the secret's name was told as a change from "one" to "two").
            try fixture.save(#"{"token": "two", "c": 2}"#, to: fixture.vendor)
            #expect(await fixture.changes(afterEvents: 2) == ["c": StoreValueChange(.number("1"), .number("2"))])
            #expect(fixture.suite[token] == "from the secret")
            #expect(fixture.errors.errors.isEmpty, "\(fixture.errors.errors)")
        }
    }

    @Test func aSuiteWithOtherSystemFilesHasAStateOfItsOwn() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, user: #"{"a": 1}"#, site: #"{"b": 2}"#, vendor: nil)
            defer { fixture.finish() }
            let same = Defaults.Suite(fileURL: fixture.user, systemFiles: [fixture.site, fixture.vendor])
            let plain = Defaults.Suite(fileURL: fixture.user)
            #expect(same == fixture.suite)
            #expect(plain != fixture.suite)
            #expect(plain[Defaults.Key<Int>("b", default: -1, suite: plain)] == -1)
        }
    }
}
