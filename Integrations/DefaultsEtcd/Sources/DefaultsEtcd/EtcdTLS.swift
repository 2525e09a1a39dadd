import Foundation
import NIOSSL

/// How a backend reaches etcd over TLS: the members' client URLs are `https`, and these files say
/// whom to trust and, for a cluster that asks for one, who the backend is.
///
/// ```swift
/// let tls = EtcdTLS(
///     certificateAuthority: URL(fileURLWithPath: "/etc/etcd/ca.pem"),
///     clientCertificate: URL(fileURLWithPath: "/etc/billing/etcd-client.pem"),
///     clientKey: URL(fileURLWithPath: "/etc/billing/etcd-client-key.pem")
/// )
/// let backend = EtcdBackend(endpoints: [URL(string: "https://10.0.0.5:2379")!],
///                           prefix: "/config/billing/", tls: tls)
/// ```
///
/// The files are PEM, as etcd's own `--trusted-ca-file`, `--cert-file` and `--key-file` are, and
/// as etcdctl's `--cacert`, `--cert` and `--key` take them. The client certificate and key are read
/// when the backend is made (a file that cannot be read then fails every call, saying so); the CA
/// file at each new connection.
///
/// A client certificate for a cluster with authentication on must have no Common Name: etcd's JSON
/// gateway, which the backend speaks, refuses a request whose certificate has one ("CommonName of
/// client sending a request against gateway will be ignored"), since it cannot log the user in from
/// it. Over the gateway a certificate proves the client may connect; a user and password say who
/// it is.
public struct EtcdTLS: Sendable, Hashable {
    /// The CA certificates, in one PEM file, that sign the members' certificates; `nil`: the
    /// system's trusted CAs.
    public var certificateAuthority: URL?
    /// The backend's certificate (PEM), for a cluster started with `--client-cert-auth`.
    public var clientCertificate: URL?
    /// The private key (PEM) of ``clientCertificate``.
    public var clientKey: URL?

    /// Trusts the CA in `certificateAuthority` (the system's if `nil`), and presents
    /// `clientCertificate` with `clientKey` when both are given.
    public init(certificateAuthority: URL? = nil, clientCertificate: URL? = nil, clientKey: URL? = nil) {
        self.certificateAuthority = certificateAuthority
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
    }

    /// NIOSSL's configuration of a client connection, with the client certificate and key read.
    ///
    /// - Throws: NIOSSL's error when a file cannot be read or is not PEM.
    func configuration() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let certificateAuthority { configuration.trustRoots = .file(certificateAuthority.path) }
        if let clientCertificate, let clientKey {
            configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(clientCertificate.path)
                .map { .certificate($0) }
            configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: clientKey.path, format: .pem))
        }
        return configuration
    }
}
