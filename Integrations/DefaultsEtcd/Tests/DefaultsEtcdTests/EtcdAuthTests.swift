import Defaults
import DefaultsObservation
import Foundation
import Testing

// @testable: counts logins and watch reconnects, and holds the watch (`loginsForTesting`,
// `watchFailuresForTesting`, `holdWatchForTesting`).
@testable import DefaultsEtcd

/// A cluster with authentication on, as production runs it: users made with `etcdctl user add`,
/// roles granting a prefix, `etcdctl auth enable`.
@Suite struct EtcdAuthTests {
    static let prefix = "/config/auth/"
    /// etcdctl's flag for the root user, once authentication is on.
    static let root = ["--user", "root:root-pw"]

    /// A member with authentication on (``EtcdServer/enableAuthentication(prefix:)``), and the
    /// rate limit 200 stored under the prefix.
    static func serverWithUsers(tls: TestCertificates? = nil, arguments: [String] = []) throws -> EtcdServer {
        let server = try EtcdServer(tls: tls, arguments: arguments)
        try server.enableAuthentication(prefix: prefix)
        _ = try etcdctl(server, root + ["put", "\(prefix)rateLimit", "200"])
        return server
    }

    @Test func aUserWithAPasswordFileReadsWritesWatchesAndLogsInAgainWhenEtcdForgetsItsToken() async throws {
        let server = try Self.serverWithUsers(arguments: ["--auth-token-ttl", "2"])
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // NB: with a line end, as `echo` and systemd credentials leave one.
        let passwordFile = try write("writer-pw\n", to: "password", in: folder)
        let backend = EtcdBackend(
            endpoints: [server.clientURL],
            prefix: Self.prefix,
            cache: .none,
            credentials: EtcdCredentials(user: "writer", passwordFile: passwordFile)
        )
        let problems = Received<String>()
        let suite = Defaults.Suite(backend: backend) { problems.append($0.description) }
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        let level = Defaults.Key<String>("level", default: "info", suite: suite)
        #expect(suite[rateLimit] == 200)
        let told = Received<Int>()
        let observation = Defaults.observe(rateLimit, options: []) { told.append($0.newValue) }
        _ = try etcdctl(server, Self.root + ["put", "\(Self.prefix)rateLimit", "300"])
        #expect(await told.wait(forCount: 1))
        #expect(backend.client.loginsForTesting == 2, "one for the load, one for the watch")

        // A quiet period longer than the token's life (2 s): etcd forgets it, and says so to the
        // next request, which logs in again and goes through.
        try await Task.sleep(for: .seconds(3))
        suite[level] = "debug"
        try suite.synchronize()
        #expect(try etcdctl(server, Self.root + ["get", "\(Self.prefix)level", "--print-value-only"]) == "\"debug\"\n")
        #expect(backend.client.loginsForTesting == 3)
        // The watch made before the token expired still runs.
        _ = try etcdctl(server, Self.root + ["put", "\(Self.prefix)rateLimit", "400"])
        #expect(await told.wait(forCount: 2))

        #expect(problems.all.isEmpty, "\(problems.all)")

        // A restart forgets every token, and ends the watch: it logs in again to connect again.
        // (The only member gone a moment is an outage the watch may report, once.)
        server.stop()
        try server.start()
        _ = try etcdctl(server, Self.root + ["put", "\(Self.prefix)rateLimit", "500"])
        #expect(await suite.waitForValue(rateLimit, 500))
        suite[level] = "trace"
        try suite.synchronize()
        #expect(try etcdctl(server, Self.root + ["get", "\(Self.prefix)level", "--print-value-only"]) == "\"trace\"\n")
        #expect(problems.all.count <= 1, "\(problems.all)")
        #expect(problems.all.allSatisfy { $0.contains("the watch of etcd stopped") }, "\(problems.all)")
        observation.invalidate()
    }

    @Test func aWrongPasswordIsReportedOnceAndNotOfferedAgainUntilItsFileChanges() async throws {
        let server = try Self.serverWithUsers()
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let passwordFile = try write("not-the-password\n", to: "password", in: folder)
        let backend = EtcdBackend(
            endpoints: [server.clientURL],
            prefix: Self.prefix,
            cache: .none,
            credentials: EtcdCredentials(user: "writer", passwordFile: passwordFile)
        )
        let problems = Received<String>()
        let suite = Defaults.Suite(backend: backend) { problems.append($0.description) }
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        #expect(suite[rateLimit] == 100)
        // The watch goes on trying, pausing longer each time; none of its tries asks etcd again
        // or reports again.
        #expect(await eventually { backend.watchFailuresForTesting >= 5 })
        #expect(problems.all.count == 1, "\(problems.all)")
        #expect(
            problems.all.first?.contains("etcd refused the password of user \"writer\" (password in") == true,
            "\(problems.all)"
        )
        #expect(backend.client.loginsForTesting == 1)

