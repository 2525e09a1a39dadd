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
}
