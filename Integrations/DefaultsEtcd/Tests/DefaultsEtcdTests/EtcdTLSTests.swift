import Defaults
import DefaultsEtcd
import DefaultsObservation
import Foundation
import Testing

/// A cluster that serves clients over TLS only and asks each for a certificate (as Kubernetes'
/// etcd does): certificates made by `openssl` for the test.
@Suite struct EtcdTLSTests {
    @Test func aSuiteOverTLSWithAClientCertificateReadsWritesAndWatches() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("DefaultsEtcdTLS-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = try TestCertificates(in: folder)
        let server = try EtcdServer(tls: files)
        #expect(server.clientURL.scheme == "https")
        let prefix = "/config/tls/"
        _ = try etcdctl(server, ["put", "\(prefix)rateLimit", "200"])
        let problems = Received<String>()
        let tls = EtcdTLS(
            certificateAuthority: files.authority,
            clientCertificate: files.clientCertificate,
            clientKey: files.clientKey
        )
        let suite = Defaults.Suite(
            backend: EtcdBackend(endpoints: [server.clientURL], prefix: prefix, cache: .none, tls: tls)
        ) { problems.append($0.description) }
        let rateLimit = Defaults.Key<Int>("rateLimit", default: 100, suite: suite)
        #expect(suite[rateLimit] == 200)
        let told = Received<Int>()
        let observation = Defaults.observe(rateLimit, options: []) { told.append($0.newValue) }
        _ = try etcdctl(server, ["put", "\(prefix)rateLimit", "300"])
        #expect(await told.wait(forCount: 1))
        suite[Defaults.Key<String>("level", default: "info", suite: suite)] = "debug"
        try suite.synchronize()
        #expect(try etcdctl(server, ["get", "\(prefix)level", "--print-value-only"]) == "\"debug\"\n")
        #expect(problems.all.isEmpty, "\(problems.all)")
        observation.invalidate()
    }

    /// What can be wrong with a TLS connection to etcd, each made with `openssl`.
    enum Fault: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// The member's certificate is signed by a CA the suite does not trust.
        case wrongCA
        /// The member's certificate, from the CA trusted, is for another name.
        case wrongName
        /// The member's certificate, from the CA trusted, has expired.
        case expired
        /// The member asks for a client certificate, and the suite has none.
        case noClientCertificate

        var testDescription: String { rawValue }

        /// What the refusal must say.
        var said: String {
            switch self {
            case .wrongCA: "its certificate is not signed by the CA trusted"
            case .wrongName:
                "its certificate is for another name: it does not name 127.0.0.1 (it names etcd.example.com)"
            case .expired: "its certificate expired on "
            case .noClientCertificate: "it asks for a client certificate, and none was given"
            }
        }
    }

    /// Each refusal names its cause, when the suite opens and when it writes; a write it stopped
    /// was never sent, so it is never said to be one that "may or may not be stored", and etcd
    /// holds nothing.
    @Test(arguments: Fault.allCases)
    func aRefusedHandshakeNamesItsCauseAndStoresNothing(_ fault: Fault) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("DefaultsEtcdTLS-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        var files = try TestCertificates(in: folder)
        if fault == .wrongName { files.server = "wrong-name-server" }
        if fault == .expired { files.server = "expired-server" }
        let server = try EtcdServer(tls: files)
        let prefix = "/config/refused/"
        let tls =
            switch fault {
            case .wrongCA:
                EtcdTLS(
                    certificateAuthority: files.otherAuthority,
                    clientCertificate: files.clientCertificate,
                    clientKey: files.clientKey
                )
            case .wrongName, .expired:
                EtcdTLS(
                    certificateAuthority: files.authority,
                    clientCertificate: files.clientCertificate,
                    clientKey: files.clientKey
                )
            case .noClientCertificate: EtcdTLS(certificateAuthority: files.authority)
            }
        let backend = EtcdBackend(endpoints: [server.clientURL], prefix: prefix, cache: .none, tls: tls)
        let refusal = #expect(throws: Defaults.StorageError.self) { try backend.load() }
        #expect(refusal?.description.contains(fault.said) == true, "\(String(describing: refusal))")

        let problems = Received<String>()
        let suite = Defaults.Suite(backend: backend) { problems.append($0.description) }
        suite[Defaults.Key<Int>("rateLimit", default: 100, suite: suite)] = 5
        let failure = #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
        #expect(failure?.description.contains(fault.said) == true, "\(String(describing: failure))")
        #expect(failure?.description.contains("may or may not") == false, "\(String(describing: failure))")
        // What the suite reported meanwhile (the load that failed, a retry) says so too.
        #expect(await problems.wait { !$0.isEmpty })
        #expect(problems.all.allSatisfy { $0.contains(fault.said) }, "\(problems.all)")
        // NB: etcdctl would refuse the member's certificate too: it is told to look past it.
        let held = try etcdctl(
            endpoints: [server.clientURL],
            [
                "--cacert", files.authority.path, "--cert", files.clientCertificate.path, "--key",
                files.clientKey.path, "--insecure-skip-tls-verify", "get", "--prefix", "--keys-only", prefix,
            ]
        )
        #expect(held == "")
    }

    /// A member stopped (SIGSTOP) before the handshake: the request never goes out, so a write is
    /// "out of reach", never one that "may or may not be stored", and etcd, let go, holds nothing.
    @Test func aWriteWhoseHandshakeStalledIsNotSaidToMaybeBeStored() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("DefaultsEtcdTLS-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = try TestCertificates(in: folder)
        let server = try EtcdServer(tls: files)
        let prefix = "/config/stalled/"
        let tls = EtcdTLS(
            certificateAuthority: files.authority,
            clientCertificate: files.clientCertificate,
            clientKey: files.clientKey
        )
        server.stall()
        defer { server.resume() }
        // NB: the backend alone, made while the member is stopped: no connection is open yet.
        let backend = EtcdBackend(
            endpoints: [server.clientURL],
            prefix: prefix,
            timeout: .seconds(2),
            cache: .none,
            tls: tls
        )
        let failure = #expect(throws: Defaults.StorageError.self) {
            _ = try backend.commit(Defaults.BackendChanges(values: ["rateLimit": .number("5")]))
        }
        #expect(failure?.description.contains("etcd is out of reach") == true, "\(String(describing: failure))")
        #expect(failure?.description.contains("may or may not") == false, "\(String(describing: failure))")
        server.resume()
        #expect(try etcdctl(server, ["get", "--prefix", "--keys-only", prefix]) == "")
    }
}
