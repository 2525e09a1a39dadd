// A service whose rate limit and log level live in etcd, shared by all its instances: it prints
// them at start and again whenever any instance, or an operator with `etcdctl put`, changes them.
//
//     ETCD_ENDPOINTS=http://127.0.0.1:2379 swift run --package-path Integrations/DefaultsEtcd etcd-service
//     etcdctl put /config/billing/rateLimit 400        # in another terminal: the service prints it
//
// With `--set <int>` it writes the rate limit itself, for every other instance to see, and exits.
// With `--changes <n>` it exits after printing n changes.
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

let endpoints = (ProcessInfo.processInfo.environment["ETCD_ENDPOINTS"] ?? "http://127.0.0.1:2379")
    .split(separator: ",").compactMap { URL(string: String($0)) }
let settings = Defaults.Suite(etcd: endpoints, prefix: "/config/billing/") { problem in
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
let limit = arguments.firstIndex(of: "--changes").flatMap { Int(arguments[$0 + 1]) } ?? Int.max

log("rateLimit=\(Defaults[.rateLimit]) logLevel=\(Defaults[.logLevel])")
let done = DispatchSemaphore(value: 0)
let seen = Mutex(0)
// One callback per change, whichever instance made it: the service applies the new settings here.
let observation = Defaults.observe(keys: .rateLimit, .logLevel, options: []) {
    log("changed: rateLimit=\(Defaults[.rateLimit]) logLevel=\(Defaults[.logLevel])")
    if seen.withLock({
        $0 += 1
        return $0
    }) >= limit {
        done.signal()
    }
}
done.wait()
observation.invalidate()
