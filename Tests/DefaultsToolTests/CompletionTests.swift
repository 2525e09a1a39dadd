// The shell completions in completions/: the bash one is run as bash runs it on a Tab, against the
// built `defaults`; the zsh one is only parsed, and only when zsh is installed.
import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// The package's root folder, three levels above this file.
private let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()
    .deletingLastPathComponent()
    .deletingLastPathComponent()

/// Every command, as the completions offer them.
private let commandNames = [
    "suites", "path", "keys", "describe", "read", "write", "delete", "reset", "watch", "edit", "export", "import",
    "help",
]

/// What a program printed and how it ended.
private struct ProgramRun {
    var status: Int32
    var output: String
    var errorOutput: String
}

/// Runs `executable` with `arguments` and `environment` added to this process's, and waits for it.
private func runProgram(
    _ executable: String,
    _ arguments: [String],
    environment: [String: String] = [:]
) async throws -> ProgramRun {
    // NB: off the cooperative pool: a blocked pool thread (there are two) delays other tests' tasks.
    try await offThePool { Result { try runProgramBlocking(executable, arguments, environment: environment) } }.get()
}

private func runProgramBlocking(_ executable: String, _ arguments: [String], environment: [String: String]) throws
    -> ProgramRun
{
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let output = Pipe()
    let errorOutput = Pipe()
    process.standardOutput = output
    process.standardError = errorOutput
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // NB: read one after the other, which only works because what is printed here is far less than
    // a pipe holds; then the exit is awaited.
    let printed = output.fileHandleForReading.readDataToEndOfFile()
    let errors = errorOutput.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProgramRun(
        status: process.terminationStatus,
        output: String(decoding: printed, as: UTF8.self),
        errorOutput: String(decoding: errors, as: UTF8.self)
    )
}

/// Sources completions/defaults.bash, sets the completion variables from its arguments (the words
/// of the line, the last one being completed) and the line from $COMPLETION_LINE, calls the function that
/// `complete` registered for `defaults`, and prints COMPREPLY one a line.
private let completionScript = """
    export PATH="$DEFAULTS_BIN:$PATH"
    source "$COMPLETION_SCRIPT" || exit 90
    spec=$(complete -p defaults) || exit 91
    handler=${spec##*-F }
    handler=${handler%% *}
    COMP_WORDS=("$@")
    COMP_CWORD=$(($# - 1))
    COMP_LINE=$COMPLETION_LINE
    COMP_POINT=${#COMPLETION_LINE}
    "$handler" defaults "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    for word in "${COMPREPLY[@]}"; do printf '%s\\n' "$word"; done
    """

/// Completes lines with completions/defaults.bash against a config folder holding the suites `app`
/// ({"fontSize": 12, "theme": "dark"}) and `other` ({}).
private struct BashCompletion {
    /// The folder XDG_CONFIG_HOME names.
    let config: URL

    /// What a Tab at the end of `line` offers, one entry a completion.
    func complete(_ line: String) async throws -> [String] {
        var words = line.split(separator: " ").map(String.init)
        if line.hasSuffix(" ") { words.append("") }
        let environment = [
            "XDG_CONFIG_HOME": config.path,
            "DEFAULTS_BIN": HelperProcess.builtProduct("defaults").deletingLastPathComponent().path,
            "COMPLETION_SCRIPT": packageRoot.appendingPathComponent("completions/defaults.bash").path,
            "COMPLETION_LINE": line,
        ]
        let result = try await runProgram(
            "/bin/bash",
            ["-c", completionScript, "bash"] + words,
            environment: environment
        )
        #expect(result.status == 0, "\(line): exit status \(result.status)")
        #expect(result.errorOutput.isEmpty, "\(line): \(result.errorOutput)")
        return result.output.split(separator: "\n").map(String.init)
    }

