import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The built `defaults` command, run as a person or a script runs it, in a temporary
/// `XDG_CONFIG_HOME`.
struct DefaultsCommand {
    let configHome: URL

    /// Runs `defaults` with `arguments` and waits for it.
    func run(_ arguments: String..., environment: [String: String] = [:]) async throws -> HelperProcessResult {
        try await run(arguments, environment: environment)
    }

    func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> HelperProcessResult {
        let process = try start(arguments, environment: environment)
        return await process.waitForExit()
    }

    /// Starts `defaults` with `arguments`, for commands that keep running (`watch`).
    func start(_ arguments: [String], environment: [String: String] = [:]) throws -> RunningHelper {
        try RunningHelper(
            arguments,
            environment: ["XDG_CONFIG_HOME": configHome.path].merging(environment) { $1 },
            program: "defaults"
        )
    }

    /// The settings file of the suite `name`.
    func file(_ name: String) -> URL {
        configHome.appendingPathComponent(name).appendingPathComponent("settings.json")
    }

    /// Creates the suite `name` with exactly `text` as its file.
    func seed(_ name: String, _ text: String) throws {
        try FileManager.default.createDirectory(
            at: file(name).deletingLastPathComponent(),
            withIntermediateDirectories: true
        )
        try Data(text.utf8).write(to: file(name))
    }

    /// The bytes of the suite's file.
    func bytes(_ name: String) throws -> Data {
        try Data(contentsOf: file(name))
    }
}

/// Runs `body` with a `DefaultsCommand` over a fresh configuration directory.
func withCommand(_ body: (DefaultsCommand) async throws -> Void) async throws {
    try await withTemporaryDirectory(prefix: "DefaultsCommandTests") { directory in
        try await body(DefaultsCommand(configHome: directory))
    }
}

/// Checks that a failed run printed one line on standard error, and no crash report.
func expectOneErrorLine(
    _ result: HelperProcessResult,
    containing text: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let lines = result.errorOutput.split(separator: "\n")
    #expect(lines.count == 1, "\(result.errorOutput)", sourceLocation: sourceLocation)
    #expect(result.errorOutput.hasPrefix("defaults: "), "\(result.errorOutput)", sourceLocation: sourceLocation)
    #expect(result.errorOutput.contains(text), "\(result.errorOutput)", sourceLocation: sourceLocation)
    #expect(!result.errorOutput.contains("Fatal error"), sourceLocation: sourceLocation)
}

@Suite struct DefaultsCommandTests {
    // MARK: - Help

    static let commandNames = [
        "suites", "path", "keys", "describe", "read", "write", "delete", "reset", "watch", "edit", "export", "import",
        "help",
    ]

    @Test func helpListsEveryCommandAndEachCommandHasItsOwn() async throws {
        try await withCommand { defaults in
            let overview = try await defaults.run("help")
            #expect(overview.status == 0)
            for name in Self.commandNames {
                #expect(overview.output.contains("\n  \(name)"), "\(name) missing from help")
            }
            #expect(overview.output.contains("Exit status: 0 done; 1 suite or key not found; 2 usage"))
            for name in Self.commandNames {
                let viaHelp = try await defaults.run("help", name)
                let viaOption = try await defaults.run(name, "--help")
                #expect(viaHelp.status == 0 && viaOption.status == 0, "\(name)")
                #expect(viaHelp.output.hasPrefix("usage: defaults \(name)"), "\(viaHelp.output)")
                #expect(viaOption.output == viaHelp.output, "\(name)")
            }
        }
    }

    @Test func noArgumentsOrAnUnknownCommandIsAUsageError() async throws {
        try await withCommand { defaults in
            let none = try await defaults.run([])
            #expect(none.status == 2)
            #expect(none.errorOutput.contains("usage: defaults <command>"))
            let unknown = try await defaults.run("frobnicate")
            #expect(unknown.status == 2)
            expectOneErrorLine(unknown, containing: "unknown command \"frobnicate\"")
            let helpUnknown = try await defaults.run("help", "frobnicate")
            #expect(helpUnknown.status == 2)
        }
    }

    // MARK: - Writing and reading

