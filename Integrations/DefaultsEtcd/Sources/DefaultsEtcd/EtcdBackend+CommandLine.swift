import Defaults
import Foundation

extension EtcdBackend {
    /// The backend of the suite an `etcd://` or `etcds://` address names, as a command-line tool
    /// opens it (``EtcdSuiteAddress``): with no cache unless `cache` says, so a tool shows what etcd
    /// holds or says it cannot reach it.
    ///
    /// Over TLS, the files the address does not name come from etcdctl's own environment
    /// variables (`ETCDCTL_CACERT`, `ETCDCTL_CERT`, `ETCDCTL_KEY`), and so does the user
    /// (`ETCDCTL_USER`, as `user` or `user:password`, and `ETCDCTL_PASSWORD`) when the address
    /// names none, so a shell set up for etcdctl works as is. The `defaults` command with etcd
    /// (`defaults-etcd`) and `defaults-editor-etcd` open their suites so.
    ///
    /// - Parameters:
    ///   - address: The suite's address, as `etcd://127.0.0.1:2379/config/billing/`.
    ///   - environment: Where etcdctl's variables are read.
    ///   - cache: Where to keep the last values seen; a service that runs on (the package's
    ///     `etcd-service` example) gives `.automatic`, to start from them while etcd is out of reach.
    /// - Throws: ``EtcdSuiteAddress/Invalid`` for an address that is not one, and an error saying
    ///   so for a user without a password.
    public convenience init(
        commandLineAddress address: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        cache: CacheLocation = .none
    ) throws {
        var parsed = try EtcdSuiteAddress(address)
        if var tls = parsed.tls {
            func file(_ name: String) -> URL? { environment[name].map { URL(fileURLWithPath: $0) } }
            tls.certificateAuthority = tls.certificateAuthority ?? file("ETCDCTL_CACERT")
            if tls.clientCertificate == nil, tls.clientKey == nil {
                tls.clientCertificate = file("ETCDCTL_CERT")
                tls.clientKey = file("ETCDCTL_KEY")
            }
            parsed.tls = tls
        }
        self.init(
            endpoints: parsed.endpoints,
            prefix: parsed.prefix,
            cache: cache,
            tls: parsed.tls,
            credentials: try Self.commandLineCredentials(parsed, environment: environment)
        )
    }

    /// Who a tool logs in as: the address's `user=` and `password-file=`, else etcdctl's
    /// `ETCDCTL_USER` (`user` or `user:password`) and `ETCDCTL_PASSWORD`.
    private static func commandLineCredentials(
        _ address: EtcdSuiteAddress,
        environment: [String: String]
    ) throws -> EtcdCredentials? {
        var user = address.user
        var password = environment["ETCDCTL_PASSWORD"]
        if user == nil, let named = environment["ETCDCTL_USER"], !named.isEmpty {
            // As etcdctl reads it: `user:password` only when no password is given apart.
            if password == nil, let colon = named.firstIndex(of: ":") {
                user = String(named[..<colon])
                password = String(named[named.index(after: colon)...])
            } else {
                user = named
            }
        }
        guard let user else { return nil }
        if let file = address.passwordFile { return EtcdCredentials(user: user, passwordFile: file) }
        guard let password else { throw NoPassword(user: user) }
        return EtcdCredentials(user: user, password: password)
    }
}

/// A user named without a password.
private struct NoPassword: Error, CustomStringConvertible {
    let user: String
    var description: String {
        "user \(user) has no password: give password-file= in the address, or set ETCDCTL_PASSWORD"
    }
}
