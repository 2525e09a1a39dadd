import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

/// Why a TLS handshake failed, said as its cause: the member's certificate expired, is for another
/// name, or is signed by a CA not trusted; the member asked for a client certificate and got none,
/// or refused the one given.
///
/// NIOSSL says "certificate verify failed" for every fault of the member's certificate, so the
/// cause is found by looking at the certificates themselves: the member's, fetched by a handshake
/// of its own that trusts nothing and sends nothing, and the files the backend was given.
extension EtcdClient {
    /// What a TLS failure at `endpoint` means, said plainly; `nil` for an error that is not the
    /// refusal of a handshake.
    ///
    /// Every refusal named here comes before etcd reads a byte of the request, so a change it
    /// stopped was certainly not applied. A connection cut mid-answer over TLS (NIOSSL's unclean
    /// shutdown) is no refusal: the request may have reached etcd.
    func tlsRefusal(_ error: any Error, at endpoint: URL) -> String? {
        let said = "\(error)"
        let host = endpoint.host ?? "the member"
        if let error = error as? NIOSSLExtraError, said.contains("failedToValidateHostname") {
            let names = presentedCertificates(at: endpoint)?.first.flatMap(Self.names(in:))
            return "its certificate is for another name: it does not name \(host)"
                + (names.map { " (it names \($0))" } ?? "") + " (\(error))"
        }
        if said.contains("CERTIFICATE_VERIFY_FAILED") || said.contains("certificate verify failed") {
            return memberCertificateProblem(at: endpoint) + " (\(said))"
        }
        if Self.clientCertificateAlerts.contains(where: { said.contains($0) }) {
            return clientCertificateProblem() + " (\(said))"
        }
        if case NIOSSLError.handshakeFailed = error { return "the TLS handshake failed (\(said))" }
        return nil
    }

    /// `error`, or a ``Failure`` naming its cause when it is a refused handshake at the endpoint
    /// `index`: what a watch that could not connect fails with.
    func explained(_ error: any Error, at index: Int) -> any Error {
        guard let refusal = tlsRefusal(error, at: endpoints[index]) else { return error }
        return Failure(reason: "\(endpoints[index].absoluteString): \(refusal)")
    }

    /// The alerts a member sends when it refuses the client's certificate, or its lack of one.
    private static let clientCertificateAlerts = [
        "CERTIFICATE_REQUIRED", "BAD_CERTIFICATE", "UNKNOWN_CA", "CERTIFICATE_EXPIRED", "CERTIFICATE_UNKNOWN",
        "UNSUPPORTED_CERTIFICATE",
    ]

    /// What is wrong with the certificate the member at `endpoint` presents, which the CA given
    /// did not vouch for.
    private func memberCertificateProblem(at endpoint: URL) -> String {
        let now = time(nil)
        let authority = tlsFiles?.certificateAuthority
        let trusted = authority.map { "the CA trusted (\($0.path))" } ?? "a CA the system trusts"
        for certificate in presentedCertificates(at: endpoint) ?? [] {
            if certificate.notValidAfter < now {
                return "its certificate expired on \(Self.date(certificate.notValidAfter))"
            }
            if certificate.notValidBefore > now {
                return "its certificate is not valid before \(Self.date(certificate.notValidBefore))"
            }
        }
        if let authority, let authorities = try? NIOSSLCertificate.fromPEMFile(authority.path) {
            if let expired = authorities.first(where: { $0.notValidAfter < now }) {
                return "\(trusted) expired on \(Self.date(expired.notValidAfter))"
            }
        }
        return "its certificate is not signed by \(trusted)"
    }

    /// Why the member refused the client's certificate, or its lack of one.
    private func clientCertificateProblem() -> String {
        guard let certificate = tlsFiles?.clientCertificate, tlsFiles?.clientKey != nil else {
            return
                "it asks for a client certificate, and none was given (EtcdTLS's clientCertificate and clientKey, etcdctl's --cert and --key)"
        }
        let now = time(nil)
        if let certificates = try? NIOSSLCertificate.fromPEMFile(certificate.path) {
            if let expired = certificates.first(where: { $0.notValidAfter < now }) {
                return
                    "it refused the client certificate, which expired on \(Self.date(expired.notValidAfter)) (\(certificate.path))"
            }
            if let early = certificates.first(where: { $0.notValidBefore > now }) {
                return
                    "it refused the client certificate, which is not valid before \(Self.date(early.notValidBefore)) (\(certificate.path))"
            }
        }
        return
            "it refused the client certificate (\(certificate.path)): it asks for one signed by a CA it trusts (its --trusted-ca-file)"
    }

    /// The certificates the member at `endpoint` presents, from a handshake that stops once it has
    /// them (it sends no certificate and no request); `nil` when none came within the timeout.
    func presentedCertificates(at endpoint: URL) -> [NIOSSLCertificate]? {
        guard let host = endpoint.host else { return nil }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .noHostnameVerification
        guard let context = try? NIOSSLContext(configuration: configuration) else { return nil }
        let loop = HTTPClient.defaultEventLoopGroup.next()
        let presented = loop.makePromise(of: [NIOSSLCertificate].self)
        let connected = ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(
                        context: context,
                        serverHostname: nil,
                        customVerificationCallback: { chain, verdict in
                            presented.succeed(chain)
                            verdict.succeed(NIOSSLVerificationResult.failed)
                        }
                    )
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(host: host, port: endpoint.port ?? 2379)
        connected.whenFailure { presented.fail($0) }
        connected.whenSuccess { channel in
            // A handshake that ends without a chain (the member closed it) fails it too.
            channel.closeFuture.whenComplete { _ in presented.fail(ChannelError.alreadyClosed) }
        }
        let deadline = loop.scheduleTask(in: timeout) { presented.fail(ChannelError.connectTimeout(self.timeout)) }
        defer {
            deadline.cancel()
            connected.whenSuccess { channel in channel.close(promise: nil) }
        }
        return try? presented.futureResult.wait()
    }

    /// The names a certificate is for, as NIOSSL lists them; `nil` if it lists none.
    private static func names(in certificate: NIOSSLCertificate) -> String? {
        let description = certificate.description
        guard let start = description.range(of: "alternative_names=")?.upperBound else { return nil }
        let names = description[start...].prefix { $0 != ">" && $0 != ";" }
        return names.isEmpty ? nil : names.split(separator: ",").joined(separator: ", ")
    }

    /// `seconds` since 1970, as a date a person reads (UTC).
    private static func date(_ seconds: time_t) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}
