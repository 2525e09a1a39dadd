import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `defaults` over a suite whose program declared a secret key: its value is never shown, and
/// never written, whatever the file holds.
@Suite struct SecretCommandTests {
    /// Publishes the schema of the suite `name`'s keys, a secret among them, as its program would.
    static func publish(_ name: String, in defaults: DefaultsCommand) throws {
        let suite = Defaults.Suite(fileURL: defaults.file(name))
        try suite.publishSchema(
            for: Defaults.Key<String>(
                secret: "password",
                default: "dev",
                suite: suite,
                summary: "The database password"
            ),
            Defaults.Key<String>("greeting", default: "Hello", suite: suite)
        )
    }

    @Test func readExportAndDescribeShowASecretAsAPlaceholder() async throws {
        try await withCommand { defaults in
            // A value stored before the key was secret, which the program never reads now.
            try defaults.seed("app", #"{"greeting": "Hi", "password": "hunter2"}"#)
            try Self.publish("app", in: defaults)
            let all = try await defaults.run("read", "app")
            #expect(all.status == 0, "\(all.errorOutput)")
            #expect(all.output.contains(#""password" : "<secret>""#) || all.output.contains(#""password": "<secret>""#))
            let one = try await defaults.run("read", "app", "password")
            #expect(one.output == "\"<secret>\"\n")
            let merged = try await defaults.run("read", "app", "--merged")
            let exported = try await defaults.run("export", "app")
            let described = try await defaults.run("describe", "app", "password")
            #expect(
                described.output == """
                    password: The database password
                      type:    String
                      secret:  read by the program from a file, never stored
                      value:   "<secret>"

                    """
            )
            for result in [all, one, merged, exported, described] {
                #expect(result.status == 0, "\(result.errorOutput)")
                #expect(!result.output.contains("hunter2"))
                #expect(!result.errorOutput.contains("hunter2"))
            }
            #expect(exported.output.contains("\"Hi\""))
        }
    }

