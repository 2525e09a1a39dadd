import Defaults
import DefaultsObservation
import DefaultsTestSupport
import Foundation
import Observation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Observable
final class EditorSettingsModel: @unchecked Sendable {  // the wrapper is set once, in init; values live in the store
    @ObservationIgnored @ObservableDefault<Int> var fontSize: Int

    init(key: Defaults.Key<Int>) {
        _fontSize = ObservableDefault(key)
    }
}

/// Every kind of observer sees a change made outside this process, once per change, with the
/// right values: a write by another process, an editor's save (a new file renamed over the old),
/// an in-place rewrite, a ConfigMap update, a re-pointed link, and an edit of a system file.
@Suite struct ExternalChangeObservationTests {
    enum Change: String, CaseIterable, CustomTestStringConvertible {
        case anotherProcess, editorSave, inPlaceRewrite
        /// kubelet's update of a ConfigMap volume: `..data` swapped to a new directory.
        case configMapUpdate
        /// A dotfile manager's: the link re-pointed by renaming a new link over it.
        case linkRepointed
        /// An administrator's edit of a system file beneath a user's file that lacks the key.
        case systemFileEdit

        var testDescription: String { rawValue }

        /// Lays out a file whose `fontSize` is 12 and `theme` "dark", and returns how to open the
        /// suite and change the value this way.
        func arrange(in directory: URL) throws -> Arrangement {
            try Arrangement(self, in: directory)
        }
    }

    /// Where a test's suite reads from, and how its `fontSize` is changed.
    final class Arrangement {
        let change: Change
        /// The suite's own file, and the system files beneath it.
        let file: URL
        let systemFiles: [URL]
        private var volume: ConfigMapVolume?
        private let directory: URL

        init(_ change: Change, in directory: URL) throws {
            self.change = change
            self.directory = directory
            let editor = directory.appendingPathComponent("editor")
            try FileManager.default.createDirectory(at: editor, withIntermediateDirectories: true)
            switch change {
            case .anotherProcess, .editorSave, .inPlaceRewrite:
                file = editor.appendingPathComponent("settings.json")
                systemFiles = []
                try Data(Self.text(12).utf8).write(to: file)
            case .configMapUpdate:
                volume = try ConfigMapVolume(
                    at: directory.appendingPathComponent("volume"),
                    files: ["settings.json": Self.text(12)]
                )
                file = volume!.url(of: "settings.json")
                systemFiles = []
            case .linkRepointed:
                file = editor.appendingPathComponent("settings.json")
                systemFiles = []
                try Data(Self.text(12).utf8).write(to: directory.appendingPathComponent("12.json"))
                #expect(symlink("../12.json", file.path) == 0)
            case .systemFileEdit:
                file = editor.appendingPathComponent("settings.json")
                systemFiles = [directory.appendingPathComponent("xdg/editor/settings.json")]
                try FileManager.default.createDirectory(
                    at: systemFiles[0].deletingLastPathComponent(),
                    withIntermediateDirectories: true
                )
                try Data(Self.text(12).utf8).write(to: systemFiles[0])
            }
        }

        private static func text(_ value: Int) -> String {
            #"{"fontSize" : \#(value), "theme" : "dark"}"#
        }

        /// Makes what the suite reads say `fontSize` is `value`, this way.
        func apply(_ value: Int, to suite: Defaults.Suite) async throws {
            let text = Self.text(value)
            switch change {
            case .anotherProcess:
                let result = try await HelperProcess.run(["write", file.path, "fontSize", "\(value)"])
                #expect(result.status == 0, "\(result.errorOutput)")
            case .editorSave:
                let temporary = file.deletingLastPathComponent().appendingPathComponent("settings.json~")
                try Data(text.utf8).write(to: temporary)
                #expect(rename(temporary.path, file.path) == 0)
            case .inPlaceRewrite:
                // NB: retries held, so a pause between emptying and writing is not a broken save.
                try suite.holdingBrokenFileRetries {
                    let handle = try FileHandle(forWritingTo: file)
                    try handle.truncate(atOffset: 0)
                    try handle.write(contentsOf: Data(text.utf8))
                    try handle.close()
                }
            case .configMapUpdate:
                try volume!.update(["settings.json": text])
            case .linkRepointed:
                let target = directory.appendingPathComponent("\(value).json")
                try Data(text.utf8).write(to: target)
                try repointSymlink(file, to: target.path)
            case .systemFileEdit:
                let temporary = systemFiles[0].deletingLastPathComponent().appendingPathComponent(".new")
                try Data(text.utf8).write(to: temporary)
                #expect(rename(temporary.path, systemFiles[0].path) == 0)
            }
        }
    }

