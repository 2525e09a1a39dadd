import Defaults
import DefaultsEtcd
import Foundation
import Logging

/// The value given after `name` on the command line.
func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    return arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}

/// The service's settings: the suite named `greeter-service`, the file `--settings` names, or the
/// keys under a prefix in etcd that `--etcd` names (every instance given the same address shares
/// them): `--etcd 'etcd://127.0.0.1:2379/config/greeter/?user=greeter&password-credential=etcd-password'`
/// logs in with the password systemd put in `$CREDENTIALS_DIRECTORY/etcd-password`.
let settings: Defaults.Suite = {
    do {
        if let address = option("--etcd") {
            let etcd = try EtcdSuiteAddress(address)
            return Defaults.Suite(
                etcd: etcd.endpoints,
                prefix: etcd.prefix,
                tls: etcd.tls,
                credentials: etcd.credentials
            )
        }
        if let path = option("--settings") { return Defaults.Suite(fileURL: URL(fileURLWithPath: path)) }
        return try Defaults.Suite(name: "greeter-service")
    } catch {
        say("greeter-service: \(error)")
        exit(2)
    }
}()

extension Defaults.Keys {
    static let greeting = Key<String>(
        "greeting",
        default: "Hello",
        suite: settings,
        summary: "The word each answer starts with"
    )
    static let shout = Key<Bool>("shout", default: false, suite: settings, summary: "Answer in capitals")
    static let rateLimit = Key<Int>(
        "rateLimit",
        default: 100,
        suite: settings,
        summary: "Requests answered per minute; more get 429"
    )
    static let logLevel = Key<Logger.Level>("logLevel", default: .info, suite: settings, summary: "The log level")
    static let visits = Key<Int>("visits", default: 0, suite: settings, summary: "POST /visits so far")
    /// A secret: read from `$CREDENTIALS_DIRECTORY/database.password` (systemd's
    /// `LoadCredential=database.password:/etc/greeter/db-password`), never from the settings file.
    static let databasePassword = Key<String>(
        secret: "database.password",
        suite: settings,
        summary: "The database password, a systemd credential"
    )
}

/// Prints `line` at once, also when standard output is a pipe (and nothing when nobody reads it).
func say(_ line: String) {
    try? FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8))
}
