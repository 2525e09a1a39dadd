import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A suite follows its path, not an inode: when a link on the way changes (a ConfigMap update, a
/// dotfile manager re-pointing a link, a directory link swapped), it reads the file the path leads
/// to now, as one external change with old and new values, and never falls back to defaults.
@Suite struct SymlinkFollowingTests {
    /// A suite on `url`, recording its events and errors.
    private struct Fixture {
        let suite: Defaults.Suite
        let recorder: StoreChangeRecorder
        let errors = StoreErrorCollector()

        init(_ url: URL) {
            suite = Defaults.Suite(fileURL: url, errorHandler: errors.handler)
            recorder = StoreChangeRecorder(suite)
        }

        func int(_ name: String) -> Int {
            suite[Defaults.Key<Int>(name, default: -1, suite: suite)]
        }

        /// Waits for `count` events in all and returns the changes of the last one.
        func changes(afterEvents count: Int) async -> [String: StoreValueChange] {
            #expect(await recorder.waitForEvents(count), "expected \(count) events, got \(recorder.changedKeySets)")
            return recorder.events.last?.valueChanges ?? [:]
        }
    }

    /// A ConfigMap volume in `directory` whose settings say `port`, and a suite on its file.
    private func volumeAndFixture(in directory: URL, port: Int) throws -> (ConfigMapVolume, Fixture) {
        let volume = try ConfigMapVolume(
            at: directory.appendingPathComponent("config"),
            files: ["settings.json": settings(port: port)]
        )
        return (volume, Fixture(volume.url(of: "settings.json")))
    }

    private func settings(port: Int, host: String = "a") -> String {
        #"{"port": \#(port), "host": "\#(host)"}"#
    }

    @Test func aConfigMapUpdateIsOneExternalChangeWithTheNewValues() async throws {
        try await withTemporaryDirectory { directory in
            var (volume, fixture) = try volumeAndFixture(in: directory, port: 1)
            defer { fixture.recorder.stop() }
            #expect(fixture.int("port") == 1)

            try volume.update(["settings.json": settings(port: 2)])
            let changes = await fixture.changes(afterEvents: 1)
            #expect(changes == ["port": StoreValueChange(.number("1"), .number("2"))])
            #expect(fixture.recorder.events.allSatisfy { $0.origin == .external })
            #expect(fixture.int("port") == 2)
            #expect(fixture.errors.errors.isEmpty, "\(fixture.errors.errors)")
        }
    }

    @Test func fiveConfigMapUpdatesInARowAreFiveChangesAndNeverADefault() async throws {
        try await withTemporaryDirectory { directory in
            var (volume, fixture) = try volumeAndFixture(in: directory, port: 1)
            defer { fixture.recorder.stop() }
            #expect(fixture.int("port") == 1)

            for port in 2...6 {
                try volume.update(["settings.json": settings(port: port)])
                let changes = await fixture.changes(afterEvents: port - 1)
                #expect(changes == ["port": StoreValueChange(.number("\(port - 1)"), .number("\(port)"))])
                #expect(fixture.int("port") == port)
            }
            // Anything spurious (a fall back to defaults, an echo) would be among these.
            let all = fixture.recorder.events.map(\.valueChanges)
            #expect(all == (2...6).map { ["port": StoreValueChange(.number("\($0 - 1)"), .number("\($0)"))] })
            #expect(fixture.errors.errors.isEmpty, "\(fixture.errors.errors)")
        }
    }

    @Test func updatesFasterThanTheyAreReadNeverShowADefault() async throws {
        try await withTemporaryDirectory { directory in
            var (volume, fixture) = try volumeAndFixture(in: directory, port: 0)
            defer { fixture.recorder.stop() }
            #expect(fixture.int("port") == 0)
            for port in 1...20 { try volume.update(["settings.json": settings(port: port)]) }
            // The last update's value arrives; every event in between goes up, never through nothing.
            var last = 0
            var seen = 0
            while last != 20 {
                let events = fixture.recorder.events
                for event in events[seen...] {
                    guard case .number(let text)? = event.valueChanges["port"]?.new, let port = Int(text) else {
                        Issue.record("port went to \(event.valueChanges)")
                        return
                    }
                    #expect(port > last)
                    last = port
                }
                seen = events.count
                if last == 20 { break }
                guard await fixture.recorder.waitForEvents(seen + 1) else {
                    Issue.record("no event after port \(last)")
                    return
                }
            }
            #expect(fixture.int("port") == 20)
            #expect(fixture.errors.errors.isEmpty, "\(fixture.errors.errors)")
        }
    }

    @Test func anotherProcessSeesEachConfigMapUpdateOnceAndNeverADefault() async throws {
        try await withTemporaryDirectory { directory in
            var volume = try ConfigMapVolume(
                at: directory.appendingPathComponent("config"),
                files: ["settings.json": settings(port: 1)]
            )
            let helper = try RunningHelper(["watch", volume.url(of: "settings.json").path])
            defer { helper.send(SIGKILL) }
            #expect(await helper.nextLine() == "ready")
            for port in 2...6 {
                try volume.update(["settings.json": settings(port: port)])
                #expect(await helper.nextLine() == "external port=\(port)")
            }
        }
    }

    @Test func aSecretOfSeveralFilesUpdatesEachSuiteOnce() async throws {
        try await withTemporaryDirectory { directory in
            var volume = try ConfigMapVolume(
                at: directory.appendingPathComponent("secret"),
                files: ["settings.json": settings(port: 1), "credentials.json": #"{"token": "old"}"#]
            )
            let settings = Fixture(volume.url(of: "settings.json"))
            let credentials = Fixture(volume.url(of: "credentials.json"))
            defer {
                settings.recorder.stop()
                credentials.recorder.stop()
            }
            let token = Defaults.Key<String>("token", default: "", suite: credentials.suite)
            #expect(credentials.suite[token] == "old")

            try volume.update([
                "settings.json": self.settings(port: 2), "credentials.json": #"{"token": "new"}"#,
            ])
            #expect(await settings.changes(afterEvents: 1) == ["port": StoreValueChange(.number("1"), .number("2"))])
            #expect(
                await credentials.changes(afterEvents: 1)
                    == ["token": StoreValueChange(.string("old"), .string("new"))]
            )
            #expect(credentials.suite[token] == "new")
            #expect(settings.suite != credentials.suite)
        }
    }

    @Test func aLinkRepointedByRenameIsFollowedAndWrittenThrough() async throws {
        try await withTemporaryDirectory { directory in
            let store = directory.appendingPathComponent("store")
            try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
            try storeWriteFile(store.appendingPathComponent("one.json"), Array(settings(port: 1).utf8))
            try storeWriteFile(store.appendingPathComponent("two.json"), Array(settings(port: 2, host: "b").utf8))
            let link = directory.appendingPathComponent("config/app/settings.json")
            try FileManager.default.createDirectory(
                at: link.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            #expect(symlink("../../store/one.json", link.path) == 0)
            let fixture = Fixture(link)
            defer { fixture.recorder.stop() }
            #expect(fixture.int("port") == 1)

            try repointSymlink(link, to: store.appendingPathComponent("two.json").path)
            let changes = await fixture.changes(afterEvents: 1)
            #expect(
                changes == [
                    "port": StoreValueChange(.number("1"), .number("2")),
                    "host": StoreValueChange(.string("a"), .string("b")),
                ]
            )

            // Writes go where the link leads now; the link stays a link, the old target untouched.
            fixture.suite[Defaults.Key<Int>("workers", default: 0, suite: fixture.suite)] = 4
            try fixture.suite.synchronize()
            let attributes = try FileManager.default.attributesOfItem(atPath: link.path)
            #expect(attributes[.type] as? FileAttributeType == .typeSymbolicLink)
            #expect(try storeFileObject(store.appendingPathComponent("two.json"))["workers"] as? Int == 4)
            #expect(try storeFileObject(store.appendingPathComponent("one.json"))["workers"] == nil)
            #expect(try storeDirectoryListing(store).filter { $0.hasSuffix(".lock") } == ["two.json.lock"])
            #expect(fixture.errors.errors.isEmpty, "\(fixture.errors.errors)")
        }
    }

    @Test func aDirectoryLinkOnTheWayRepointedIsFollowed() async throws {
        try await withTemporaryDirectory { directory in
            // ~/.config -> /data/one/config, then re-pointed to /data/two/config.
            for (name, port) in [("one", 1), ("two", 2)] {
                let app = directory.appendingPathComponent("data/\(name)/config/app")
                try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
                try storeWriteFile(app.appendingPathComponent("settings.json"), Array(settings(port: port).utf8))
            }
            let home = directory.appendingPathComponent("home")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            let config = home.appendingPathComponent(".config")
            #expect(symlink(directory.appendingPathComponent("data/one/config").path, config.path) == 0)
            let fixture = Fixture(config.appendingPathComponent("app/settings.json"))
            defer { fixture.recorder.stop() }
            #expect(fixture.int("port") == 1)

            try repointSymlink(config, to: "../data/two/config")
            #expect(await fixture.changes(afterEvents: 1) == ["port": StoreValueChange(.number("1"), .number("2"))])
            #expect(fixture.int("port") == 2)
        }
    }

    @Test func aChainOfLinksIsFollowedWhereverItChanges() async throws {
        try await withTemporaryDirectory { directory in
            // settings.json -> middle -> last -> one.json; then `middle` and `last` are re-pointed.
            for port in 1...3 {
                try storeWriteFile(directory.appendingPathComponent("\(port).json"), Array(settings(port: port).utf8))
            }
            let file = directory.appendingPathComponent("settings.json")
            #expect(symlink("last", directory.appendingPathComponent("middle").path) == 0)
            #expect(symlink("1.json", directory.appendingPathComponent("last").path) == 0)
            #expect(symlink("middle", file.path) == 0)
            let fixture = Fixture(file)
            defer { fixture.recorder.stop() }
            #expect(fixture.int("port") == 1)

            try repointSymlink(directory.appendingPathComponent("last"), to: "2.json")
            #expect(await fixture.changes(afterEvents: 1) == ["port": StoreValueChange(.number("1"), .number("2"))])
            try repointSymlink(directory.appendingPathComponent("middle"), to: "3.json")
            #expect(await fixture.changes(afterEvents: 2) == ["port": StoreValueChange(.number("2"), .number("3"))])
            #expect(fixture.int("port") == 3)
        }
    }

    @Test func aLinkRemadeWithAMomentMissingNeverShowsADefault() async throws {
        try await withTemporaryDirectory { directory in
            try storeWriteFile(directory.appendingPathComponent("1.json"), Array(settings(port: 1).utf8))
            try storeWriteFile(directory.appendingPathComponent("2.json"), Array(settings(port: 2).utf8))
            let file = directory.appendingPathComponent("settings.json")
            #expect(symlink("1.json", file.path) == 0)
            let fixture = Fixture(file)
            defer { fixture.recorder.stop() }
            #expect(fixture.int("port") == 1)

            // `ln -sfn`: the link is removed, then made again (retries held, so a pause between
            // the two on a busy machine is not taken for a deletion).
            fixture.suite.holdingBrokenFileRetries {
                #expect(unlink(file.path) == 0)
                #expect(symlink("2.json", file.path) == 0)
            }
            #expect(await fixture.changes(afterEvents: 1) == ["port": StoreValueChange(.number("1"), .number("2"))])
            #expect(fixture.recorder.events.count == 1)
        }
    }

    @Test func aSuiteOnTheFileItselfStaysOnItWhenALinkToItIsRepointed() async throws {
        try await withTemporaryDirectory { directory in
            let one = directory.appendingPathComponent("1.json")
            try storeWriteFile(one, Array(settings(port: 1).utf8))
            try storeWriteFile(directory.appendingPathComponent("2.json"), Array(settings(port: 2).utf8))
            let link = directory.appendingPathComponent("settings.json")
            #expect(symlink("1.json", link.path) == 0)
            let viaLink = Fixture(link)
            let direct = Fixture(one)
            defer {
                viaLink.recorder.stop()
                direct.recorder.stop()
            }
            #expect(viaLink.int("port") == 1)
            #expect(direct.int("port") == 1)

            try repointSymlink(link, to: "2.json")
            #expect(await viaLink.changes(afterEvents: 1) == ["port": StoreValueChange(.number("1"), .number("2"))])
            #expect(direct.int("port") == 1)
            direct.suite[Defaults.Key<Int>("port", default: -1, suite: direct.suite)] = 7
            try direct.suite.synchronize()
            #expect(try storeFileObject(one)["port"] as? Int == 7)
            #expect(try storeFileObject(directory.appendingPathComponent("2.json"))["port"] as? Int == 2)
            #expect(direct.recorder.externalEvents.isEmpty)
        }
    }

    @Test func aFlushWhileTheLinkFlipsWritesIntoTheFileItRead() throws {
        try withStoreTemporaryDirectory { directory in
            try storeWriteFile(directory.appendingPathComponent("a.json"), Array(#"{"onlyA": 1}"#.utf8))
            try storeWriteFile(directory.appendingPathComponent("b.json"), Array(#"{"onlyB": 1}"#.utf8))
            let link = directory.appendingPathComponent("settings.json")
            #expect(symlink("a.json", link.path) == 0)
            let suite = Defaults.Suite(fileURL: link) { _ in }
            let key = Defaults.Key<Int>("x", default: -1, suite: suite)
            let stop = StoreFlag()
            let flipper = StoreThread {
                var target = "b.json"
                while !stop.isSet {
                    try? repointSymlink(link, to: target)
                    target = target == "a.json" ? "b.json" : "a.json"
                    sched_yield()
                }
            }
            defer {
                stop.set()
                flipper.join()
            }
            for value in 0..<1_000 {
                suite[key] = value
                try? suite.synchronize()
                let a = try storeFileObject(directory.appendingPathComponent("a.json"))
                let b = try storeFileObject(directory.appendingPathComponent("b.json"))
                guard a["onlyB"] == nil, b["onlyA"] == nil else {
                    Issue.record("after \(value) flushes, one file's keys went into the other: a \(a), b \(b)")
                    return
                }
            }
        }
    }

    @Test func aSuiteOpenedAfterAnUpdateSharesTheStateOfOneOpenedBefore() async throws {
        try await withTemporaryDirectory { directory in
            var volume = try ConfigMapVolume(
                at: directory.appendingPathComponent("config"),
                files: ["settings.json": settings(port: 1)]
            )
            let before = Fixture(volume.url(of: "settings.json"))
            defer { before.recorder.stop() }
            try volume.update(["settings.json": settings(port: 2)])
            _ = await before.changes(afterEvents: 1)
            let after = Defaults.Suite(fileURL: volume.url(of: "settings.json"))
            #expect(after == before.suite)
        }
    }
}
