import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// Overrides for one run, from launch arguments and the environment, on real file suites.
/// (The standard suite's own launch arguments are tested with a child process, in
/// `DefaultsToolTests`.)
@Suite struct LaunchOverrideTests {
    private enum Theme: String, Defaults.Serializable { case light, dark }

    private struct Fixture {
        let file: URL
        let suite: Defaults.Suite
        let errors = StoreErrorCollector()

        init(in directory: URL, seed: String) throws {
            file = storeSettingsURL(in: directory)
            try storeWriteFile(file, Array(seed.utf8))
            suite = Defaults.Suite(fileURL: file, errorHandler: errors.handler)
        }

        func int(_ name: String, default value: Int = 0) -> Defaults.Key<Int> {
            Defaults.Key<Int>(name, default: value, suite: suite)
        }
    }

    @Test func launchArgumentsArePairsOfOneDashAndAValue() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, seed: "{}")
            let suite = fixture.suite
            suite.overrideWithLaunchArguments([
                "/usr/bin/program", "positional", "-fontSize", "14", "-theme", "dark", "--verbose", "-offset", "-5",
                "-name", "42", "-size", #"{"w": 3}"#, "-fontSize", "15", "--", "-after", "1",
            ])
            #expect(suite[fixture.int("fontSize")] == 15)  // The last one given wins.
            #expect(suite[Defaults.Key<Theme>("theme", default: .light, suite: suite)] == .dark)
            #expect(suite[fixture.int("offset")] == -5)
            #expect(suite[Defaults.Key<String>("name", default: "", suite: suite)] == "42")
            #expect(suite[Defaults.Key<[String: Int]>("size", default: [:], suite: suite)] == ["w": 3])
            #expect(suite[fixture.int("after", default: 7)] == 7)  // After `--`.
            #expect(suite[Defaults.Key<Bool>("-verbose", default: false, suite: suite)] == false)
            #expect(fixture.errors.errors.isEmpty)
        }
    }

    @Test func environmentVariablesAreThePrefixAndTheKeyInUpperSnakeCase() throws {
        #expect(Defaults.Suite.environmentVariableName(forKey: "fontSize", prefix: "MYAPP_") == "MYAPP_FONT_SIZE")
        #expect(Defaults.Suite.environmentVariableName(forKey: "apiURLPath", prefix: "A_") == "A_API_URL_PATH")
        #expect(Defaults.Suite.environmentVariableName(forKey: "http.port", prefix: "S_") == "S_HTTP_PORT")
        #expect(Defaults.Suite.environmentVariableName(forKey: "v2Mode", prefix: "") == "V2_MODE")
        #expect(Defaults.Suite.environmentVariableName(forKey: "café", prefix: "X_") == "X_CAF_")
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, seed: "{}")
            fixture.suite.overrideWithEnvironment(
                prefix: "MYAPP_",
                ["MYAPP_FONT_SIZE": "16", "MYAPP_HTTP_PORT": "8081", "OTHER_FONT_SIZE": "99"]
            )
            #expect(fixture.suite[fixture.int("fontSize")] == 16)
            // Two names mapping to one variable both read it.
            #expect(fixture.suite[fixture.int("font_size")] == 16)
            #expect(fixture.suite[fixture.int("http.port")] == 8081)
            #expect(fixture.suite[fixture.int("port", default: 1)] == 1)
        }
    }

    @Test func launchArgumentsBeatTheEnvironmentWhichBeatsTheFileWhichBeatsTheDefault() throws {
        try withStoreTemporaryDirectory { directory in
            let seed = #"{"a": 3, "b": 3, "c": 3}"#
            let fixture = try Fixture(in: directory, seed: seed)
            fixture.suite.overrideWithLaunchArguments(["program", "-a", "1"])
            fixture.suite.overrideWithEnvironment(prefix: "T_", ["T_A": "2", "T_B": "2"])
            #expect(fixture.suite[fixture.int("a")] == 1)
            #expect(fixture.suite[fixture.int("b")] == 2)
            #expect(fixture.suite[fixture.int("c")] == 3)
            #expect(fixture.suite[fixture.int("d", default: 4)] == 4)
            // Another suite on the same file shares the overrides.
            let other = Defaults.Suite(fileURL: fixture.file)
            #expect(other[Defaults.Key<Int>("a", default: 0, suite: other)] == 1)
            try fixture.suite.synchronize()
            #expect(try storeFileText(fixture.file) == seed)
        }
    }

    @Test func aWriteToAnOverriddenKeyIsStoredButReadsAndObserversKeepTheOverride() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, seed: #"{"a": 3, "b": 3}"#)
            let recorder = StoreChangeRecorder(fixture.suite)
            defer { recorder.stop() }
            fixture.suite.overrideWithLaunchArguments(["program", "-a", "1"])
            fixture.suite[fixture.int("a")] = 10
            #expect(fixture.suite[fixture.int("a")] == 1)
            fixture.suite[fixture.int("b")] = 20
            try fixture.suite.synchronize()
            #expect(try storeFileText(fixture.file) == "{\n  \"a\" : 10,\n  \"b\" : 20\n}\n")
            #expect(recorder.changedKeySets == [["b"]])
            // A change from outside to the overridden key is not reported either; "b"'s is.
            try storeWriteFile(fixture.file, Array(#"{"a": 11, "b": 21}"#.utf8))
            #expect(await recorder.waitForEvents(2))
            #expect(recorder.changedKeySets == [["b"], ["b"]])
            #expect(fixture.suite[fixture.int("a")] == 1)
        }
    }

    @Test func anOverrideThatDoesNotDecodeIsIgnoredForThatKeyAndReportedOnce() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, seed: #"{"a": 3, "b": 3}"#)
            fixture.suite.overrideWithLaunchArguments(["program", "-a", "big", "-b", "[1]"])
            fixture.suite.overrideWithEnvironment(prefix: "T_", ["T_A": "2"])
            #expect(fixture.suite[fixture.int("a")] == 2)  // The environment's, next in line.
            #expect(fixture.suite[fixture.int("a")] == 2)
            #expect(fixture.suite[fixture.int("b")] == 3)  // The file's.
            #expect(fixture.suite[fixture.int("b")] == 3)
            let reports = fixture.errors.errors.map(\.description)
            #expect(
                reports == [
                    "Defaults: ignoring the launch argument -a for key \"a\": \"big\" is not a value of type Swift.Int",
                    "Defaults: ignoring the launch argument -b for key \"b\": \"[1]\" is not a value of type Swift.Int",
                ]
            )
            // Once ignored, the key's changes are reported again.
            let recorder = StoreChangeRecorder(fixture.suite)
            defer { recorder.stop() }
            fixture.suite[fixture.int("b")] = 4
            #expect(recorder.changedKeySets == [["b"]])
        }
    }

    @Test func withNoOverridesGivenNothingIsOverridden() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory, seed: #"{"a": 3}"#)
            fixture.suite.overrideWithLaunchArguments(["program", "--flag", "value", "-"])
            fixture.suite.overrideWithEnvironment(prefix: "NOTHING_SET_", [:])
            let recorder = StoreChangeRecorder(fixture.suite)
            defer { recorder.stop() }
            fixture.suite[fixture.int("a")] = 5
            #expect(fixture.suite[fixture.int("a")] == 5)
            #expect(recorder.changedKeySets == [["a"]])
        }
    }
}
