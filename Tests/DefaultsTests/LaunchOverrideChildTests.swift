import Defaults
import DefaultsLaunchOverrideSamples
import DefaultsTestSupport
import Foundation
import Testing

/// `Defaults.LaunchOverrides` built from typed values starts a real child process with exactly
/// those values, through launch arguments or environment variables, for every kind of value.
@Suite struct LaunchOverrideChildTests {
    @Test(arguments: ["arguments", "environment"])
    func everyValueReachesTheChildBitForBit(channel: String) async throws {
        try await withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            // NB: the child's file holds values the overrides must win over, and one `nil` removes.
            let seed = #"{"int.max" : 1, "optional.nil" : "\#(LaunchOverrideSamples.storedForOptionalNil)"}"#
            try storeWriteFile(file, Array(seed.utf8))
            var overrides = Defaults.LaunchOverrides()
            for sample in LaunchOverrideSamples.all { sample.put(&overrides) }
            #expect(overrides.values.count == LaunchOverrideSamples.all.count)

            let result =
                channel == "arguments"
                ? try await HelperProcess.run(["read-overrides", file.path, channel] + overrides.launchArguments)
                : try await HelperProcess.run(
                    ["read-overrides", file.path, channel],
                    environment: overrides.environment(prefix: "OVERRIDE_")
                )
            #expect(result.status == 0, "\(result.errorOutput)")
            let read = Dictionary(
                result.lines.compactMap { line -> (String, String)? in
                    guard let equals = line.firstIndex(of: "=") else { return nil }
                    return (String(line[..<equals]), String(line[line.index(after: equals)...]))
                },
                uniquingKeysWith: { $1 }
            )
            for sample in LaunchOverrideSamples.all {
                #expect(read[sample.name] == sample.expected, "\(sample.name) through \(channel)")
            }
            #expect(!result.lines.contains { $0.hasPrefix("error") }, "\(result.lines)")
            #expect(try String(contentsOf: file, encoding: .utf8) == seed, "overrides write nothing")
        }
    }

    @Test func argumentsArePairsOfANameAndJSONTextInNameOrder() {
        let theme = Defaults.Key<String>("theme", default: "light")
        let fontSize = Defaults.Key<Int>("fontSize", default: 12)
        let name = Defaults.Key<String?>("displayName")
        var overrides = Defaults.LaunchOverrides()
        overrides.set(theme, to: "dark")
        overrides.set(fontSize, to: -18)
        overrides.set(name, to: nil)
        #expect(overrides.launchArguments == ["-displayName", "null", "-fontSize", "-18", "-theme", #""dark""#])
        #expect(
            overrides.environment(prefix: "APP_") == [
                "APP_DISPLAY_NAME": "null", "APP_FONT_SIZE": "-18", "APP_THEME": #""dark""#,
            ]
        )
        overrides.remove(fontSize)
        #expect(overrides.launchArguments == ["-displayName", "null", "-theme", #""dark""#])

        // A name starting with "-" would be the program's own "--" option: environment only.
        overrides.set(Defaults.Key<Int>("-odd", default: 0), to: 1)
        #expect(overrides.launchArguments == ["-displayName", "null", "-theme", #""dark""#])
        #expect(overrides.environment(prefix: "APP_")["APP__ODD"] == "1")
    }

    /// The property-wrapper form, for a test's configuration as a struct.
    private struct EditorLaunch: Defaults.LaunchOverrideSet {
        @Defaults.LaunchOverride(Defaults.Key<Int>("fontSize", default: 12)) var fontSize = 18
        @Defaults.LaunchOverride(Defaults.Key<Double>("zoom", default: 1)) var zoom = Double.infinity
        @Defaults.LaunchOverride(Defaults.Key<[String]>("recent", default: [])) var recent = ["a.txt"]
        var notAnOverride = 3
    }

    @Test func aLaunchOverrideSetGivesItsPropertiesSettings() {
        var launch = EditorLaunch()
        launch.fontSize = 20
        var expected = Defaults.LaunchOverrides()
        expected.set(Defaults.Key<Int>("fontSize", default: 0), to: 20)
        expected.set(Defaults.Key<Double>("zoom", default: 0), to: .infinity)
        expected.set(Defaults.Key<[String]>("recent", default: []), to: ["a.txt"])
        #expect(launch.launchOverrides == expected)
        #expect(
            launch.launchOverrides.launchArguments == [
                "-fontSize", "20", "-recent", #"["a.txt"]"#, "-zoom", #""Infinity""#,
            ]
        )
    }
}