        // A write is refused as such, once, and given up.
        suite[rateLimit] = 5
        let refusal = #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
        guard case .writeRefused(_, let reason) = refusal else {
            Issue.record("not a refused write: \(String(describing: refusal))")
            return
        }
        #expect(reason.contains("refused the password"), "\(reason)")
        #expect(suite[rateLimit] == 100)
        try suite.synchronize()
        #expect(problems.all.count == 2, "\(problems.all)")
        #expect(backend.client.loginsForTesting == 1)

        // The password mended: the watch logs in at its next try and reads what etcd holds.
        _ = try write("writer-pw\n", to: "password", in: folder)
        #expect(await suite.waitForValue(rateLimit, 200))
        suite[rateLimit] = 5
        try suite.synchronize()
        #expect(try etcdctl(server, Self.root + ["get", "\(Self.prefix)rateLimit", "--print-value-only"]) == "5\n")
        #expect(problems.all.count == 2, "\(problems.all)")
    }

    @Test func aRoleThatMayOnlyReadReadsAndWatchesAndItsWritesAreRefusedOnce() async throws {
        let server = try Self.serverWithUsers()
        let backend = EtcdBackend(
            endpoints: [server.clientURL],
            prefix: Self.prefix,
            cache: .none,
            credentials: EtcdCredentials(user: "reader", password: "reader-pw")
        )
        let problems = Received<String>()
        let suite = Defaults.Suite(backend: backend) { problems.append($0.description) }
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        #expect(suite[rateLimit] == 200)
        _ = try etcdctl(server, Self.root + ["put", "\(Self.prefix)rateLimit", "300"])
        #expect(await suite.waitForValue(rateLimit, 300))

        suite[rateLimit] = 5
        let refusal = #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
        guard case .writeRefused(_, let reason) = refusal else {
            Issue.record("not a refused write: \(String(describing: refusal))")
            return
        }
        #expect(reason.contains("user \"reader\" may not write these keys"), "\(reason)")
        // Given up, not tried again: memory holds what etcd holds, and nothing is pending.
        #expect(suite[rateLimit] == 300)
        try suite.synchronize()
        #expect(try etcdctl(server, Self.root + ["get", "\(Self.prefix)rateLimit", "--print-value-only"]) == "300\n")
        #expect(problems.all.count == 1, "\(problems.all)")
        // An exclusive transaction is refused the same way, and changes nothing.
        #expect(throws: Defaults.StorageError.self) {
            try suite.exclusiveTransaction { suite[rateLimit] += 1 }
        }
        #expect(suite[rateLimit] == 300)
        // Still watching.
        _ = try etcdctl(server, Self.root + ["put", "\(Self.prefix)rateLimit", "400"])
        #expect(await suite.waitForValue(rateLimit, 400))
    }

    @Test func aWatchEtcdRefusesFailsWithPausesAndIsReportedOnceNotALoopOfReconnections() async throws {
        let server = try Self.serverWithUsers()
        let backend = EtcdBackend(
            endpoints: [server.clientURL],
            prefix: Self.prefix,
            cache: .none,
            credentials: EtcdCredentials(user: "reader", password: "reader-pw")
        )
        let problems = Received<String>()
        let suite = Defaults.Suite(backend: backend) { problems.append($0.description) }
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        #expect(suite[rateLimit] == 200)
        #expect(await eventually { backend.watchConnectionsForTesting == 1 })
        // The role loses its permission; the watch connects again, and etcd creates the watch and
        // cancels it at once ("permission denied"), under an HTTP 200.
        _ = try etcdctl(
            server,
            Self.root + ["role", "revoke-permission", "readonly", "--prefix=true", Self.prefix]
        )
        let released = ContinuousClock.now
        backend.holdWatchForTesting()
        backend.releaseWatchForTesting()
        #expect(await eventually { backend.watchFailuresForTesting >= 5 })
        // Paused longer after each failure (up to 3 s): five failures in a row take at least the
        // pauses after the second, third and fourth (0.2 + 0.4 + 0.8 s).
        #expect(released.duration(to: .now) >= .milliseconds(1_400))
        #expect(problems.all.count == 1, "\(problems.all)")
        #expect(problems.all.first?.contains("user \"reader\" may not read \(Self.prefix)") == true, "\(problems.all)")
        // The permission granted again: the watch goes on, and the failures were one outage.
        _ = try etcdctl(
            server,
            Self.root + ["role", "grant-permission", "readonly", "--prefix=true", "read", Self.prefix]
        )
        _ = try etcdctl(server, Self.root + ["put", "\(Self.prefix)rateLimit", "300"])
        #expect(await suite.waitForValue(rateLimit, 300))
        #expect(problems.all.count == 1, "\(problems.all)")
    }

    @Test func aPermissionRevokedWhileTheWatchIsAwayIsReportedAsSuchAfterTheOutageAndOnce() async throws {
        let server = try Self.serverWithUsers()
        let backend = EtcdBackend(
            endpoints: [server.clientURL],
            prefix: Self.prefix,
            cache: .none,
            credentials: EtcdCredentials(user: "reader", password: "reader-pw")
        )
        let problems = Received<String>()
        let suite = Defaults.Suite(backend: backend) { problems.append($0.description) }
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        #expect(suite[rateLimit] == 200)
        #expect(await eventually { backend.watchConnectionsForTesting == 1 })
        // The role loses its permission (the watch running goes on), and etcd restarts: the watch
        // must connect again, and meets the outage first, reported as such.
        _ = try etcdctl(
            server,
            Self.root + ["role", "revoke-permission", "readonly", "--prefix=true", Self.prefix]
        )
        server.stop()
        #expect(await problems.wait(forCount: 1))
        #expect(problems.all.first?.contains("the watch of etcd stopped") == true, "\(problems.all)")
        try server.start()
        // etcd answers again, and refuses the watch: that is the problem now, reported once, not
        // left behind the outage's "reconnecting".
        #expect(await problems.wait(forCount: 2))
        #expect(problems.all.last?.contains("user \"reader\" may not read \(Self.prefix)") == true, "\(problems.all)")
        let failures = backend.watchFailuresForTesting
        #expect(await eventually { backend.watchFailuresForTesting >= failures + 3 })
        #expect(problems.all.count == 2, "\(problems.all)")
        // The permission granted again: the watch goes on, with nothing more to report.
        _ = try etcdctl(
            server,
            Self.root + ["role", "grant-permission", "readonly", "--prefix=true", "read", Self.prefix]
        )
        _ = try etcdctl(server, Self.root + ["put", "\(Self.prefix)rateLimit", "300"])
        #expect(await suite.waitForValue(rateLimit, 300))
        #expect(problems.all.count == 2, "\(problems.all)")
    }

    @Test func aPasswordChangedWhileTheWatchIsAwayIsReportedAfterTheOutageAndOnce() async throws {
        // Tokens that expire after 2 s of disuse: the one held before the outage is long dead
        // when the watch connects again.
        let server = try Self.serverWithUsers(arguments: ["--auth-token-ttl", "2"])
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let passwordFile = try write("writer-pw\n", to: "password", in: folder)
        let backend = EtcdBackend(
            endpoints: [server.clientURL],
            prefix: Self.prefix,
            cache: .none,
            credentials: EtcdCredentials(user: "writer", passwordFile: passwordFile)
        )
        let problems = Received<String>()
        let suite = Defaults.Suite(backend: backend) { problems.append($0.description) }
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        #expect(suite[rateLimit] == 200)
        #expect(await eventually { backend.watchConnectionsForTesting == 1 })
        // An operator changes the user's password, and etcd restarts before the file is mended.
        _ = try etcdctl(
            endpoints: [server.clientURL],
            Self.root + ["user", "passwd", "writer", "--interactive=false"],
            input: "writer-pw-2\n"
        )
        server.stop()
        #expect(await problems.wait(forCount: 1))
        #expect(problems.all.first?.contains("the watch of etcd stopped") == true, "\(problems.all)")
        try server.start()
        #expect(await problems.wait(forCount: 2))
        #expect(
            problems.all.last?.contains("etcd refused the password of user \"writer\" (password in") == true,
            "\(problems.all)"
        )
        let failures = backend.watchFailuresForTesting
        #expect(await eventually { backend.watchFailuresForTesting >= failures + 3 })
        #expect(problems.all.count == 2, "\(problems.all)")
        // The file mended: the watch logs in at its next try, with nothing more to report.
        _ = try write("writer-pw-2\n", to: "password", in: folder)
        _ = try etcdctl(server, Self.root + ["put", "\(Self.prefix)rateLimit", "300"])
        #expect(await suite.waitForValue(rateLimit, 300))
        #expect(problems.all.count == 2, "\(problems.all)")
    }

    @Test func overTLSWithAuthenticationAClientCertificateMustHaveNoCommonName() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = try TestCertificates(in: folder.appendingPathComponent("tls"))
        let server = try Self.serverWithUsers(tls: files)
        let credentials = EtcdCredentials(user: "writer", password: "writer-pw")
        let named = EtcdBackend(
            endpoints: [server.clientURL],
            prefix: Self.prefix,
            cache: .none,
            tls: EtcdTLS(
                certificateAuthority: files.authority,
                clientCertificate: files.namedClientCertificate,
                clientKey: files.namedClientKey
            ),
            credentials: credentials
        )
        let refusal = #expect(throws: Defaults.StorageError.self) { try named.load() }
        #expect(
            refusal?.description.contains("refuses a client certificate with a Common Name") == true,
            "\(String(describing: refusal))"
        )
        let unnamed = EtcdBackend(
            endpoints: [server.clientURL],
            prefix: Self.prefix,
            cache: .none,
            tls: EtcdTLS(
                certificateAuthority: files.authority,
                clientCertificate: files.clientCertificate,
                clientKey: files.clientKey
            ),
            credentials: credentials
        )
        #expect(try unnamed.load().values["rateLimit"]?.description == "200")
    }

    @Test func theCommandLogsInWithTheAddressesPasswordFileOrEtcdctlsVariables() async throws {
        let server = try Self.serverWithUsers()
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let passwordFile = try write("writer-pw\n", to: "password", in: folder)
        let member = "127.0.0.1:\(server.clientURL.port!)"
        let suite = "etcd://\(member)\(Self.prefix)"
        let read = try await runDefaults([
            "read", "\(suite)?user=writer&password-file=\(passwordFile.path)", "rateLimit",
        ])
        #expect(read.status == 0, "\(read)")
        #expect(read.output == "200\n")
        // etcdctl's variables, as a shell set up for etcdctl has them.
        let reader = try await runDefaults(
            ["write", suite, "rateLimit", "5"],
            environment: ["ETCDCTL_USER": "reader:reader-pw"]
        )
        #expect(reader.status != 0)
        #expect(reader.errorOutput.contains("user \"reader\" may not write these keys"), "\(reader)")
        let wrong = try await runDefaults(
            ["read", suite, "rateLimit"],
            environment: ["ETCDCTL_USER": "writer", "ETCDCTL_PASSWORD": "nope"]
        )
        #expect(wrong.status != 0)
        #expect(wrong.errorOutput.contains("etcd refused the password of user \"writer\""), "\(wrong)")
        let writer = try await runDefaults(
            ["write", suite, "rateLimit", "6"],
            environment: ["ETCDCTL_USER": "writer", "ETCDCTL_PASSWORD": "writer-pw"]
        )
        #expect(writer.status == 0, "\(writer)")
        #expect(try etcdctl(server, Self.root + ["get", "\(Self.prefix)rateLimit", "--print-value-only"]) == "6\n")
        // Without a password, the command says where to give one.
        let none = try await runDefaults(["read", "\(suite)?user=writer", "rateLimit"])
        #expect(none.status != 0)
        #expect(none.errorOutput.contains("password-file="), "\(none)")
    }
}

