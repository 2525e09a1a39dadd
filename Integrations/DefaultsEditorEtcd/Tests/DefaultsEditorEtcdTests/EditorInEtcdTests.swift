import Defaults
import DefaultsEtcd
import Foundation
import Testing

/// `defaults-editor-etcd` on a suite in a real etcd (Debian's etcd-server), on an X server of its own: the
/// rows made from a schema written by hand, following another instance's writes and writing the
/// person's to etcd.
@Suite struct EditorInEtcdTests {
    /// The schema a service of this suite would publish; written by hand. (The window names the
    /// region "Eu": a choice is shown capitalized.)
    static let schema = #"""
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {
          "rateLimit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100, "description": "Requests per second"},
          "region": {"type": "string", "enum": ["eu", "us"], "default": "us", "description": "Where requests go"}
        }}
        """#

    /// A new etcd, the address of a suite in it, and the schema written beside its data.
    static func startEtcd() throws -> (Etcd, String, URL) {
        let etcd = try Etcd()
        let schemaFile = etcd.directory.appendingPathComponent("billing.schema.json")
        try Data(schema.utf8).write(to: schemaFile)
        return (etcd, "etcd://127.0.0.1:\(etcd.port)/config/billing/", schemaFile)
    }

    @Test func theEditorShowsASuiteInEtcdLiveAndWritesTheChangesMadeInIt() async throws {
        let (etcd, address, schemaFile) = try Self.startEtcd()
        defer { etcd.stop() }
        // Another instance of the service, and a value no schema describes.
        let instance = Defaults.Suite(backend: try EtcdBackend(commandLineAddress: address))
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: instance)
        instance[rateLimit] = 400
        instance[Defaults.Key<String>("region", default: "us", suite: instance)] = "eu"
        instance[Defaults.Key<[String: Int]>("limits", default: [:], suite: instance)] = ["burst": 20]
        try instance.synchronize()

        let display = try VirtualDisplay()
        defer { display.stop() }
        let editor = try RunningProgram(
            "editor-etcd-test-helper",
            [address, schemaFile.path],
            environment: ["DISPLAY": display.name, "GDK_BACKEND": "x11"]
        )
        defer { editor.stop() }
        var lines = await editor.lines { $0.contains("ready") }
        #expect(lines.contains(#"rows limits={"burst":20} rateLimit=400.0 region=Eu"#), "\(lines)")

        // Another instance writes: the row follows.
        instance[rateLimit] = 500
        try instance.synchronize()
        let followed = #"rows limits={"burst":20} rateLimit=500.0 region=Eu"#
        lines = await editor.lines { $0.contains(followed) }
        #expect(lines.contains(followed), "\(lines)")

        // The person sets 600 in the window: etcd has it, as a new reader sees.
        editor.send("set rateLimit 600")
        editor.send("sync")
        lines = await editor.lines { $0.contains("synced") }
        let reader = Defaults.Suite(backend: try EtcdBackend(commandLineAddress: address))
        #expect(reader[Defaults.Key<Int>("rateLimit", default: 100, suite: reader)] == 600, "\(lines)")
        #expect(lines.filter { $0.hasPrefix("problem") }.isEmpty, "\(lines)")
        editor.send("quit")
        #expect(await editor.exitStatus() == 0)
    }

    @Test func theProgramDrawsASuiteInEtcdAndRefusesAnAddressThatIsNone() async throws {
        let (etcd, address, schemaFile) = try Self.startEtcd()
        defer { etcd.stop() }
        let picture = etcd.directory.appendingPathComponent("editor.png")
        let display = try VirtualDisplay()
        defer { display.stop() }
        let drawn = try await run(
            "defaults-editor-etcd",
            [address, "--schema", schemaFile.path, "--picture", picture.path],
            display: display.name
        )
        #expect(drawn.status == 0, "\(drawn.errors)")
        #expect(try Data(contentsOf: picture).starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG")
        let reader = Defaults.Suite(backend: try EtcdBackend(commandLineAddress: address))
        #expect(reader.userStoredValues().isEmpty, "opening the editor writes nothing")
        // Without --schema: none in etcd yet, said; then the one a service published there, read.
        let bare = try await run("defaults-editor-etcd", [address, "--picture", picture.path], display: display.name)
        #expect(bare.status == 0 && bare.errors.contains("no schema kept for \(address)"), "\(bare.errors)")
        let service = Defaults.Suite(backend: try EtcdBackend(commandLineAddress: address))
        #expect(try service.publishSchema(for: [Defaults.Key<Int>("rateLimit", default: 100, suite: service)]))
        let published = try await run(
            "defaults-editor-etcd",
            [address, "--picture", picture.path],
            display: display.name
        )
        #expect(published.status == 0 && !published.errors.contains("no schema"), "\(published.errors)")
        #expect(reader.userStoredValues().isEmpty, "the schema is no setting")

        let invalid = try await run("defaults-editor-etcd", ["etcd://127.0.0.1:\(etcd.port)"], display: display.name)
        #expect(invalid.status == 2 && invalid.errors.contains("no key prefix"), "\(invalid.errors)")
        let unknown = try await run("defaults-editor-etcd", ["consul://127.0.0.1/app/"], display: display.name)
        #expect(unknown.status == 2 && unknown.errors.contains("etcd://, etcds://"), "\(unknown.errors)")
        let usage = try await run("defaults-editor-etcd", [], display: display.name)
        #expect(usage.status == 2, "\(usage.errors)")
        #expect(
            usage.errors.contains("usage: defaults-editor-etcd <suite name | settings file | etcd://… | etcds://…>"),
            "\(usage.errors)"
        )
    }
}