    /// Runs `body` with a fresh config folder holding the two suites, removed afterwards.
    static func withSuites(_ body: (BashCompletion) async throws -> Void) async throws {
        try await withTemporaryDirectory(prefix: "CompletionTests") { config in
            for (suite, contents) in [("app", #"{"fontSize": 12, "theme": "dark"}"#), ("other", "{}")] {
                let folder = config.appendingPathComponent(suite, isDirectory: true)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                try Data(contents.utf8).write(to: folder.appendingPathComponent("settings.json"))
            }
            try await body(BashCompletion(config: config))
        }
    }
}

@Suite struct CompletionTests {
    @Test func bashCompletesCommandNames() async throws {
        try await BashCompletion.withSuites { bash async throws in
            #expect(try await Set(bash.complete("defaults ")) == Set(commandNames))
            #expect(try await bash.complete("defaults re") == ["read", "reset"])
            #expect(try await bash.complete("defaults des") == ["describe"])
            #expect(try await bash.complete("defaults help ").sorted() == commandNames.sorted())
            #expect(try await bash.complete("defaults help ex") == ["export"])
        }
    }

    @Test func bashCompletesSuitesAndKeys() async throws {
        try await BashCompletion.withSuites { bash async throws in
            #expect(try await bash.complete("defaults read ") == ["app", "other"])
            #expect(try await bash.complete("defaults read o") == ["other"])
            #expect(try await bash.complete("defaults read app ") == ["fontSize", "theme"])
            #expect(try await bash.complete("defaults write app t") == ["theme"])
            #expect(try await bash.complete("defaults delete app fontSize ") == ["fontSize", "theme"])
            #expect(try await bash.complete("defaults watch app ") == ["fontSize", "theme"])
            // A value comes after the key, not another key; nor after --string.
            #expect(try await bash.complete("defaults write app theme ").isEmpty)
            #expect(try await bash.complete("defaults write app theme --string ").isEmpty)
            #expect(try await bash.complete("defaults read missing ").isEmpty)
        }
    }

    @Test func bashCompletesOptions() async throws {
        try await BashCompletion.withSuites { bash async throws in
            #expect(try await bash.complete("defaults write app fontSize --").contains("--string"))
            #expect(try await bash.complete("defaults delete app --").contains("--all"))
            #expect(try await bash.complete("defaults watch app --").contains("--json"))
            #expect(try await bash.complete("defaults import app file.json --").contains("--replace"))
            #expect(try await bash.complete("defaults keys app --") == ["--help", "--described"])
            #expect(try await bash.complete("defaults write app fontSize 3 --").contains("--force"))
            // After --all there is no key to name.
            #expect(try await bash.complete("defaults delete app --all ").isEmpty)
        }
    }

    @Test func bashCompletesPathsAndFiles() async throws {
        try await BashCompletion.withSuites { bash async throws in
            let config = bash.config
            #expect(try await bash.complete("defaults read \(config.path)/ap") == ["\(config.path)/app"])
            #expect(
                try await bash.complete("defaults read \(config.path)/app/settings.json ") == ["fontSize", "theme"]
            )
            #expect(try await bash.complete("defaults export app \(config.path)/o") == ["\(config.path)/other"])
            #expect(
                try await bash.complete("defaults import app \(config.path)/app/s") == [
                    "\(config.path)/app/settings.json"
                ]
            )
        }
    }

    @Test func bashOffersTheKeysAPublishedSchemaDescribesWrittenOrNot() async throws {
        try await BashCompletion.withSuites { bash async throws in
            let suite = Defaults.Suite(fileURL: bash.config.appendingPathComponent("app/settings.json"))
            try suite.publishSchema(for: Defaults.Key<Int>("volume", default: 5, suite: suite, summary: "Loudness"))
            #expect(try await bash.complete("defaults read app ") == ["fontSize", "theme", "volume"])
            #expect(try await bash.complete("defaults describe app v") == ["volume"])
            #expect(try await bash.complete("defaults reset app fontSize ") == ["fontSize", "theme", "volume"])
            #expect(try await bash.complete("defaults read other ").isEmpty)
        }
    }

    @Test func zshCompletionParses() async throws {
        guard try await runProgram("/bin/bash", ["-c", "command -v zsh"]).status == 0 else { return }
        let script = packageRoot.appendingPathComponent("completions/_defaults").path
        let result = try await runProgram("/bin/bash", ["-c", "zsh -n \"$1\"", "bash", script])
        #expect(result.status == 0, "\(result.errorOutput)")
    }
}
