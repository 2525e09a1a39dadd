// @testable: resolves XDG paths with an environment of its own
// (`configurationDirectory(environment:)`, `fileURL(forSuiteNamed:in:)`, `validate(name:)`).
@testable import Defaults
import Foundation
import Testing

/// Suite names, locations, in-memory suites and identity.
@Suite struct SuiteTests {
    /// A rejected name and a word its error description must contain.
    struct RejectedName: Sendable, CustomTestStringConvertible {
        var name: String
        var explanation: String

        var testDescription: String { name.debugDescription }
    }

    static let rejectedNames = [
        RejectedName(name: "", explanation: "empty"),
        RejectedName(name: "/", explanation: "\"/\""),
        RejectedName(name: "a/b", explanation: "\"/\""),
        RejectedName(name: "/absolute", explanation: "\"/\""),
        RejectedName(name: ".", explanation: "\".\""),
        RejectedName(name: "..", explanation: "\"..\""),
        RejectedName(name: "a\u{0}b", explanation: "control characters"),
        RejectedName(name: "tab\there", explanation: "control characters"),
        RejectedName(name: "line\nbreak", explanation: "control characters"),
        RejectedName(name: "delete\u{7F}", explanation: "control characters"),
    ]

    @Test(arguments: rejectedNames)
    func invalidNamesThrowAClearError(_ rejected: RejectedName) throws {
        let error = try #require(throws: Defaults.SuiteNameError.self) {
            _ = try Defaults.Suite(name: rejected.name)
        }
        #expect(error.name == rejected.name)
        #expect(!error.reason.isEmpty)
        #expect(error.description.contains(rejected.explanation), "\(error.description)")
        #expect(error.description.contains(error.reason))
        #expect(error.description.hasPrefix("Invalid suite name \""))
    }

    @Test(arguments: ["com.example.app", "with space", "\u{E9}moji\u{1F984}", "...", ".hidden", "a..b", "x"])
    func ordinaryNamesAreAccepted(_ name: String) throws {
        // NB: `Suite(name:)` would open a file in the real configuration directory, so the rule is
        // checked directly and the suite is made in a temporary directory at the path it would use.
        #expect(throws: Never.self) { try Defaults.Suite.validate(name: name) }
        try withStoreTemporaryDirectory { directory in
            let file = Defaults.Suite.fileURL(forSuiteNamed: name, in: directory)
            #expect(file.deletingLastPathComponent().lastPathComponent == name)
            let suite = Defaults.Suite(fileURL: file)
            let key = Defaults.Key<String>("greeting", default: "", suite: suite)
            Defaults[key] = "hello"
            try suite.synchronize()
            #expect(try storeFileObject(file)["greeting"] as? String == "hello")
            #expect(try storeDirectoryListing(directory) == [name])
        }
    }

    @Test func configurationDirectoryUsesAnAbsoluteXDGConfigHome() {
        let directory = Defaults.Suite.configurationDirectory(environment: [
            "XDG_CONFIG_HOME": "/srv/config",
            "HOME": "/home/someone",
        ])
        #expect(directory.path == "/srv/config")
    }

    @Test func configurationDirectoryFallsBackToHomeConfigWhenXDGConfigHomeIsUnset() {
        let directory = Defaults.Suite.configurationDirectory(environment: ["HOME": "/home/someone"])
        #expect(directory.path == "/home/someone/.config")
    }

    @Test(arguments: ["relative/config", "config", "", "~/config"])
    func configurationDirectoryIgnoresARelativeXDGConfigHome(_ configured: String) {
        let directory = Defaults.Suite.configurationDirectory(environment: [
            "XDG_CONFIG_HOME": configured,
            "HOME": "/home/someone",
        ])
        #expect(directory.path == "/home/someone/.config")
    }

    @Test func fileURLIsSettingsJSONInADirectoryNamedAfterTheSuite() {
        let configuration = URL(fileURLWithPath: "/srv/config", isDirectory: true)
        let file = Defaults.Suite.fileURL(forSuiteNamed: "com.example.app", in: configuration)
        #expect(file.path == "/srv/config/com.example.app/settings.json")
        #expect(file.isFileURL)
    }

    @Test func fileURLKeepsSpacesAndNonASCIINames() {
        let configuration = URL(fileURLWithPath: "/srv/config", isDirectory: true)
        #expect(
            Defaults.Suite.fileURL(forSuiteNamed: "with space", in: configuration).path
                == "/srv/config/with space/settings.json"
        )
        #expect(
            Defaults.Suite.fileURL(forSuiteNamed: "\u{E9}moji\u{1F984}", in: configuration).path
                == "/srv/config/\u{E9}moji\u{1F984}/settings.json"
        )
    }

    @Test func fileBackedSuiteReportsItsFile() throws {
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let suite = Defaults.Suite(fileURL: file)
            #expect(suite.fileURL?.path == file.path)
            #expect(suite.description.contains(file.path))
        }
    }

    @Test func inMemorySuiteStoresValuesAndSynchronizeIsANoOp() throws {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        Defaults[key] = 42
        try suite.synchronize()
        #expect(Defaults[key] == 42)
        #expect(suite.fileURL == nil)
        #expect(suite.fileReplacementCount == 0)
        suite.removeAll()
        try suite.synchronize()
        #expect(Defaults[key] == 0)
    }

    @Test func inMemorySuitesAreIndependent() {
        let first = Defaults.Suite.inMemory()
        let second = Defaults.Suite.inMemory()
        Defaults[Defaults.Key<Int>("n", default: 0, suite: first)] = 1
        #expect(Defaults[Defaults.Key<Int>("n", default: 0, suite: second)] == 0)
    }

    @Test func suitesAreEqualWhenTheyShareOneState() throws {
        let first = Defaults.Suite.inMemory()
        let second = Defaults.Suite.inMemory()
        #expect(first == first)
        #expect(first != second)
        #expect(Set([first, second, first]).count == 2)
        try withStoreTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let byFile = Defaults.Suite(fileURL: file)
            let sameFile = Defaults.Suite(fileURL: file)
            let otherFile = Defaults.Suite(fileURL: directory.appendingPathComponent("other.json"))
            #expect(byFile == sameFile, "two suites on one file share its state")
            #expect(byFile !== sameFile)
            #expect(byFile != otherFile)
            #expect(Set([byFile, sameFile, otherFile]).count == 2)
            #expect(
                Defaults.Key<Int>("n", default: 0, suite: byFile) == Defaults.Key<Int>("n", default: 0, suite: sameFile)
            )
        }
    }
}
