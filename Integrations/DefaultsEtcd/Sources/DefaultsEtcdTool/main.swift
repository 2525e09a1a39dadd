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

let etcd = DefaultsCommand.Scheme("etcd", example: "etcd://127.0.0.1:2379/config/billing/ (members, then a key prefix)")
{
    argument in
    let address = try EtcdSuiteAddress(argument)
    // NB: no cache: the command shows what etcd holds, or says it cannot reach it.
    return EtcdBackend(endpoints: address.endpoints, prefix: address.prefix, cache: .none)
}
exit(DefaultsCommand.main(Array(CommandLine.arguments.dropFirst()), schemes: [etcd]))
