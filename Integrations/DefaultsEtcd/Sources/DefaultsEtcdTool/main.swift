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

/// The backend an `etcd://` or `etcds://` argument names, with etcdctl's environment variables
/// for what it does not say (see `EtcdBackend.init(commandLineAddress:environment:)`).
@Sendable func backend(_ argument: String) throws -> any Defaults.Backend {
    try EtcdBackend(commandLineAddress: argument)
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
