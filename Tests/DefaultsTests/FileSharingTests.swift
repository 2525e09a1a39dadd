import Defaults
import DefaultsTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

/// Two suites on one file, symlinked files, and error handlers that call back into the store.
@Suite struct FileSharingTests {
    @Test func twoSuitesOnOneFileShareOneState() throws {
        try withStoreTemporaryDirectory { directory in
            let url = storeSettingsURL(in: directory)
            let first = Defaults.Suite(fileURL: url)
            let second = Defaults.Suite(fileURL: url)
            let a = Defaults.Key<Int>("a", default: 0, suite: first)
            let b = Defaults.Key<Int>("b", default: 0, suite: second)
            first[a] = 1
            // Read at once through the other suite, before any flush.
            #expect(second[Defaults.Key<Int>("a", default: 0, suite: second)] == 1)
            second[b] = 2
            #expect(first[Defaults.Key<Int>("b", default: 0, suite: first)] == 2)
            Defaults.reset("a", suite: second)
            #expect(first[a] == 0)
            try first.synchronize()
            #expect(try storeFileObject(url).keys.sorted() == ["b"])
            #expect(first.fileReplacementCount == second.fileReplacementCount)
        }
    }

    @Test func suitesOpenedByNameTwiceShareOneState() async throws {
        try await withTemporaryDirectory(prefix: "DefaultsStoreTests") { directory in
            let result = try await HelperProcess.run(
                ["named-twice", "com.example.twice"],
                environment: ["XDG_CONFIG_HOME": directory.path]
            )
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(result.lines == ["second reads 7", "standard reads 7", "equal: true"])
        }
    }

    @Test func aSuiteOnASymlinkToTheFileIsAStateOfItsOwnThatSeesTheFilesWrites() async throws {
        try await withTemporaryDirectory(prefix: "DefaultsStoreTests") { directory in
            let real = storeSettingsURL(in: directory)
            let link = directory.appendingPathComponent("link.json")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
            let viaFile = Defaults.Suite(fileURL: real)
            let viaLink = Defaults.Suite(fileURL: link)
            // NB: each follows its own path: the link may be re-pointed, the file's path may not.
            #expect(viaFile != viaLink)
            #expect(viaLink.fileURL?.path == link.path, "each suite names the file as it was given")
            let recorder = StoreChangeRecorder(viaFile)
            defer { recorder.stop() }
            viaLink[Defaults.Key<String>("s", default: "", suite: viaLink)] = "shared"
            try viaLink.synchronize()
            #expect(await recorder.waitForEvents(1))
            #expect(viaFile[Defaults.Key<String>("s", default: "", suite: viaFile)] == "shared")
        }
    }

    @Test func nestedExclusiveTransactionsOnTwoStatesOfOneFileDoNotWaitForThemselves() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let withSystemFiles = Defaults.Suite(
                fileURL: file,
                systemFiles: [directory.appendingPathComponent("etc.json")]
            )
            let plain = Defaults.Suite(fileURL: file)
            #expect(withSystemFiles != plain)
            let finished = DispatchSemaphore(value: 0)
            let thread = StoreThread {
                try? withSystemFiles.exclusiveTransaction {
                    withSystemFiles[Defaults.Key<Int>("outer", default: 0, suite: withSystemFiles)] = 1
                    try? plain.exclusiveTransaction {
                        plain[Defaults.Key<Int>("inner", default: 0, suite: plain)] = 2
                    }
                    try? plain.synchronize()
                }
                finished.signal()
            }
            // NB: a deadline only so a deadlock fails the test instead of hanging it.
            #expect(finished.wait(timeout: .now() + 120) == .success, "the inner transaction waited for the outer one")
            thread.join()
            let written = try storeFileObject(file) as NSDictionary
            #expect(written == ["outer": 1, "inner": 2] as NSDictionary)
        }
    }

    @Test func aSymlinkedFileIsWrittenThroughAndStaysALink() throws {
        try withStoreTemporaryDirectory { directory in
            let real = directory.appendingPathComponent("dotfiles/settings.json")
            try FileManager.default.createDirectory(
                at: real.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try storeWriteFile(real, Array("{\"x\" : 1}\n".utf8))
            let link = storeSettingsURL(in: directory)
            try FileManager.default.createDirectory(
                at: link.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
            let suite = Defaults.Suite(fileURL: link)
            #expect(suite[Defaults.Key<Int>("x", default: 0, suite: suite)] == 1)
            suite[Defaults.Key<Int>("y", default: 0, suite: suite)] = 2
            try suite.synchronize()
            let attributes = try FileManager.default.attributesOfItem(atPath: link.path)
            #expect(attributes[.type] as? FileAttributeType == .typeSymbolicLink)
            #expect(try storeFileObject(real).keys.sorted() == ["x", "y"])
        }
    }

    @Test func aHandlerThatSynchronizesAfterABackgroundFailureDoesNotDeadlock() throws {
        try withStoreTemporaryDirectory { directory in
            // A regular file where the suite's directory should be: every write fails.
            let obstacle = directory.appendingPathComponent("blocked")
            try storeWriteFile(obstacle, [0x2A])
            let handled = DispatchSemaphore(value: 0)
            let calls = Atomic<Int>(0)
            let retryThrew = Atomic<Bool>(false)
            let suiteBox = Lock<Defaults.Suite?>(nil)
            let suite = Defaults.Suite(fileURL: obstacle.appendingPathComponent("settings.json")) { _ in
                // The first report comes from the background flush; retrying from the handler
                // used to wait on the flush queue it was running on.
                guard calls.add(1, ordering: .relaxed).newValue == 1 else { return }
                do {
                    let retried = suiteBox.withLock { $0 }
                    do { try retried?.synchronize() } catch { retryThrew.store(true, ordering: .relaxed) }
                }
                // NB: only once this handler holds the suite no more: released after the test removed
                // its folder, the suite's last flush would make the folder again.
                handled.signal()
            }
            suiteBox.withLock { $0 = suite }
            suite[Defaults.Key<Int>("n", default: 0, suite: suite)] = 1
            #expect(handled.wait(timeout: .now() + 120) == .success)
            // The retry failed the same way: it throws, and the failure is not reported again.
            let threw = retryThrew.load(ordering: .relaxed)
            #expect(threw)
            let reported = calls.load(ordering: .relaxed)
            #expect(reported == 1)
            suiteBox.withLock { $0 = nil }
        }
    }

    @Test func aHandlerThatReadsTheStandardSuiteWhileItLoadsACorruptFileDoesNotHang() async throws {
        try await withTemporaryDirectory(prefix: "DefaultsStoreTests") { directory in
            let file = directory.appendingPathComponent("defaults-test-helper/settings.json")
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try storeWriteFile(file, Array("{ not json".utf8))
            let result = try await HelperProcess.run(
                ["corrupt-standard"],
                environment: ["XDG_CONFIG_HOME": directory.path],
                deadline: 600
            )
            #expect(result.status == 0, "helper ended with \(result.status): \(result.errorOutput)")
            #expect(result.lines.contains("port: 8080"))
            #expect(result.lines.contains { $0.hasPrefix("reported (verbose: true): Defaults: ") })
        }
    }
}