    @Test func writeThenReadShowsExactlyWhatIsStored() async throws {
        try await withCommand { defaults in
            for (key, json) in [
                ("fontSize", "14"), ("ratio", "2.50"), ("huge", "12345678901234567890"), ("on", "true"),
                ("name", #""Ada""#), ("list", "[1, 2]"), ("size", #"{"w": 1, "h": 2}"#), ("nothing", "null"),
            ] {
                let written = try await defaults.run("write", "app", key, json)
                #expect(written.status == 0, "\(key): \(written.errorOutput)")
            }
            #expect(try await defaults.run("write", "app", "theme", "--string", "dark blue").status == 0)
            #expect(try await defaults.run("read", "app", "ratio").output == "2.50\n")
            #expect(try await defaults.run("read", "app", "huge").output == "12345678901234567890\n")
            #expect(try await defaults.run("read", "app", "theme").output == "\"dark blue\"\n")
            #expect(try await defaults.run("read", "app", "nothing").output == "null\n")
            #expect(try await defaults.run("read", "app", "size").output == "{\n  \"h\" : 2,\n  \"w\" : 1\n}\n")
            let whole = try await defaults.run("read", "app")
            #expect(whole.status == 0)
            // The whole file, as the library wrote it.
            #expect(whole.output == String(decoding: try defaults.bytes("app"), as: UTF8.self))
        }
    }

    @Test func suitesKeysAndPath() async throws {
        try await withCommand { defaults in
            try defaults.seed("zeta", #"{"b": 1, "a": 2}"#)
            try defaults.seed("alpha", "{}")
            try FileManager.default.createDirectory(
                at: defaults.configHome.appendingPathComponent("not-a-suite"),
                withIntermediateDirectories: true
            )
            #expect(try await defaults.run("suites").output == "alpha\nzeta\n")
            #expect(try await defaults.run("keys", "zeta").output == "a\nb\n")
            #expect(try await defaults.run("path", "zeta").output == defaults.file("zeta").path + "\n")
            // A path names the file itself.
            let byPath = try await defaults.run("read", defaults.file("zeta").path, "a")
            #expect(byPath.output == "2\n")
        }
    }

    // MARK: - Errors

    @Test func badJSONIsAUsageErrorAndLeavesTheFileByteForByte() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", "{\n  \"kept\" :   1\n}\n")
            let before = try defaults.bytes("app")
            for bad in ["dark", "{\"a\": }", "[1, 2", "01", ""] {
                let result = try await defaults.run("write", "app", "theme", bad)
                #expect(result.status == 2, "\(bad)")
                expectOneErrorLine(result, containing: "is not JSON")
            }
            #expect(try defaults.bytes("app") == before)
        }
    }