extension EtcdServer {
    /// Turns authentication on with three users: `root`, `writer` (may read and write under
    /// `prefix`) and `reader` (may only read under it); each one's password is its name and `-pw`.
    func enableAuthentication(prefix: String) throws {
        let commands = [
            ["user", "add", "root:root-pw"], ["user", "grant-role", "root", "root"],
            ["role", "add", "readwrite"],
            ["role", "grant-permission", "readwrite", "--prefix=true", "readwrite", prefix],
            ["role", "add", "readonly"], ["role", "grant-permission", "readonly", "--prefix=true", "read", prefix],
            ["user", "add", "writer:writer-pw"], ["user", "grant-role", "writer", "readwrite"],
            ["user", "add", "reader:reader-pw"], ["user", "grant-role", "reader", "readonly"],
            ["auth", "enable"],
        ]
        for command in commands { _ = try etcdctl(self, command) }
    }
}

/// A new temporary folder.
func temporaryFolder() throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("DefaultsEtcdAuth-\(UUID())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}

/// Writes `text` to the file `name` in `folder`, and returns its URL.
func write(_ text: String, to name: String, in folder: URL) throws -> URL {
    let file = folder.appendingPathComponent(name)
    try Data(text.utf8).write(to: file)
    return file
}

/// Waits until `condition` holds, looking every 20 ms, up to 60 s (a deadline against a hang).
func eventually(_ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(60)
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return true
}
