import Defaults
import Foundation
import Testing

/// The example service when things go wrong, run as a person would.
///
/// Every error is one line that says what happened, and an exit status; never a crash. And it
/// reaches etcd over TLS with etcdctl's own variables.
@Suite struct EtcdServiceExampleErrorTests {
    /// A user who may only read: `--set` is refused, said so, and the service exits with status 3.
    @Test func aWriteTheUserMayNotMakeIsSaidAndExitsWithAStatus() async throws {
        let server = try EtcdServer()
        try server.enableAuthentication(prefix: "/config/billing/")
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let password = try write("reader-pw\n", to: "etcd-password", in: folder)
        let run = try await runProduct(
            "etcd-service",
            ["--set", "5"],
            environment: [
                "ETCD_ENDPOINTS": server.clientURL.absoluteString, "ETCD_USER": "reader",
                "ETCD_PASSWORD_FILE": password.path,
                "XDG_CACHE_HOME": folder.appendingPathComponent("cache").path,
            ]
        )
        #expect(run.status == 3, "\(run)")
        // One line: the failure `synchronize()` throws, not also the report of it before.
        let lines = run.output.split(separator: "\n")
        #expect(lines.count == 1, "\(run.output)")
        #expect(
            lines.first?.hasPrefix("etcd-service: rateLimit=5 was not stored: ") == true
                && lines.first?.contains("user \"reader\" may not write these keys in etcd") == true,
            "\(run.output)"
        )
        #expect(!run.output.contains("Fatal error"), "\(run.output)")
        #expect(!run.output.contains("reader-pw"), "\(run.output)")
    }

    /// Serving with a password etcd refuses, and no settings ever seen on this machine: one line
    /// that says so, and status 3, not a service running on defaults it never read.
    @Test func servingWithARefusedPasswordAndNothingSeenBeforeIsSaidAndExitsWithAStatus() async throws {
        let server = try EtcdServer()
        try server.enableAuthentication(prefix: "/config/billing/")
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let password = try write("not-the-password\n", to: "etcd-password", in: folder)
        let running = try RunningProduct(
            "etcd-service",
            [],
            environment: [
                "ETCD_ENDPOINTS": server.clientURL.absoluteString, "ETCD_USER": "reader",
                "ETCD_PASSWORD_FILE": password.path,
                "XDG_CACHE_HOME": folder.appendingPathComponent("cache").path,
            ]
        )
        // NB: one that serves on its defaults runs until stopped: killed after a minute, a
        // deadline that only stops a hang. (SIGKILL: a product started from the tests has
        // SIGTERM blocked: measured in its /proc/<pid>/status.)
        let deadline = Task {
            try await Task.sleep(for: .seconds(60))
            running.send(SIGKILL)
        }
        let status = await running.exitStatus()
        deadline.cancel()
        let output = running.rest()
        #expect(status == 3, "\(output)")
        let lines = output.split(separator: "\n")
        #expect(lines.count == 1, "\(output)")
        #expect(
            lines.first?.hasPrefix("etcd-service: the settings could not be read") == true
                && lines.first?.contains("etcd refused the password of user \"reader\"") == true,
            "\(output)"
        )
    }

    /// etcd out of reach: status 3, and the line says so.
    @Test func etcdOutOfReachIsSaidAndExitsWithAStatus() async throws {
        let closed = try ReservedPort()
        let run = try await runProduct(
            "etcd-service",
            ["--set", "5"],
            environment: ["ETCD_ENDPOINTS": "http://127.0.0.1:\(closed.port)", "XDG_CACHE_HOME": "/nonexistent"]
        )
        #expect(run.status == 3, "\(run)")
        #expect(run.output.contains("etcd-service: rateLimit=5 was not stored: "), "\(run.output)")
        #expect(run.output.contains("out of reach"), "\(run.output)")
    }

    /// Arguments or settings it cannot use: status 2, and a line saying what it takes.
    @Test(arguments: [
        (["--reloads"], [String: String](), "usage: etcd-service"),
        (["--set", "many"], [:], "--set takes a whole number, not \"many\""),
        (["--frobnicate"], [:], "usage: etcd-service"),
        ([], ["ETCD_ENDPOINTS": "ftp://127.0.0.1:2379"], "ETCD_ENDPOINTS must list client URLs"),
    ])
    func argumentsItCannotUseAreSaidAndExitWithStatus2(
        arguments: [String],
        environment: [String: String],
        said: String
    ) async throws {
        let run = try await runProduct("etcd-service", arguments, environment: environment)
        #expect(run.status == 2, "\(run)")
        #expect(run.output.hasPrefix("etcd-service: "), "\(run.output)")
        #expect(run.output.contains(said), "\(run.output)")
    }

    /// `--help` says what it reads from the environment, on standard output, with status 0.
    ///
    /// Probe finding (this stop's etcd probe): the only help was the usage line, on standard
    /// error with status 2, naming none of the variables.
    @Test func helpListsTheVariablesItReads() async throws {
        let run = try await runProduct("etcd-service", ["--help"], environment: [:])
        #expect(run.status == 0, "\(run)")
        for variable in [
            "ETCD_ENDPOINTS", "ETCDCTL_CACERT", "ETCD_USER", "ETCD_PASSWORD_FILE", "CREDENTIALS_DIRECTORY",
        ] {
            #expect(run.output.contains(variable), "\(variable): \(run.output)")
        }
    }

    /// Over TLS with a client certificate, the files named as etcdctl's `ETCDCTL_CACERT`,
    /// `ETCDCTL_CERT` and `ETCDCTL_KEY`.
    @Test func itTakesEtcdctlsTLSVariables() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("DefaultsEtcdService-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = try TestCertificates(in: folder)
        let server = try EtcdServer(tls: files)
        let environment = [
            "ETCDCTL_ENDPOINTS": "127.0.0.1:\(server.clientURL.port!)",
            "ETCDCTL_CACERT": files.authority.path, "ETCDCTL_CERT": files.clientCertificate.path,
            "ETCDCTL_KEY": files.clientKey.path, "XDG_CACHE_HOME": folder.appendingPathComponent("cache").path,
        ]
        let set = try await runProduct("etcd-service", ["--set", "7"], environment: environment)
        #expect(set.status == 0, "\(set)")
        #expect(set.output == "rateLimit=7 written\n", "\(set.output)")
        #expect(try etcdctl(server, ["get", "/config/billing/rateLimit", "--print-value-only"]) == "7\n")

        // Without the client certificate, etcd refuses it, and the line says why.
        var anonymous = environment
        anonymous["ETCDCTL_CERT"] = nil
        anonymous["ETCDCTL_KEY"] = nil
        let refused = try await runProduct("etcd-service", ["--set", "8"], environment: anonymous)
        #expect(refused.status == 3, "\(refused)")
        #expect(refused.output.contains("it asks for a client certificate, and none was given"), "\(refused.output)")
    }
}
