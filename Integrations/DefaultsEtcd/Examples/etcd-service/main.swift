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
// Where etcd is: `ETCD_ENDPOINTS` (or etcdctl's `ETCDCTL_ENDPOINTS`), client URLs separated by
// commas, all `http://` or all `https://`. Over TLS the files come from etcdctl's own variables,
// as for `defaults-etcd`: `ETCDCTL_CACERT`, and `ETCDCTL_CERT` with `ETCDCTL_KEY` for a cluster
// that asks for a client certificate. On a cluster with authentication on, `ETCD_USER=billing`
// names the user; its password is read from `ETCD_PASSWORD_FILE`, or from `etcd-password` in
// `$CREDENTIALS_DIRECTORY` (where systemd's `LoadCredential=etcd-password:/etc/billing/etcd-password`
// puts it; the current directory when that is unset). Without `ETCD_USER`, etcdctl's `ETCDCTL_USER`
// and `ETCDCTL_PASSWORD` are taken. `--help` says all this.
//
// With `--set <int>` it writes the rate limit itself, for every other instance to see, and exits.
// With `--reloads <n>` it exits after n reloads.
//
// Every error is one line on standard error, starting `etcd-service: `. Exit status: 0 done; 2
// wrong arguments or endpoints (the line says which); 3 the settings could not be read at start,
// from etcd or from the values last seen (etcd refused the user, could not be reached, or a
// password or TLS file could not be read, and this machine never read them), or the rate limit
// was not stored (etcd refused it, could not be
// reached, or may or may not have stored it: the line says which). Once serving, a problem (etcd
// out of reach, the watch reconnecting, the password refused after a restart of etcd) is one line,
// and the service goes on with the settings it has: it catches up by itself once etcd answers or
// the password file is mended.
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

/// Says `line` on standard error.
func complain(_ line: String) {
    FileHandle.standardError.write(Data("etcd-service: \(line)\n".utf8))
}

/// Says `line` on standard error, and exits with `status`.
func fail(_ status: Int32, _ line: String) -> Never {
    complain(line)
    exit(status)
}

/// What the command line asks for.
enum Mode {
    /// Run, reloading on every change, until `reloads` reloads.
    case serve(reloads: Int)
    /// Write the rate limit, and exit.
    case set(Int)
}

/// What `--help` prints.
let help = """
    usage: etcd-service [--set <rate limit> | --reloads <count>]

    Prints the rate limit and log level kept in etcd under /config/billing/, then one line each time
    they change. --set writes the rate limit and exits; --reloads exits after that many reloads.

    ETCD_ENDPOINTS (or ETCDCTL_ENDPOINTS)  client URLs, comma-separated (default http://127.0.0.1:2379)
    ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY  TLS files, as etcdctl takes them
    ETCD_USER                              the user, when etcd's authentication is on; its password is
                                           read from ETCD_PASSWORD_FILE, or else from etcd-password in
                                           $CREDENTIALS_DIRECTORY (in the current directory when unset)
    ETCDCTL_USER, ETCDCTL_PASSWORD         the user and password without ETCD_USER, as etcdctl takes them

    Exit status: 0 done; 2 wrong arguments or endpoints; 3 the settings could not be read at start
    (etcd refused the user, could not be reached, or a password or TLS file could not be read, and
    none were seen here before), or the rate limit was not stored.
    """

/// The mode `arguments` ask for; exits with status 2 when they are not understood.
func mode(_ arguments: [String]) -> Mode {
    let usage = "usage: etcd-service [--set <rate limit> | --reloads <count>]"
    if arguments == ["--help"] || arguments == ["-h"] {
        print(help)
        exit(0)
    }
    switch arguments.count {
    case 0: return .serve(reloads: .max)
    case 2:
        guard let number = Int(arguments[1]) else {
            fail(2, "\(arguments[0]) takes a whole number, not \"\(arguments[1])\"; \(usage)")
        }
        if arguments[0] == "--set" { return .set(number) }
        if arguments[0] == "--reloads", number > 0 { return .serve(reloads: number) }
        fail(2, usage)
    default:
        fail(2, usage)
    }
}

