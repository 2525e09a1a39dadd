// The `defaults` command, knowing suites in etcd besides files:
//
//     defaults read etcd://127.0.0.1:2379/config/billing/
//     defaults write etcd://127.0.0.1:2379/config/billing/ rateLimit 400
//     defaults watch etcd://127.0.0.1:2379/config/billing/
//
// Every command works on such a suite as on a file, with the same output and exit statuses; see
// `defaults help`. The command is the root package's; this file only adds the scheme.
import Defaults
import DefaultsCommandLine
import DefaultsEtcd
import Foundation

/// The backend an `etcd://` or `etcds://` argument names.
///
/// Over TLS, the files not in the address come from etcdctl's own environment variables
/// (`ETCDCTL_CACERT`, `ETCDCTL_CERT`, `ETCDCTL_KEY`), and so does the user (`ETCDCTL_USER`,
/// `ETCDCTL_PASSWORD`), so a shell set up for etcdctl works as is.
@Sendable func backend(_ argument: String) throws -> any Defaults.Backend {
    var address = try EtcdSuiteAddress(argument)
    if var tls = address.tls {
        let environment = ProcessInfo.processInfo.environment
        func file(_ name: String) -> URL? { environment[name].map { URL(fileURLWithPath: $0) } }
        tls.certificateAuthority = tls.certificateAuthority ?? file("ETCDCTL_CACERT")
        if tls.clientCertificate == nil, tls.clientKey == nil {
            tls.clientCertificate = file("ETCDCTL_CERT")
            tls.clientKey = file("ETCDCTL_KEY")
        }
        address.tls = tls
    }
    // No cache: the command shows what etcd holds, or says it cannot reach it.
    return EtcdBackend(
        endpoints: address.endpoints,
        prefix: address.prefix,
        cache: .none,
        tls: address.tls,
        credentials: try credentials(address)
    )
}

/// Who the command logs in as: the address's `user=` and `password-file=`, else etcdctl's
/// `ETCDCTL_USER` (`user` or `user:password`) and `ETCDCTL_PASSWORD`.
func credentials(_ address: EtcdSuiteAddress) throws -> EtcdCredentials? {
    let environment = ProcessInfo.processInfo.environment
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
    guard let password else {
        throw NoPassword(user: user)
    }
    return EtcdCredentials(user: user, password: password)
}

/// A user named without a password.
struct NoPassword: Error, CustomStringConvertible {
    let user: String
    var description: String {
        "user \(user) has no password: give password-file= in the address, or set ETCDCTL_PASSWORD"
    }
}

let etcd = DefaultsCommand.Scheme("etcd", example: "etcd://127.0.0.1:2379/config/billing/ (members, then a key prefix)")
{
    try backend($0)
}
let etcds = DefaultsCommand.Scheme(
    "etcds",
    example: "etcds://127.0.0.1:2379/config/billing/?cacert=ca.pem&cert=client.pem&key=client-key.pem (over TLS)"
) { try backend($0) }
exit(DefaultsCommand.main(Array(CommandLine.arguments.dropFirst()), schemes: [etcd, etcds]))
