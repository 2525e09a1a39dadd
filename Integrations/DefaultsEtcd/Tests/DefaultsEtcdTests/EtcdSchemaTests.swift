import Defaults
import DefaultsEtcd
import Foundation
import Testing

/// The schema a service publishes for a suite in etcd: kept under a name the backend reserves,
/// read by `defaults-etcd` to check what an operator writes, and never taken back and forth by
/// two versions of the service during a rolling upgrade.
@Suite struct EtcdSchemaTests {
    static let prefix = "/config/billing/"

    /// The keys a version of the billing service reads; `extra` names a key a later one added.
    static func keys(of suite: Defaults.Suite, extra: String? = nil) -> [Defaults.Keys] {
        var keys: [Defaults.Keys] = [
            Defaults.Key<Int>("rateLimit", default: 100, suite: suite, summary: "Requests a second", range: 1...10_000),
            Defaults.Key<String>("region", default: "eu", suite: suite),
        ]
        if let extra { keys.append(Defaults.Key<Bool>(extra, default: false, suite: suite)) }
        return keys
    }

    @Test func aSchemaPublishedInEtcdChecksWhatTheCommandWrites() async throws {
        let server = try EtcdServer()
        let service = Defaults.Suite(etcd: [server.clientURL], prefix: Self.prefix, cache: .none)
        #expect(try service.publishSchema(for: Self.keys(of: service), version: "1.0"))
        #expect(
            try !service.publishSchema(for: Self.keys(of: service), version: "1.0"),
            "the same schema writes nothing"
        )
        // Where an operator finds it; no setting.
        let kept = try etcdctl(server, ["get", "--print-value-only", Self.prefix + ".defaults-schema"])
        #expect(kept.contains(#""rateLimit""#) && kept.contains(#""x-program-version" : "1.0""#), "\(kept)")
        #expect(try service.publishedSchema() == Defaults.JSONValue(parsing: kept))

        let suite = "etcd://127.0.0.1:\(server.clientURL.port!)\(Self.prefix)"
        var run = try await runDefaults(["write", suite, "rateLimit", "20000"])
        #expect(run.status == 2, "\(run)")
        #expect(
            run.errorOutput.contains(
                "rateLimit: 20000 is greater than the maximum 10000 (the key is Int in 1...10000)"
            ),
            "\(run)"
        )
        #expect(try etcdctl(server, ["get", "--print-value-only", Self.prefix + "rateLimit"]) == "", "nothing written")
        run = try await runDefaults(["write", suite, "region", "5"])
        #expect(run.status == 2 && run.errorOutput.contains("region: must be a string, not 5"), "\(run)")
        run = try await runDefaults(["write", suite, "rateLimit", "500"])
        #expect(run.status == 0, "\(run)")
        // An import is checked as a write is, and --force writes anyway.
        let imported = server.directory.appendingPathComponent("imported.json")
        try Data(#"{"rateLimit": 0, "region": "us"}"#.utf8).write(to: imported)
        run = try await runDefaults(["import", suite, imported.path])
        #expect(run.status == 2 && run.errorOutput.contains("rateLimit: 0 is less than the minimum 1"), "\(run)")
        #expect(try etcdctl(server, ["get", "--print-value-only", Self.prefix + "region"]) == "")
        run = try await runDefaults(["write", suite, "rateLimit", "20000", "--force"])
        #expect(run.status == 0, "\(run)")
        #expect(try etcdctl(server, ["get", "--print-value-only", Self.prefix + "rateLimit"]) == "20000\n")
        // The schema is not among the suite's values.
        run = try await runDefaults(["keys", suite])
        #expect(run.status == 0 && run.output == "rateLimit\n", "\(run)")
        run = try await runDefaults(["read", suite])
        #expect(!run.output.contains("defaults-schema"), "\(run)")
        // A removal of every key leaves the schema: it is the program's, not a setting.
        run = try await runDefaults(["delete", suite, "--all"])
        #expect(try service.publishedSchema() != nil, "\(run)")
    }

    @Test func twoVersionsPublishingInTurnDoNotTakeTheSchemaBackAndForth() async throws {
        let server = try EtcdServer()
        let problems = ProblemLog()
        func instance() -> Defaults.Suite {
            Defaults.Suite(etcd: [server.clientURL], prefix: Self.prefix, cache: .none) { problems.append($0) }
        }
        func keptKeys() throws -> [String] {
            guard case .object(let document)? = try instance().publishedSchema(),
                case .object(let properties)? = document["properties"]
            else { return [] }
            return properties.keys.filter { $0 != "$schema" }.sorted()
        }
        // A rolling upgrade from 1.9 to 1.10: instances of each start in turn.
        let old = instance()
        let new = instance()
        #expect(try old.publishSchema(for: Self.keys(of: old), version: "1.9"))
        #expect(try new.publishSchema(for: Self.keys(of: new, extra: "audit"), version: "1.10"))
        for _ in 0..<3 {
            #expect(try !old.publishSchema(for: Self.keys(of: old), version: "1.9"), "an older version leaves it")
            #expect(try !new.publishSchema(for: Self.keys(of: new, extra: "audit"), version: "1.10"))
        }
        #expect(try keptKeys() == ["audit", "rateLimit", "region"])
        #expect(problems.all.isEmpty, "\(problems.all)")

        // Neither gives a version: the first one stays, and the other says why.
        let first = Defaults.Suite(etcd: [server.clientURL], prefix: "/config/other/", cache: .none)
        let second = Defaults.Suite(etcd: [server.clientURL], prefix: "/config/other/", cache: .none) {
            problems.append($0)
        }
        #expect(try first.publishSchema(for: Self.keys(of: first)))
        #expect(try !second.publishSchema(for: Self.keys(of: second, extra: "audit")))
        let reported = try await problems.first { if case .schemaNotPublished = $0 { true } else { false } }
        #expect(
            reported.description.contains("neither gives a version to say which is newer (publishSchema's version:)"),
            "\(reported)"
        )
    }
}

