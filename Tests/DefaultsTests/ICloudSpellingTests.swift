import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// sindresorhus/Defaults' iCloud spellings compile here, each with a deprecation that says nothing
/// is synced on Linux and what does sync; and what does: a suite in a folder a sync tool keeps in
/// step follows the other machine's writes.
@Suite struct ICloudSpellingTests {
    /// Code as written for sindresorhus/Defaults, every iCloud spelling once.
    static let code = """
        import Defaults
        import Foundation

        extension Defaults.Keys {
            static let isUnicornMode = Key<Bool>("isUnicornMode", default: false, iCloud: true)
            static let quality = Key<Double?>("quality", iCloud: true)
            static let lives = Key<Int>("lives", iCloud: false) { 3 }
            static let shared = Key<String>("shared", default: "", suite: UserDefaults.standard, iCloud: true)
            static let sharedOptional = Key<Int?>("sharedOptional", suite: UserDefaults.standard, iCloud: true)
        }

        func useICloud() async -> Int {
            Defaults.iCloud.isDebug = true
            Defaults.iCloud.syncOnChange = true
            Defaults.iCloud.add(.isUnicornMode, .quality)
            Defaults.iCloud.add([.lives])
            Defaults.iCloud.remove(.isUnicornMode)
            Defaults.iCloud.remove([.lives])
            Defaults.iCloud.syncWithoutWaiting()
            Defaults.iCloud.syncWithoutWaiting(.quality, source: .remote)
            Defaults.iCloud.synchronize()
            await Defaults.iCloud.sync()
            await Defaults.iCloud.waitForSyncCompletion()
            let count = Defaults.iCloud.keys.count
            Defaults.iCloud.removeAll()
            return count
        }
        """

    @Test func theSpellingsCompileAndEachSaysNothingIsSynced() async throws {
        try await withTemporaryDirectory { directory in
            let source = directory.appendingPathComponent("UsesICloud.swift")
            try Self.code.write(to: source, atomically: true, encoding: .utf8)
            let swiftc = try #require(
                (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
                    .map { URL(fileURLWithPath: String($0)).appendingPathComponent("swiftc") }
                    .first { FileManager.default.isExecutableFile(atPath: $0.path) },
                "swiftc is not on PATH"
            )
            let modules = HelperProcess.builtProduct("Modules")
            let compiler = try RunningHelper(
                [
                    "-typecheck", "-swift-version", "6", "-diagnostic-style", "llvm", "-I", modules.path,
                    "-module-cache-path", directory.appendingPathComponent("cache").path, source.path,
                ],
                deadline: 300,
                executable: swiftc
            )
            let result = await compiler.waitForExit()
            #expect(result.status == 0, "\(result.errorOutput)")
            let warnings = result.errorOutput.split(separator: "\n").filter { $0.hasPrefix(source.path + ":") }
            // One per use: 5 keys, and 13 uses of `Defaults.iCloud`'s members.
            #expect(warnings.count == 18, "\(result.errorOutput)")
            #expect(
                warnings.allSatisfy {
                    $0.contains("is deprecated: iCloud does not exist on Linux, so this syncs nothing")
                },
                "\(warnings)"
            )
            #expect(result.errorOutput.contains("in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)"))
        }
    }

    /// What a sync tool does with a file the other machine changed: writes the new copy beside the
    /// old one under a name of its own, then renames it over.
    enum SyncTool: String, CaseIterable {
        case syncthing, nextcloud

        func temporaryName(for name: String) -> String {
            switch self {
            case .syncthing: ".syncthing.\(name).tmp"
            case .nextcloud: ".\(name).~\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
            }
        }

        /// Brings `source` (the other machine's file) to `destination` as this tool does.
        func deliver(_ source: URL, to destination: URL) throws {
            let temporary = destination.deletingLastPathComponent()
                .appendingPathComponent(temporaryName(for: destination.lastPathComponent))
            try Data(contentsOf: source).write(to: temporary)
            guard rename(temporary.path, destination.path) == 0 else {
                throw StoreSystemError(operation: "rename", code: errno)
            }
        }
    }

    @Test(arguments: SyncTool.allCases)
    func aSuiteInASyncedFolderFollowsTheOtherMachinesWrites(tool: SyncTool) async throws {
        try await withTemporaryDirectory { directory in
            // Two machines, each with its own copy of the synced folder.
            let here = storeSettingsURL(in: directory.appendingPathComponent("laptop/Sync/editor"))
            let there = storeSettingsURL(in: directory.appendingPathComponent("desktop/Sync/editor"))
            for file in [here, there] {
                try FileManager.default.createDirectory(
                    at: file.deletingLastPathComponent(),
                    withIntermediateDirectories: true
                )
            }
            let laptop = Defaults.Suite(fileURL: here)
            let desktop = Defaults.Suite(fileURL: there)
            let recorder = StoreChangeRecorder(laptop)
            defer { recorder.stop() }
            let fontSize = Defaults.Key<Int>("fontSize", default: 12, suite: laptop)
            let theme = Defaults.Key<String>("theme", default: "light", suite: laptop)
            #expect(laptop[fontSize] == 12)

            // The desktop writes; the tool brings its file over; the laptop follows, twice.
            desktop[Defaults.Key<Int>("fontSize", default: 12, suite: desktop)] = 18
            try desktop.synchronize()
            try tool.deliver(there, to: here)
            #expect(await recorder.waitForEvents(1), "\(recorder.changedKeySets)")
            #expect(laptop[fontSize] == 18)

            desktop[Defaults.Key<String>("theme", default: "light", suite: desktop)] = "dark"
            try desktop.synchronize()
            try tool.deliver(there, to: here)
            #expect(await recorder.waitForEvents(2), "\(recorder.changedKeySets)")
            #expect(laptop[theme] == "dark" && laptop[fontSize] == 18)
            #expect(recorder.changedKeySets == [["fontSize"], ["theme"]])
            #expect(recorder.events.allSatisfy { $0.origin == .external })

            // And back: the laptop's write reaches the desktop the same way.
            let desktopRecorder = StoreChangeRecorder(desktop)
            defer { desktopRecorder.stop() }
            laptop[fontSize] = 20
            try laptop.synchronize()
            try tool.deliver(here, to: there)
            #expect(await desktopRecorder.waitForEvents(1), "\(desktopRecorder.changedKeySets)")
            #expect(desktop[Defaults.Key<Int>("fontSize", default: 12, suite: desktop)] == 20)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: here.deletingLastPathComponent().path)
            // NB: a sync tool should leave the lock file alone (ignore it): it is this machine's.
            #expect(leftovers.sorted() == ["settings.json", "settings.json.lock"], "\(leftovers)")
        }
    }
}