/// The address of the settings in etcd, as `defaults-etcd` takes it (`etcd://` or `etcds://`, the
/// members, the prefix, and the user), from `environment`; exits with status 2 for endpoints that
/// are not client URLs.
func address(in environment: [String: String]) -> String {
    let listed = environment["ETCD_ENDPOINTS"] ?? environment["ETCDCTL_ENDPOINTS"] ?? "http://127.0.0.1:2379"
    // As etcdctl takes them: `host:port` alone is reached over TLS when a CA is given.
    let bare = environment["ETCDCTL_CACERT"] == nil ? "http://" : "https://"
    let endpoints = listed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
    let urls = endpoints.compactMap { URL(string: $0.contains("://") ? $0 : bare + $0) }
    let schemes = Set(urls.map { $0.scheme ?? "" })
    guard !urls.isEmpty, urls.count == endpoints.count, schemes == ["http"] || schemes == ["https"],
        urls.allSatisfy({ $0.host != nil && $0.port != nil })
    else {
        fail(
            2,
            "ETCD_ENDPOINTS must list client URLs, all http:// or all https://, as http://127.0.0.1:2379, not \"\(listed)\""
        )
    }
    let members = urls.map { "\($0.host!):\($0.port!)" }.joined(separator: ",")
    var text = "\(schemes == ["https"] ? "etcds" : "etcd")://\(members)/config/billing/"
    if let user = environment["ETCD_USER"] {
        let file =
            environment["ETCD_PASSWORD_FILE"]
            ?? URL(fileURLWithPath: environment["CREDENTIALS_DIRECTORY"] ?? ".").appendingPathComponent("etcd-password")
            .path
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+%")
        func encoded(_ value: String) -> String { value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value }
        text += "?user=\(encoded(user))&password-file=\(encoded(URL(fileURLWithPath: file).path))"
    }
    return text
}

let environment = ProcessInfo.processInfo.environment
let asked = mode(Array(CommandLine.arguments.dropFirst()))
/// A backend over the settings; exits with status 2 for an address it cannot use.
func openBackend() -> EtcdBackend {
    do {
        // The cache keeps the last values seen, so an instance started while etcd is out of reach
        // starts from them.
        return try EtcdBackend(
            commandLineAddress: address(in: environment),
            environment: environment,
            cache: .automatic
        )
    } catch {
        fail(2, "\(error)")
    }
}
if case .serve = asked {
    // A service never runs on settings it never read: read once before serving, from etcd or, if
    // it cannot be reached, the values last seen here. (A backend of its own, so this read's
    // problem is not said twice.)
    do {
        _ = try openBackend().load()
    } catch {
        fail(3, "the settings could not be read, and none were seen here before: \(error)")
    }
}
let backend = openBackend()
let settings = Defaults.Suite(backend: backend) { problem in
    // `--set` says its one failure when `synchronize()` throws it: not twice.
    guard case .serve = asked else { return }
    complain("problem: \(problem)")
}

extension Defaults.Keys {
    static let rateLimit = Key<Int>("rateLimit", default: 100, suite: settings)
    static let logLevel = Key<String>("logLevel", default: "info", suite: settings)
}

let limit: Int
switch asked {
case .set(let value):
    Defaults[.rateLimit] = value
    do {
        try settings.synchronize()
    } catch {
        // A write the user may not make, etcd out of reach, a commit whose outcome could not be
        // found out: each says itself.
        // The service exits here: nothing is retried, whatever the library's message says of a
        // program that goes on.
        fail(3, "rateLimit=\(value) was not stored: \(error); etcd-service exits, retrying nothing")
    }
    log("rateLimit=\(value) written")
    exit(0)
case .serve(let reloads):
    limit = reloads
}

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
