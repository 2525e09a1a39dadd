import Defaults
import DefaultsObservation
import Foundation
import Testing

@testable import DefaultsEtcd

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

    @Test func aWrongCAOrNoClientCertificateIsRefusedClearlyAndStoresNothing() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("DefaultsEtcdTLS-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = try TestCertificates(in: folder)
        let server = try EtcdServer(tls: files)
        let prefix = "/config/refused/"
        // A CA that did not sign etcd's certificate.
        let wrongCA = EtcdBackend(
            endpoints: [server.clientURL],
            prefix: prefix,
            cache: .none,
            tls: EtcdTLS(
                certificateAuthority: files.otherAuthority,
                clientCertificate: files.clientCertificate,
                clientKey: files.clientKey
            )
        )
        let refusal = #expect(throws: Defaults.StorageError.self) { try wrongCA.load() }
        #expect(
            refusal?.description.contains("its certificate is not signed by the CA trusted") == true,
            "\(String(describing: refusal))"
        )
        // The right CA, and no certificate of its own: etcd refuses the handshake.
        let anonymous = EtcdBackend(
            endpoints: [server.clientURL],
            prefix: prefix,
            cache: .none,
            tls: EtcdTLS(certificateAuthority: files.authority)
        )
        let suite = Defaults.Suite(backend: anonymous) { _ in }
        suite[Defaults.Key<Int>("rateLimit", default: 100, suite: suite)] = 5
        let failure = #expect(throws: Defaults.StorageError.self) { try suite.synchronize() }
        #expect(
            failure?.description.contains("it refused the handshake: it asks for a client certificate") == true,
            "\(String(describing: failure))"
        )
        #expect(try etcdctl(server, ["get", "--prefix", "--keys-only", prefix]) == "")
    }
}
