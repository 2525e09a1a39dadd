import DefaultsTestSupport
import Foundation
import Testing

/// A program started with `-key value` arguments and prefixed environment variables reads them
/// through the standard suite, in every order of precedence, and its file is untouched.
@Suite struct LaunchOverrideProcessTests {
    /// Runs the helper's `read-standard` with `arguments` in a configuration directory whose
    /// standard file holds `seed`, and returns its lines and the file's bytes afterwards.
    private func readStandard(
        seed: String?,
        _ arguments: [String],
        environment: [String: String] = [:]
    ) async throws -> (lines: [String], file: String?) {
        try await withTemporaryDirectory(prefix: "LaunchOverrideProcessTests") { directory in
            let file = directory.appendingPathComponent("defaults-test-helper/settings.json")
            if let seed {
                try FileManager.default.createDirectory(
                    at: file.deletingLastPathComponent(),
                    withIntermediateDirectories: true
                )
                try Data(seed.utf8).write(to: file)
            }
            let result = try await HelperProcess.run(
                ["read-standard"] + arguments,
                environment: ["XDG_CONFIG_HOME": directory.path].merging(environment) { $1 }
            )
            #expect(result.status == 0, "\(result.errorOutput)")
            let after = try? String(contentsOf: file, encoding: .utf8)
            return (result.lines, after)
        }
    }

    @Test(arguments: [
        // (launch argument, environment, file) → what is read; nil: not given.
        (Optional("1"), Optional("2"), Optional("3"), "a=1"),
        ("1", nil, "3", "a=1"),
        ("1", "2", nil, "a=1"),
        (nil, "2", "3", "a=2"),
        (nil, "2", nil, "a=2"),
        (nil, nil, "3", "a=3"),
        (nil, nil, nil, "a=0"),
    ])
    func precedenceIsArgumentThenEnvironmentThenFileThenDefault(
        argument: String?,
        variable: String?,
        stored: String?,
        expected: String
    ) async throws {
        let seed = stored.map { #"{"a": \#($0)}"# }
        let (lines, file) = try await readStandard(
            seed: seed,
            ["a:int"] + (argument.map { ["-a", $0] } ?? []),
            environment: ["HELPER_ENV_PREFIX": "HELPER_"].merging(variable.map { ["HELPER_A": $0] } ?? [:]) { $1 }
        )
        #expect(lines == [expected])
        #expect(file == seed)  // Untouched, or still absent.
    }

    @Test func typedValuesFromTheCommandLineAsUserDefaultsTakesThem() async throws {
        let (lines, file) = try await readStandard(
            seed: #"{"theme": "light"}"#,
            [
                "fontSize:int", "theme:string", "verbose:bool", "ratio:double", "-fontSize", "14", "-theme", "dark",
                "-verbose", "true", "-ratio", "0.25",
            ]
        )
        #expect(lines == ["fontSize=14", "theme=dark", "verbose=true", "ratio=0.25"])
        #expect(file == #"{"theme": "light"}"#)
    }

    @Test func anInvalidOverrideIsReportedOnceAndTheFileIsRead() async throws {
        let (lines, _) = try await readStandard(seed: #"{"port": 80}"#, ["port:int", "port:int", "-port", "eighty"])
        #expect(
            lines == [
                "port=80", "port=80",
                "error Defaults: ignoring the launch argument -port for key \"port\": \"eighty\" is not a value of type Swift.Int",
            ]
        )
    }

    @Test func theSwitchTurnsLaunchArgumentsOffForTheStandardSuite() async throws {
        let (lines, _) = try await readStandard(
            seed: #"{"a": 3}"#,
            ["a:int", "-a", "1"],
            environment: ["HELPER_NO_ARGUMENTS": "1"]
        )
        #expect(lines == ["a=3"])
    }
}