    /// Arms one round of `withObservationTracking` on the model; `fired` gets the value seen then.
    private func track(_ model: EditorSettingsModel, into fired: EventLog<Int>) {
        withObservationTracking {
            _ = model.fontSize
        } onChange: {
            fired.append(model.fontSize)
        }
    }

    @Test(arguments: Change.allCases)
    func everyObserverSeesEachOutsideChangeOnce(_ change: Change) async throws {
        try await withTemporaryDirectory { directory in
            let arrangement = try change.arrange(in: directory)
            let suite = Defaults.Suite(fileURL: arrangement.file, systemFiles: arrangement.systemFiles)
            let fontSize = Defaults.Key<Int>("fontSize", default: 10, suite: suite)
            let theme = Defaults.Key<String>("theme", default: "light", suite: suite)

            let observed = EventLog<Defaults.KeyChange<Int>>()
            let observation = Defaults.observe(fontSize, options: []) { observed.append($0) }
            let together = EventLog<Int>()
            let multiKey = Defaults.observe(keys: fontSize, theme, options: []) { together.append(1) }
            let clock = ManualClock()
            let debounced = EventLog<Set<String>>()
            let debounce = Defaults.observe(keys: [fontSize, theme], debounce: .seconds(1), clock: clock) {
                debounced.append(Set($0.map(\.name)))
            }
            let streamed = EventLog<Int>()
            let stream = Defaults.updates(fontSize, initial: false)
            let consumer = Task {
                for await value in stream { streamed.append(value) }
            }
            let model = EditorSettingsModel(key: fontSize)
            #expect(model.fontSize == 12)
            let tracked = EventLog<Int>()

            for (round, value) in [14, 16].enumerated() {
                let count = round + 1
                track(model, into: tracked)
                try await arrangement.apply(value, to: suite)
                #expect(await observed.wait(forCount: count), "observe: \(observed.all)")
                #expect(await together.wait(forCount: count), "observe(keys:): \(together.count)")
                #expect(await streamed.wait(forCount: count), "updates: \(streamed.all)")
                #expect(await tracked.wait(forCount: count), "withObservationTracking: \(tracked.all)")
                await clock.waitForSleepers()
                clock.advance(by: .seconds(1))
                #expect(await debounced.wait(forCount: count), "debounced: \(debounced.all)")
            }

            #expect(
                observed.all == [
                    Defaults.KeyChange(oldValue: 12, newValue: 14), Defaults.KeyChange(oldValue: 14, newValue: 16),
                ]
            )
            #expect(together.count == 2)
            #expect(streamed.all == [14, 16])
            #expect(tracked.all == [14, 16])
            #expect(debounced.all == [["fontSize"], ["fontSize"]])
            #expect(model.fontSize == 16)
            #expect(Defaults[theme] == "dark")

            consumer.cancel()
            observation.invalidate()
            multiKey.invalidate()
            debounce.invalidate()
        }
    }

    @Test func aDeletedFileTellsObserversTheDefaultIsBack() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("settings.json")
            try Data(#"{"fontSize" : 12}"#.utf8).write(to: file)
            let suite = Defaults.Suite(fileURL: file)
            let fontSize = Defaults.Key<Int>("fontSize", default: 10, suite: suite)
            let model = EditorSettingsModel(key: fontSize)
            let observed = EventLog<Defaults.KeyChange<Int>>()
            let observation = Defaults.observe(fontSize, options: []) { observed.append($0) }
            let tracked = EventLog<Int>()
            track(model, into: tracked)

            try FileManager.default.removeItem(at: file)
            #expect(await observed.wait(forCount: 1))
            #expect(await tracked.wait(forCount: 1))
            #expect(observed.all == [Defaults.KeyChange(oldValue: 12, newValue: 10)])
            #expect(tracked.all == [10])
            observation.invalidate()
        }
    }

    @Test func twoSuitesOnOneFileTellEachOthersObservers() throws {
        try withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("settings.json")
            let first = Defaults.Suite(fileURL: file)
            let second = Defaults.Suite(fileURL: file)
            let observed = EventLog<Int>()
            let observation = Defaults.observe(Defaults.Key<Int>("n", default: 0, suite: second), options: []) {
                observed.append($0.newValue)
            }
            // A write through the first suite, on this thread: the second suite's observer is
            // called before the write returns.
            first[Defaults.Key<Int>("n", default: 0, suite: first)] = 5
            #expect(observed.all == [5])
            observation.invalidate()
        }
    }
}
