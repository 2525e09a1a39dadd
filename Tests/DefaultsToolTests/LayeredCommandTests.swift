import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `defaults` over a suite with system files beneath it ($XDG_CONFIG_DIRS): values read as
/// programs read them, where each comes from, locked keys refused, read-only files refused.
@Suite struct LayeredCommandTests {
    /// Runs `body` with `defaults` over a user file and one system file, `xdg/app/settings.json`.
    private func withLayers(
        user: String,
        system: String,
        _ body: (DefaultsCommand, URL, [String: String]) async throws -> Void
    ) async throws {
        try await withCommand { defaults in
            try defaults.seed("app", user)
            let xdg = defaults.configHome.appendingPathComponent("xdg")
            let systemFile = xdg.appendingPathComponent("app/settings.json")
            try FileManager.default.createDirectory(
                at: systemFile.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data(system.utf8).write(to: systemFile)
            try await body(defaults, systemFile, ["XDG_CONFIG_DIRS": xdg.path])
        }
    }

    /// A lock added or lifted at the value the key already reads is a change `watch` prints, and
    /// says what it is.
    @Test func watchSaysWhenALockIsAddedOrLiftedAtTheSameValue() async throws {
        try await withLayers(user: #"{"theme": "dark"}"#, system: #"{"fontSize": 12}"#) {
            defaults,
            system,
            environment in
            let watcher = try defaults.start(["watch", "app"], environment: environment)
            let json = try defaults.start(["watch", "app", "--json"], environment: environment)
            defer {
                watcher.send(SIGTERM)
                json.send(SIGTERM)
            }
            _ = await watcher.nextErrorLine()
            _ = await json.nextErrorLine()
            let locked = system.deletingLastPathComponent().appendingPathComponent("next.json")
            try Data(#"{"": {"locked": ["fontSize"]}, "fontSize": 12}"#.utf8).write(to: locked)
            #expect(rename(locked.path, system.path) == 0)
            #expect(await watcher.nextLine() == "fontSize: 12 -> 12 (lock added or lifted)")
            #expect(await json.nextLine() == #"{"key":"fontSize","lockChanged":true,"new":12,"old":12}"#)
            try Data(#"{"fontSize": 12}"#.utf8).write(to: locked)
            #expect(rename(locked.path, system.path) == 0)
            #expect(await watcher.nextLine() == "fontSize: 12 -> 12 (lock added or lifted)")
        }
    }

    /// A lock added or lifted together with a change of the value is marked too (found by a
    /// black-box probe: only an unchanged value was marked).
    @Test func watchSaysWhenALockIsAddedOrLiftedWithANewValue() async throws {
        try await withLayers(user: #"{"fontSize": 12}"#, system: #"{"fontSize": 12}"#) {
            defaults,
            system,
            environment in
            let watcher = try defaults.start(["watch", "app"], environment: environment)
            let json = try defaults.start(["watch", "app", "--json"], environment: environment)
            defer {
                watcher.send(SIGTERM)
                json.send(SIGTERM)
            }
            _ = await watcher.nextErrorLine()
            _ = await json.nextErrorLine()
            let next = system.deletingLastPathComponent().appendingPathComponent("next.json")
            try Data(#"{"": {"locked": ["fontSize"]}, "fontSize": 14}"#.utf8).write(to: next)
            #expect(rename(next.path, system.path) == 0)
            #expect(await watcher.nextLine() == "fontSize: 12 -> 14 (lock added or lifted)")
            #expect(await json.nextLine() == #"{"key":"fontSize","lockChanged":true,"new":14,"old":12}"#)
            // The lock lifted: the user's value again.
            try Data(#"{"fontSize": 14}"#.utf8).write(to: next)
            #expect(rename(next.path, system.path) == 0)
            #expect(await watcher.nextLine() == "fontSize: 14 -> 12 (lock added or lifted)")
            #expect(await json.nextLine() == #"{"key":"fontSize","lockChanged":true,"new":12,"old":14}"#)
        }
    }

    @Test func readShowsWhatProgramsReadAndWhereItComesFrom() async throws {
        try await withLayers(
            user: #"{"theme": "dark", "fontSize": 20}"#,
            system: #"{"": {"locked": ["fontSize"]}, "fontSize": 12, "tabs": 4}"#
        ) { defaults, system, environment in
            let user = defaults.file("app").path
            let file = try await defaults.run("read", "app", environment: environment)
            #expect(file.output == "{\n  \"fontSize\" : 20,\n  \"theme\" : \"dark\"\n}\n", "the user's file, as it is")
            let merged = try await defaults.run("read", "app", "--merged", environment: environment)
            #expect(merged.output == "{\n  \"fontSize\" : 12,\n  \"tabs\" : 4,\n  \"theme\" : \"dark\"\n}\n")
            let origins = try await defaults.run("read", "app", "--origin", environment: environment)
            #expect(
                origins.lines == [
                    "fontSize: 12  # from a lock in \(system.path), with the value of \(system.path)",
                    "tabs: 4  # from the system file \(system.path)", "theme: \"dark\"  # from the user's file \(user)",
                ]
            )
            for (key, value, source) in [
                ("fontSize", "12", "a lock in \(system.path), with the value of \(system.path)"),
                ("tabs", "4", "the system file \(system.path)"), ("theme", "\"dark\"", "the user's file \(user)"),
            ] {
                let read = try await defaults.run("read", "app", key, "--origin", environment: environment)
                #expect(read.status == 0, "\(read.errorOutput)")
                #expect(read.lines == [value, "from: \(source)"])
                #expect(try await defaults.run("read", "app", key, environment: environment).lines == [value])
            }
            let missing = try await defaults.run("read", "app", "width", "--origin", environment: environment)
            #expect(missing.status == 1)
            expectOneErrorLine(missing, containing: "no key \"width\" in suite app")
        }
    }

    @Test func aLockedKeyIsNotWrittenOrDeletedAndNothingElseIsEither() async throws {
        try await withLayers(
            user: #"{"theme": "dark", "fontSize": 20}"#,
            system: #"{"": {"locked": ["fontSize"]}, "fontSize": 12}"#
        ) { defaults, system, environment in
            let before = try defaults.bytes("app")
            let written = try await defaults.run("write", "app", "fontSize", "14", environment: environment)
            #expect(written.status == 4)
            expectOneErrorLine(written, containing: "\"fontSize\" is locked by \(system.path); nothing was written")
            let deleted = try await defaults.run("delete", "app", "theme", "fontSize", environment: environment)
            #expect(deleted.status == 4)
            expectOneErrorLine(deleted, containing: "\"fontSize\" is locked by \(system.path)")
            let importFile = defaults.configHome.appendingPathComponent("import.json")
            try Data(#"{"theme": "light", "fontSize": 9}"#.utf8).write(to: importFile)
            let imported = try await defaults.run("import", "app", importFile.path, environment: environment)
            #expect(imported.status == 4)
            expectOneErrorLine(imported, containing: "\"fontSize\" is locked by \(system.path); nothing was written")
            #expect(try defaults.bytes("app") == before)

            // Everything but the locked key goes; the user's value of it stays for when the lock is lifted.
            let all = try await defaults.run("delete", "app", "--all", environment: environment)
            #expect(all.status == 4)
            expectOneErrorLine(all, containing: "kept \"fontSize\": it is locked by \(system.path)")
            let left = try await defaults.run("read", "app", environment: environment)
            #expect(left.output == "{\n  \"fontSize\" : 20\n}\n")
            #expect(try await defaults.run("write", "app", "theme", #""light""#, environment: environment).status == 0)
        }
    }

    @Test func aFileTheUserMayNotWriteIsRefusedWithOneLine() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"theme": "dark"}"#)
            chmod(defaults.file("app").deletingLastPathComponent().path, 0o755)
            chmod(defaults.file("app").path, 0o644)
            let before = try defaults.bytes("app")
            let result = try await HelperProcess.runAsNobody(
                ["write", defaults.file("app").path, "theme", #""light""#],
                copyingInto: defaults.configHome,
                program: "defaults"
            )
            #expect(result.status == 3)
            #expect(
                result.errorOutput
                    == "defaults: not writing \(defaults.file("app").path): the file may not be written by this user; nothing was changed\n"
            )
            #expect(try defaults.bytes("app") == before)
            #expect(
                try FileManager.default.contentsOfDirectory(
                    atPath: defaults.file("app").deletingLastPathComponent().path
                )
                    == ["settings.json"]
            )
        }
    }
}
