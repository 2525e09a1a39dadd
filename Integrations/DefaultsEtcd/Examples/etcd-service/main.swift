// A service whose rate limit and log level live in etcd, shared by all its instances: it prints
// them at start, and reloads once whenever any instance or an operator changes them; changes that
// come within half a second of each other make one reload. Start it in several terminals:
//
//     ETCD_ENDPOINTS=http://127.0.0.1:2379 swift run --package-path Integrations/DefaultsEtcd etcd-service
//
// then, in another, change a setting: every instance prints one `reloaded:` line.
//
//     etcdctl put /config/billing/rateLimit 400
//     swift run --package-path Integrations/DefaultsEtcd defaults-etcd write \
//         etcd://127.0.0.1:2379/config/billing/ logLevel --string debug
//
// On a cluster with authentication on, `ETCD_USER=billing` names the user; its password is read
// from `ETCD_PASSWORD_FILE`, or from `etcd-password` in `$CREDENTIALS_DIRECTORY` (where systemd's
// `LoadCredential=etcd-password:/etc/billing/etcd-password` puts it).
//
// With `--set <int>` it writes the rate limit itself, for every other instance to see, and exits.
// With `--reloads <n>` it exits after n reloads.
import Defaults
import DefaultsEtcd
import DefaultsObservation
import Foundation
import Synchronization

/// Prints `line` at once, even into a pipe (a log collector), so each change shows as it happens.
func log(_ line: String) {
    print(line)
    fflush(nil)
}

let environment = ProcessInfo.processInfo.environment
let endpoints = (environment["ETCD_ENDPOINTS"] ?? "http://127.0.0.1:2379")
    .split(separator: ",").compactMap { URL(string: String($0)) }
let credentials = environment["ETCD_USER"]
    .map { user in
        let file = environment["ETCD_PASSWORD_FILE"] ?? "\(environment["CREDENTIALS_DIRECTORY"] ?? ".")/etcd-password"
        return EtcdCredentials(user: user, passwordFile: URL(fileURLWithPath: file))
    }
let settings = Defaults.Suite(etcd: endpoints, prefix: "/config/billing/", credentials: credentials) { problem in
    log("problem: \(problem)")
}

extension Defaults.Keys {
    static let rateLimit = Key<Int>("rateLimit", default: 100, suite: settings)
    static let logLevel = Key<String>("logLevel", default: "info", suite: settings)
}

let arguments = CommandLine.arguments
if let index = arguments.firstIndex(of: "--set"), index + 1 < arguments.count, let value = Int(arguments[index + 1]) {
    Defaults[.rateLimit] = value
    try settings.synchronize()
    log("rateLimit=\(value) written")
    exit(0)
}
let limit = arguments.firstIndex(of: "--reloads").flatMap { Int(arguments[$0 + 1]) } ?? Int.max

let done = DispatchSemaphore(value: 0)
let reloads = Mutex(0)
// One callback once the settings have been quiet for half a second, whichever instance or operator
// changed them and however many changes came: the service applies the new settings here.
let observation = Defaults.observe(
    keys: [Defaults.Keys.rateLimit, Defaults.Keys.logLevel],
    debounce: .milliseconds(500)
) { changes in
    let names = changes.map(\.name).sorted().joined(separator: ",")
    log("reloaded (\(names)): rateLimit=\(Defaults[.rateLimit]) logLevel=\(Defaults[.logLevel])")
    let count = reloads.withLock {
        $0 += 1
        return $0
    }
    if count >= limit { done.signal() }
}
// NB: once observing, so a change made as soon as this line is seen is reloaded.
log("rateLimit=\(Defaults[.rateLimit]) logLevel=\(Defaults[.logLevel])")
done.wait()
observation.invalidate()
