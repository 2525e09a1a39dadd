import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `defaults edit` (a copy in the person's editor, applied key by key) and several writers at once.
@Suite struct DefaultsEditCommandTests {
    // MARK: - Editing

    /// An `EDITOR` script: `body` runs with the copy's path in `$1`.
    ///
    /// Named as `/bin/sh <script>`, so the shell reads the script rather than executing it: a
    /// process another test forks meanwhile may inherit the descriptor the script was written
    /// through, and executing a file open for writing fails with "Text file busy".
    private func editorScript(_ body: String, in defaults: DefaultsCommand) throws -> String {
        let script = defaults.configHome.appendingPathComponent("editor-\(UUID()).sh")
        try Data("set -e\n\(body)\n".utf8).write(to: script)
        return "/bin/sh " + script.path
    }

    @Test func editAppliesOnlyTheKeysThePersonChanged() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"fontSize": 12, "theme": "light", "gone": true}"#)
            // The editor changes fontSize and removes "gone"; meanwhile another process changes theme.
            let editor = try editorScript(
                """
                defaults write app theme '"dark"'
                sed -i -e 's/"fontSize" : 12/"fontSize" : 18/' -e '/"gone"/d' "$1"
                """,
                in: defaults
            )
            let binaries = HelperProcess.builtProduct("defaults").deletingLastPathComponent().path
            let result = try await defaults.run(
                ["edit", "app"],
                environment: [
                    "EDITOR": editor, "VISUAL": "",
                    "PATH": binaries + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? ""),
                ]
            )
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(result.errorOutput == "defaults: applied 2 changes to app: fontSize, gone\n")
            #expect(
                try await defaults.run("read", "app").output == "{\n  \"fontSize\" : 18,\n  \"theme\" : \"dark\"\n}\n"
            )
        }
    }

    @Test func anEditThatBreaksTheCopyAppliesNothingWithoutATerminal() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"fontSize": 12}"#)
            let before = try defaults.bytes("app")
            let editor = try editorScript(#"printf '{"fontSize": 13,' > "$1""#, in: defaults)
            let result = try await defaults.run(["edit", "app"], environment: ["VISUAL": editor])
            #expect(result.status == 2)
            expectOneErrorLine(result, containing: "the edited copy is not valid JSON (line 1, column 17")
            #expect(try defaults.bytes("app") == before)
            let unchanged = try editorScript("true", in: defaults)
            let noChange = try await defaults.run(["edit", "app"], environment: ["VISUAL": unchanged])
            #expect(noChange.status == 0)
            #expect(noChange.errorOutput == "defaults: no changes\n")
            let failing = try editorScript("exit 4", in: defaults)
            let failed = try await defaults.run(["edit", "app"], environment: ["VISUAL": failing])
            #expect(failed.status == 3)
            expectOneErrorLine(failed, containing: "failed with status 4; nothing was applied")
            #expect(try defaults.bytes("app") == before)
        }
    }

    @Test func editingABrokenFileOpensItAsItIsAndKeepsTheBrokenOneAside() async throws {
        try await withCommand { defaults in
            let broken = "{\n  \"fontSize\" : 12,\n}\n"
            try defaults.seed("app", broken)
            let editor = try editorScript(#"printf '{"fontSize": 12, "theme": "dark"}' > "$1""#, in: defaults)
            let result = try await defaults.run(["edit", "app"], environment: ["VISUAL": editor])
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(result.errorOutput.hasPrefix("defaults: \(defaults.file("app").path) is not valid JSON (line 3"))
            #expect(result.errorOutput.hasSuffix("defaults: applied 2 changes to app: fontSize, theme\n"))
            #expect(
                try await defaults.run("read", "app").output == "{\n  \"fontSize\" : 12,\n  \"theme\" : \"dark\"\n}\n"
            )
            let folder = defaults.file("app").deletingLastPathComponent()
            let aside = try FileManager.default.contentsOfDirectory(atPath: folder.path)
                .filter { $0.contains(".corrupt-") }
            #expect(aside.count == 1)
            #expect(
                try aside.first.map { try Data(contentsOf: folder.appendingPathComponent($0)) } == Data(broken.utf8)
            )
        }
    }

    // MARK: - Several writers

    @Test func twoLoopsOfWritesAtOnceLoseNoKey() async throws {
        try await withCommand { defaults in
            let perLoop = 40
            // Each write that did not exit with 0: its status and what it said.
            async let first: [String] = {
                var failures: [String] = []
                for index in 0..<perLoop {
                    let result = try await defaults.run("write", "app", "a-\(index)", "\(index)")
                    if result.status != 0 { failures.append("a-\(index): \(result.status) \(result.errorOutput)") }
                }
                return failures
            }()
            async let second: [String] = {
                var failures: [String] = []
                for index in 0..<perLoop {
                    let result = try await defaults.run("write", "app", "b-\(index)", "\(index)")
                    if result.status != 0 { failures.append("b-\(index): \(result.status) \(result.errorOutput)") }
                }
                return failures
            }()
            let failures = try await first + second
            #expect(failures.isEmpty, "\(failures)")
            let keys = try await defaults.run("keys", "app").lines
            #expect(keys.count == 2 * perLoop)
        }
    }
}