extension EtcdSchemaTests {
    @Test func aRoleThatMayOnlyReadChecksWithTheSchemaAndCannotPublishOne() async throws {
        let server = try EtcdServer()
        try server.enableAuthentication(prefix: Self.prefix)
        func instance(_ user: String) -> Defaults.Suite {
            let credentials = EtcdCredentials(user: user, password: "\(user)-pw")
            return Defaults.Suite(
                backend: EtcdBackend(
                    endpoints: [server.clientURL],
                    prefix: Self.prefix,
                    cache: .none,
                    credentials: credentials
                )
            )
        }
        let writer = instance("writer")
        #expect(try writer.publishSchema(for: Self.keys(of: writer), version: "1"))
        let reader = instance("reader")
        #expect(try reader.publishedSchema() == writer.publishedSchema())
        let refusal = #expect(throws: Defaults.StorageError.self) {
            try reader.publishSchema(for: Self.keys(of: reader, extra: "audit"), version: "2")
        }
        guard case .writeRefused(_, let reason) = refusal else {
            Issue.record("not a refused write: \(String(describing: refusal))")
            return
        }
        #expect(reason.contains("user \"reader\" may not write these keys"), "\(reason)")
        // The command, as the reader: the schema refuses a bad value before etcd refuses the user.
        let suite = "etcd://127.0.0.1:\(server.clientURL.port!)\(Self.prefix)"
        let reading = ["ETCDCTL_USER": "reader", "ETCDCTL_PASSWORD": "reader-pw"]
        var run = try await runDefaults(["write", suite, "rateLimit", "0"], environment: reading)
        #expect(run.status == 2 && run.errorOutput.contains("rateLimit: 0 is less than the minimum 1"), "\(run)")
        run = try await runDefaults(["describe", suite], environment: reading)
        #expect(run.status == 0 && run.output.contains("rateLimit"), "\(run)")
    }
}

/// The problems a suite reported, in order, to await.
final class ProblemLog: @unchecked Sendable {  // `lock` guards `problems`
    private let lock = NSCondition()
    private var problems: [Defaults.StorageError] = []

    func append(_ problem: Defaults.StorageError) {
        lock.lock()
        problems.append(problem)
        lock.broadcast()
        lock.unlock()
    }

    var all: [Defaults.StorageError] {
        lock.lock()
        defer { lock.unlock() }
        return problems
    }

    /// The first problem `matches` takes, once reported (within 10 s).
    func first(where matches: @escaping @Sendable (Defaults.StorageError) -> Bool) async throws -> Defaults.StorageError
    {
        try await offThePool {
            self.lock.lock()
            defer { self.lock.unlock() }
            let deadline = Date().addingTimeInterval(10)
            while true {
                if let found = self.problems.first(where: matches) { return found }
                guard self.lock.wait(until: deadline) else { throw CancellationError() }
            }
        }
    }
}