    @Test func aWriteOrImportOfASecretIsRefusedAndTheFileIsUnchanged() async throws {
        try await withCommand { defaults in
            let original = #"{"greeting": "Hi"}"#
            try defaults.seed("app", original)
            try Self.publish("app", in: defaults)
            let write = try await defaults.run("write", "app", "password", #""typed""#)
            #expect(write.status == 2)
            #expect(write.errorOutput.contains("\"password\" is a secret"), "\(write.errorOutput)")
            let forced = try await defaults.run("write", "app", "password", "--string", "typed", "--force")
            #expect(forced.status == 2)
            let importFile = defaults.configHome.appendingPathComponent("import.json")
            try Data(#"{"password": "typed", "greeting": "Hey"}"#.utf8).write(to: importFile)
            let imported = try await defaults.run("import", "app", importFile.path)
            #expect(imported.status == 2)
            #expect(try String(contentsOf: defaults.file("app"), encoding: .utf8) == original)
            // Removing a value left under the name is allowed.
            try defaults.seed("app", #"{"greeting": "Hi", "password": "old"}"#)
            let deleted = try await defaults.run("delete", "app", "password")
            #expect(deleted.status == 0, "\(deleted.errorOutput)")
            #expect(try !String(contentsOf: defaults.file("app"), encoding: .utf8).contains("old"))
        }
    }

    @Test func watchShowsAChangeOfASecretWithoutItsValues() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"greeting": "Hi"}"#)
            try Self.publish("app", in: defaults)
            let watcher = try defaults.start(["watch", "app"])
            defer { watcher.send(SIGTERM) }
            #expect(await watcher.nextErrorLine()?.hasPrefix("defaults: watching ") == true)
            // A hand edit that puts a value under the name: seen as a change, never shown.
            try defaults.seed("app", #"{"greeting": "Hi", "password": "hunter2"}"#)
            let first = await watcher.nextLine()
            #expect(first == #"password: (unset) -> "<secret>""#)
            try defaults.seed("app", #"{"greeting": "Yo", "password": "hunter2"}"#)
            let second = await watcher.nextLine()
            #expect(second == #"greeting: "Hi" -> "Yo""#)
        }
    }

    /// Publishes a schema whose `database.password` is a secret, as the program would.
    static func publishDatabasePassword(_ name: String, in defaults: DefaultsCommand) throws {
        let suite = Defaults.Suite(fileURL: defaults.file(name))
        try suite.publishSchema(
            for: Defaults.Key<String>(secret: "database.password", suite: suite, summary: "The database password"),
            Defaults.Key<Int>("port", default: 8080, suite: suite)
        )
    }

    /// Issue 51, item 4: the schema's type check ran before the secret check and quoted the value
    /// back (`must be String, not 123456789012 … (--force writes it anyway)`), and `--force` was
    /// then refused all the same.
    @Test func aWriteOfASecretIsRefusedFirstWithoutQuotingTheValue() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"port": 1}"#)
            try Self.publishDatabasePassword("app", in: defaults)
            let typed = "123456789012"
            let attempts: [[String]] = [
                ["write", "app", "database.password", typed],
                ["write", "app", "database.password", typed, "--force"],
                ["write", "app", "database.password", "--string", typed],
                ["write", "app", "database.password", "{" + typed],
            ]
            for arguments in attempts {
                let result = try await defaults.run(arguments)
                #expect(result.status == 2, "\(arguments)")
                expectOneErrorLine(result, containing: #""database.password" is a secret"#)
                #expect(!(result.output + result.errorOutput).contains(typed), "\(arguments): \(result.errorOutput)")
                if arguments.contains("--force") {
                    #expect(
                        result.errorOutput.contains("--force does not write a secret either"),
                        "\(result.errorOutput)"
                    )
                } else {
                    #expect(!result.errorOutput.contains("--force"), "\(result.errorOutput)")
                }
            }
            #expect(try String(contentsOf: defaults.file("app"), encoding: .utf8) == #"{"port": 1}"#)
        }
    }

    @Test func anExportLeavesASecretsNameOutSoItImportsBack() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"port": 1, "database.password": "planted-by-hand"}"#)
            try Self.publishDatabasePassword("app", in: defaults)
            let exported = try await defaults.run("export", "app")
            #expect(exported.status == 0, "\(exported.errorOutput)")
            #expect(!exported.output.contains("database.password"), "\(exported.output)")
            let file = defaults.configHome.appendingPathComponent("backup.json")
            try Data(exported.output.utf8).write(to: file)
            try defaults.seed("copy", "{}")
            try Self.publishDatabasePassword("copy", in: defaults)
            let imported = try await defaults.run("import", "copy", file.path)
            #expect(imported.status == 0, "\(imported.errorOutput)")
        }
    }

    /// The hunt: the secret's text, a value typed for it and values planted under its name, flat
    /// and nested (`{"database": {"password": …}}`, which the program's provider takes for it).
    ///
    /// Counted in everything the command prints and writes, and in every copy it hands the
    /// editor: zero outside the secret's own file. Probe finding 3: the nested one was shown by
    /// `read`, `read --origin`, `read --merged` and `export`, and `write database
    /// '{"password": …}'` was taken; `defaults edit` handed the editor the flat one in clear.
    @Test func theSecretsTextIsInNoOutputOfTheCommand() async throws {
        try await withCommand { defaults in
            let secret = "S3cret-hunt-\(UUID().uuidString)"
            let typed = "typed-for-the-secret"
            let typedNumber = "987654321098"
            let planted = "planted-by-hand"
            let nested = "planted-nested-by-hand"
            // The program's credential, in the folder its service reads, named in the
            // command's environment too.
            let credentials = defaults.configHome.appendingPathComponent("credentials", isDirectory: true)
            try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
            try Data(secret.utf8).write(to: credentials.appendingPathComponent("database.password"))
            let environment = ["CREDENTIALS_DIRECTORY": credentials.path]
            let seeded = #"""
                {"port": 1, "database.password": "\#(planted)", "database": {"password": "\#(nested)", "host": "db"}}
                """#
            try defaults.seed("app", seeded)
            try Self.publishDatabasePassword("app", in: defaults)
            let importFile = defaults.configHome.appendingPathComponent("import.json")
            try Data(#"{"database.password": "\#(typed)", "port": 2}"#.utf8).write(to: importFile)
            let importNested = defaults.configHome.appendingPathComponent("import-nested.json")
            try Data(#"{"database": {"password": "\#(typed)"}, "port": 2}"#.utf8).write(to: importNested)
            let exportFile = defaults.configHome.appendingPathComponent("export.json")
            // Every copy handed to an editor is kept here, for the count.
            let handed = defaults.configHome.appendingPathComponent("handed-to-the-editor")
            func editor(_ name: String, _ edit: String) throws -> String {
                let script = defaults.configHome.appendingPathComponent(name + ".sh")
                try Data("set -e\ncat \"$1\" >> '\(handed.path)'\n\(edit)\n".utf8).write(to: script)
                return "/bin/sh " + script.path
            }
            // One that types the secret under its flat name, one under its nested name, one that
            // changes only the port beside them.
            let typesFlat = try editor(
                "types-flat",
                #"sed -i 's/"port" : 1/"port" : 3, "database.password" : "\#(typed)"/' "$1""#
            )
            let typesNested = try editor(
                "types-nested",
                #"sed -i 's/"host" : "db"/"host" : "db", "password" : "\#(typed)"/' "$1""#
            )
            let changesPort = try editor(
                "changes-port",
                #"sed -i -e 's/"port" : 1/"port" : 5/' -e 's/"db"/"db2"/' "$1""#
            )
            let commands: [(arguments: [String], editor: String)] =
                [
                    ["read", "app"], ["read", "app", "database.password"], ["read", "app", "--merged"],
                    ["read", "app", "--origin"], ["read", "app", "database.password", "--origin"],
                    ["read", "app", "database"], ["read", "app", "database", "--origin"],
                    ["export", "app"], ["export", "app", exportFile.path],
                    ["describe", "app"], ["describe", "app", "database.password"], ["keys", "app", "--described"],
                    ["write", "app", "database.password", typed], ["write", "app", "database.password", typedNumber],
                    ["write", "app", "database.password", typed, "--force"],
                    ["write", "app", "database.password", "--string", typed], ["import", "app", importFile.path],
                    ["write", "app", "database", #"{"password": "\#(typed)"}"#],
                    ["write", "app", "database", #"{"password": \#(typedNumber)}"#, "--force"],
                    ["import", "app", importNested.path],
                ]
                .map { ($0, typesFlat) } + [(["edit", "app"], typesFlat), (["edit", "app"], typesNested)]
            var printed: [String] = []
            for (arguments, editor) in commands {
                let result = try await defaults.run(
                    arguments,
                    environment: environment.merging(["VISUAL": editor]) { $1 }
                )
                printed += [result.output, result.errorOutput]
                if arguments.first == "write" || arguments.first == "import" || arguments.first == "edit" {
                    #expect(result.status == 2, "refused: \(arguments)")
                }
            }
            #expect(try defaults.bytes("app") == Data(seeded.utf8), "nothing was written")
            // An edit beside them is applied, and the file keeps what it held under the names.
            let edited = try await defaults.run(
                ["edit", "app"],
                environment: environment.merging(["VISUAL": changesPort]) { $1 }
            )
            #expect(edited.status == 0, "\(edited.errorOutput)")
            printed += [edited.output, edited.errorOutput]
            let file = try #require(
                try JSONSerialization.jsonObject(with: defaults.bytes("app")) as? [String: Any]
            )
            #expect(file["port"] as? Int == 5)
            #expect(file["database.password"] as? String == planted)
            #expect((file["database"] as? [String: Any])?["password"] as? String == nested)
            #expect((file["database"] as? [String: Any])?["host"] as? String == "db2")
            // A change made under the names while `watch` looks.
            let watcher = try defaults.start(["watch", "app"], environment: environment)
            defer { watcher.send(SIGTERM) }
            #expect(await watcher.nextErrorLine()?.hasPrefix("defaults: watching ") == true)
            try defaults.seed("app", #"{"port": 1, "database.password": "\#(planted) again"}"#)
            printed.append(await watcher.nextLine() ?? "")
            printed.append(await watcher.nextLine() ?? "")
            printed.append(await watcher.nextLine() ?? "")
            try defaults.seed("app", #"{"port": 1, "database": {"password": "\#(nested) again"}}"#)
            printed.append(await watcher.nextLine() ?? "")
            printed.append(await watcher.nextLine() ?? "")
            var files: [String] = []
            for file in [
                defaults.file("app"), Defaults.Suite.schemaFileURL(forSettingsFile: defaults.file("app")), exportFile,
            ] {
                files.append((try? String(contentsOf: file, encoding: .utf8)) ?? "")
            }
            let copies = try String(contentsOf: handed, encoding: .utf8)
            #expect(copies.contains("\"port\""), "the editor was handed the copies: \(copies)")
            func count(_ text: String, in outputs: [String]) -> Int {
                outputs.reduce(0) { $0 + $1.components(separatedBy: text).count - 1 }
            }
            #expect(count(secret, in: printed + files + [copies]) == 0)
            #expect(count(typed, in: printed + files + [copies]) == 0, "\(printed.filter { $0.contains(typed) })")
            #expect(
                count(typedNumber, in: printed + files + [copies]) == 0,
                "\(printed.filter { $0.contains(typedNumber) })"
            )
            for text in [planted, nested] {
                #expect(count(text, in: printed + [copies]) == 0, "\(text): \(printed.filter { $0.contains(text) })")
                #expect(count(text, in: [files[2]]) == 0, "the export leaves it out")
            }
        }
    }
}
