// defaults-editor-etcd: `defaults-editor` (DefaultsGtk) knowing suites in etcd too, a superset of
// it to install as `defaults-editor`:
//
//     defaults-editor-etcd etcd://127.0.0.1:2379/config/billing/ --schema billing.schema.json
//     defaults-editor-etcd <suite name | settings file>            as defaults-editor
//
// An etcd suite is opened as the `defaults-etcd` command opens it (etcdctl's environment variables
// for TLS files and the user the address does not name); it has no file beside which a program
// publishes its schema, so `--schema` names the file (without it, every value shows as JSON).
import DefaultsAdwaita
import DefaultsEtcd
import Foundation

let schemes = ["etcd", "etcds"]
    .map { name in
        DefaultsEditor.Scheme(name) { address in try EtcdBackend(commandLineAddress: address) }
    }
exit(DefaultsEditor.main(Array(CommandLine.arguments.dropFirst()), schemes: schemes))