    @Test func everyErrorHasItsExitStatusAndOneLine() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"a": 1}"#)
            // A system file copied as it is: its lock list under the reserved "" member.
            let copied = FileManager.default.temporaryDirectory.appendingPathComponent(
                "copied-\(UUID().uuidString).json"
            )
            try Data(#"{"": ["a"], "b": 2}"#.utf8).write(to: copied)
            defer { try? FileManager.default.removeItem(at: copied) }
            let cases: [(arguments: [String], status: Int32, message: String)] = [
                (["read", "missing"], 1, "suite missing has no settings file"),
                (["read", "app", "nope"], 1, "no key \"nope\" in suite app"),
                (["keys", "missing"], 1, "has no settings file"),
                (["export", "missing"], 1, "has no settings file"),
                (["delete", "missing", "a"], 1, "has no settings file"),
                (["delete", "app", "a", "nope"], 1, "no key \"nope\""),
                (["read"], 2, "<suite> is missing"),
                (["read", "app", "a", "extra"], 2, "unexpected argument \"extra\""),
                (["write", "app", "k"], 2, "<json> is missing"),
                (["write", "app", "k", "--string"], 2, "--string needs a <text>"),
                (["write", "app", "k", "1", "--bogus"], 2, "unknown option --bogus"),
                (["write", "bad\u{1}name", "k", "1"], 2, "Invalid suite name"),
                (["write", "..", "k", "1"], 2, "Invalid suite name"),
                (["write", "app", "", "1"], 2, "a key name cannot be empty"),
                (["import", "app", "/nonexistent/file.json"], 3, "cannot read /nonexistent/file.json"),
                (["import", "app", copied.path], 2, "\"\" is the file's reserved member, not a key"),
            ]
            for (arguments, status, message) in cases {
                let result = try await defaults.run(arguments)
                #expect(result.status == status, "\(arguments): \(result.errorOutput)")
                expectOneErrorLine(result, containing: message)
            }
            // Nothing above changed the file.
            #expect(try defaults.bytes("app") == Data(#"{"a": 1}"#.utf8))
        }
    }

    @Test func aCorruptFileIsRefusedUntouchedByEveryCommand() async throws {
        try await withCommand { defaults in
            let broken = "{\n  \"a\" : 1,\n  \"b\" : \n}\n"
            try defaults.seed("app", broken)
            for arguments in [
                ["read", "app"], ["keys", "app"], ["write", "app", "c", "3"], ["delete", "app", "a"],
                ["delete", "app", "--all"], ["export", "app"], ["watch", "app"],
            ] {
                let result = try await defaults.run(arguments)
                #expect(result.status == 3, "\(arguments)")
                expectOneErrorLine(result, containing: "is not valid JSON (line 4, column 1")
            }
            #expect(try defaults.bytes("app") == Data(broken.utf8))
            let entries = try FileManager.default.contentsOfDirectory(
                atPath: defaults.file("app").deletingLastPathComponent().path
            )
            #expect(!entries.contains { $0.contains("corrupt") }, "\(entries)")
        }
    }

    @Test func aFileThatCannotBeReadExitsWithThree() async throws {
        try await withCommand { defaults in
            // NB: a directory where the file should be: unreadable even for root, who ignores modes.
            try FileManager.default.createDirectory(at: defaults.file("app"), withIntermediateDirectories: true)
            let read = try await defaults.run("read", "app")
            #expect(read.status == 3)
            expectOneErrorLine(read, containing: "cannot read \(defaults.file("app").path)")
            let write = try await defaults.run("write", "app", "k", "1")
            #expect(write.status == 3)
        }
    }

    // MARK: - Deleting, exporting, importing

    @Test func deleteRemovesKeysOrEverything() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"a": 1, "b": 2, "c": 3}"#)
            #expect(try await defaults.run("delete", "app", "a", "b").status == 0)
            #expect(try await defaults.run("keys", "app").output == "c\n")
            #expect(try await defaults.run("delete", "app", "--all").status == 0)
            #expect(try await defaults.run("read", "app").output == "{}\n")
            // A key that looks like an option, after `--`.
            #expect(try await defaults.run("write", "app", "--", "--all", "1").status == 0)
            #expect(try await defaults.run("delete", "app", "--", "--all").status == 0)
            #expect(try await defaults.run("keys", "app").output == "")
        }
    }

    @Test func deleteAllRemovesKeysAnotherProcessWroteJustBefore() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"a": 1}"#)
            let written = try await HelperProcess.run(["write", defaults.file("app").path, "b", "2"])
            #expect(written.status == 0, "\(written.errorOutput)")
            #expect(try await defaults.run("delete", "app", "--all").status == 0)
            #expect(try await defaults.run("read", "app").output == "{}\n")
        }
    }

    @Test func exportDeleteAllImportRoundTrips() async throws {
        try await withCommand { defaults in
            let text = #"{"big": 12345678901234567890, "nested": {"list": [1, "two", null]}, "x": 0.10}"#
            try defaults.seed("app", text)
            let exported = defaults.configHome.appendingPathComponent("exported.json")
            #expect(try await defaults.run("export", "app", exported.path).status == 0)
            let toStandardOutput = try await defaults.run("export", "app")
            #expect(toStandardOutput.output == String(decoding: try Data(contentsOf: exported), as: UTF8.self))
            // `-` is standard output, as import's `-` is standard input: no file named "-" is made
            // where the command runs.
            let dash = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("-")
            #expect(!FileManager.default.fileExists(atPath: dash.path))
            let toDash = try await defaults.run("export", "app", "-")
            #expect(toDash.status == 0)
            #expect(toDash.output == toStandardOutput.output)
            #expect(!FileManager.default.fileExists(atPath: dash.path))
            let original = try await defaults.run("read", "app")
            #expect(try await defaults.run("delete", "app", "--all").status == 0)
            #expect(try await defaults.run("import", "app", exported.path).status == 0)
            #expect(try await defaults.run("read", "app").output == original.output)
        }
    }

    @Test func importMergesOrReplacesAndAnInvalidFileChangesNothing() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"a": 1, "b": 2}"#)
            let incoming = defaults.configHome.appendingPathComponent("incoming.json")
            try Data(#"{"b": 20, "c": 30}"#.utf8).write(to: incoming)
            #expect(try await defaults.run("import", "app", incoming.path).status == 0)
            #expect(try await defaults.run("read", "app").output == "{\n  \"a\" : 1,\n  \"b\" : 20,\n  \"c\" : 30\n}\n")
            #expect(try await defaults.run("import", "app", incoming.path, "--replace").status == 0)
            #expect(try await defaults.run("keys", "app").output == "b\nc\n")
            let before = try defaults.bytes("app")
            for bad in [#"{"d": 1,}"#, "[1, 2]", ""] {
                try Data(bad.utf8).write(to: incoming)
                let result = try await defaults.run("import", "app", incoming.path, "--replace")
                #expect(result.status == 2, "\(bad)")
                expectOneErrorLine(result, containing: "nothing was imported")
            }
            #expect(try defaults.bytes("app") == before)
        }
    }

    // MARK: - Watching

    @Test func watchPrintsWritesFromOtherProcessesAndHandEdits() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"fontSize": 12}"#)
            let watcher = try defaults.start(["watch", "app"])
            defer { watcher.send(SIGTERM) }
            #expect(await watcher.nextErrorLine()?.hasPrefix("defaults: watching ") == true)
            #expect(try await defaults.run("write", "app", "fontSize", "14").status == 0)
            #expect(await watcher.nextLine() == "fontSize: 12 -> 14")
            // A hand edit: the file rewritten in place, as `echo >` does.
            let handle = try FileHandle(forWritingTo: defaults.file("app"))
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: Data(#"{"fontSize": 14, "theme": "dark"}"#.utf8))
            try handle.close()
            #expect(await watcher.nextLine() == "theme: (unset) -> \"dark\"")
            #expect(try await defaults.run("delete", "app", "fontSize").status == 0)
            #expect(await watcher.nextLine() == "fontSize: 14 -> (unset)")
        }
    }

    /// A name that would break the line or drive the terminal (a line break, an escape sequence,
    /// the line's own separators) is shown as a JSON string: one change is one line (found by a
    /// black-box probe).
    @Test func watchShowsANameThatWouldBreakItsLineQuoted() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"plain.name": 1}"#)
            let watcher = try defaults.start(["watch", "app"])
            defer { watcher.send(SIGTERM) }
            _ = await watcher.nextErrorLine()
            let names = ["x\ny", "\u{1B}[2JRED", "k: v -> w", "tab\there", "plain.name"]
            for (index, name) in names.enumerated() {
                #expect(try await defaults.run("write", "app", name, "\(index + 2)").status == 0)
            }
            #expect(await watcher.nextLine() == #""x\ny": (unset) -> 2"#)
            #expect(await watcher.nextLine() == #""\u001b[2JRED": (unset) -> 3"#)
            #expect(await watcher.nextLine() == #""k: v -> w": (unset) -> 4"#)
            #expect(await watcher.nextLine() == #""tab\there": (unset) -> 5"#)
            #expect(await watcher.nextLine() == "plain.name: 1 -> 6")
        }
    }

    /// A write that waits for a process stopped while it holds the lock says so, once, and goes
    /// on waiting; it writes once the lock is free (found by a black-box probe: it waited in
    /// silence).
    @Test func aWriteWaitingForAStoppedLockHolderSaysSo() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"a": 1}"#)
            let holder = try RunningHelper(["hold-lock", defaults.file("app").path])
            defer {
                holder.send(SIGCONT)
                holder.send(SIGKILL)
            }
            #expect(await holder.nextLine() == "locked")
            holder.send(SIGSTOP)
            let writer = try defaults.start(["write", "app", "a", "3"])
            let line = await writer.nextErrorLine()
            #expect(
                line?.hasPrefix("defaults: waiting for another process to release the lock on ") == true,
                "\(line ?? "none")"
            )
            holder.send(SIGCONT)
            holder.send(SIGKILL)
            let result = await writer.waitForExit()
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(try String(contentsOf: defaults.file("app"), encoding: .utf8).contains(#""a" : 3"#))
        }
    }

    /// A problem the library reports while `watch` runs is a line of the command's own,
    /// beginning with `defaults:` (found by a black-box probe: it began with `Defaults:`).
    @Test func watchReportsAProblemAsTheCommandsOwnLine() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"a": 1}"#)
            let watcher = try defaults.start(["watch", "app"])
            defer { watcher.send(SIGTERM) }
            _ = await watcher.nextErrorLine()
            // A FIFO put where the file was, while it runs: reported, and left as it is.
            let fifo = defaults.file("app").deletingLastPathComponent().appendingPathComponent("fifo")
            #expect(mkfifo(fifo.path, 0o644) == 0)
            #expect(rename(fifo.path, defaults.file("app").path) == 0)
            let line = await watcher.nextErrorLine()
            #expect(line?.hasPrefix("defaults: cannot read ") == true, "\(line ?? "none")")
        }
    }

    @Test func watchWithKeysAndJSONPrintsOnlyThoseKeysAsObjects() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"a": 1}"#)
            let watcher = try defaults.start(["watch", "app", "a", "--json"])
            defer { watcher.send(SIGTERM) }
            _ = await watcher.nextErrorLine()
            #expect(try await defaults.run("write", "app", "b", "2").status == 0)
            #expect(try await defaults.run("write", "app", "a", #"{"x": [1]}"#).status == 0)
            // Had `b` been printed, it would have come first.
            #expect(await watcher.nextLine() == #"{"key":"a","new":{"x":[1]},"old":1}"#)
            #expect(try await defaults.run("delete", "app", "a").status == 0)
            #expect(await watcher.nextLine() == #"{"key":"a","old":{"x":[1]}}"#)
        }
    }
}
