// service-reload: a service that reloads once per burst of setting changes, not once per write,
// whoever makes them: this process, another process, or a person editing the settings file.
//
//     swift run service-reload           # three bursts, then exits
//     swift run service-reload --watch   # keeps running: edit the file printed, watch it reload
//
// With --watch, a setting can be changed for one run, as a service in a container does:
//
//     SERVICE_RELOAD_WORKERS=4 swift run service-reload --watch -port 7000
//
// Its settings live in $XDG_CONFIG_HOME/service-reload/settings.json, over the system file
// /etc/xdg/service-reload/settings.json (an administrator's defaults and locks). A service in
// Kubernetes names the file its ConfigMap is mounted as, and follows every update of it:
//
//     swift run service-reload --settings-file /etc/service-reload/settings.json
//     SERVICE_RELOAD_SETTINGS_FILE=/etc/service-reload/settings.json swift run service-reload
import DefaultsObservation
import Foundation

enum Example {
    /// The file named by `--settings-file <path>` or `$SERVICE_RELOAD_SETTINGS_FILE`, or else the
    /// suite named after the service, with the system files of `$XDG_CONFIG_DIRS` beneath it.
    static let settingsFile: String? = {
        let arguments = CommandLine.arguments
        if let flag = arguments.firstIndex(of: "--settings-file"), flag + 1 < arguments.count {
            return arguments[flag + 1]
        }
        return ProcessInfo.processInfo.environment["SERVICE_RELOAD_SETTINGS_FILE"]
    }()

    static let suite: Defaults.Suite = {
        if let settingsFile { return Defaults.Suite(fileURL: URL(fileURLWithPath: settingsFile)) }
        return try! Defaults.Suite(name: "service-reload")
    }()
}

extension Defaults.Keys {
    static let host = Key<String>("host", default: "127.0.0.1", suite: Example.suite)
    static let port = Key<Int>("port", default: 8080, suite: Example.suite)
    static let workers = Key<Int>("workers", default: 2, suite: Example.suite)
    static let timeout = Key<Double>("timeout", default: 30, suite: Example.suite)
    static let logLevel = Key<String>("logLevel", default: "info", suite: Example.suite)
}

/// What one reload changed, and the port and workers it then served with.
struct Reload: Sendable {
    let names: Set<String>
    let port: Int
    let workers: Int
}

/// A service that rebuilds its configuration when settings change.
final class Service: Sendable {
    private let reloads: AsyncStream<Reload>.Continuation
    private let observation: Defaults.Observation

    init(reloads: AsyncStream<Reload>.Continuation) {
        self.reloads = reloads
        // One callback once the keys have been quiet for 100 ms, carrying every key that changed.
        observation = Defaults.observe(
            keys: .host,
            .port,
            .workers,
            .timeout,
            .logLevel,
            debounce: .milliseconds(100)
        ) { changed in
            let names = changed.map(\.name).sorted()
            print(
                "reload: \(names.joined(separator: ", ")) -> \(Defaults[.host]):\(Defaults[.port]), \(Defaults[.workers]) workers"
            )
            fflush(nil)  // One line at a time, even into a pipe.
            reloads.yield(Reload(names: Set(names), port: Defaults[.port], workers: Defaults[.workers]))
        }
    }
}

func run() async {
    Defaults.removeAll(suite: Example.suite)
    let (reloads, continuation) = AsyncStream.makeStream(of: Reload.self)
    let service = Service(reloads: continuation)
    var reloaded = reloads.makeAsyncIterator()

    print("1. A transaction changing five keys")
    Example.suite.transaction {
        Defaults[.host] = "0.0.0.0"
        Defaults[.port] = 9090
        Defaults[.workers] = 8
        Defaults[.timeout] = 10
        Defaults[.logLevel] = "debug"
    }
    _ = await reloaded.next()

    print("\n2. A burst of 1,000 writes to two keys")
    for value in 1...1000 {
        Defaults[.workers] = value
        Defaults[.port] = 10_000 + value
    }
    // NB: one reload when no write waits 100 ms for the next; on a machine so busy that this loop
    // is held up longer, a reload comes in between with what it had then. Wait for the last one.
    while let reload = await reloaded.next(), reload.workers != 1000 || reload.port != 11_000 {}

    print("\n3. An operator edits the file: logLevel and workers")
    try! Example.suite.synchronize()  // so the file holds what this process wrote
    editLikeAnOperator()
    // NB: a burst reload that fired late (see above) may still come first, or join this one.
    while let reload = await reloaded.next(), !reload.names.contains("logLevel") {}
    withExtendedLifetime(service) {}
}

/// Changes two values in the settings file the way a person with a text editor does.
///
/// It edits the text, saves it as a new file and renames it over the old one. Nothing here goes
/// through the library; the service sees it anyway.
func editLikeAnOperator() {
    let file = Example.suite.fileURL!
    var text = try! String(contentsOf: file, encoding: .utf8)
    text.replace(/"logLevel" : "[a-z]*"/, with: #""logLevel" : "warning""#)
    text.replace(/"workers" : [0-9]+/, with: #""workers" : 4"#)
    let saved = file.deletingLastPathComponent().appendingPathComponent("settings.json.saving")
    try! text.write(to: saved, atomically: false, encoding: .utf8)
    // NB: rename(2) itself: Foundation's replaceItemAt fails on Linux when both files exist.
    rename(saved.path, file.path)
}

/// Runs the service until interrupted, reloading as the file is edited or written by others.
func watch() async {
    // Values for this run only, never written to the file: `-port 7000` on the command line, or
    // SERVICE_RELOAD_PORT=7000 in the environment (the command line wins).
    Example.suite.overrideWithLaunchArguments()
    Example.suite.overrideWithEnvironment(prefix: "SERVICE_RELOAD_")
    let (reloads, continuation) = AsyncStream.makeStream(of: Reload.self)
    let service = Service(reloads: continuation)
    print(
        "serving on \(Defaults[.host]):\(Defaults[.port]) with \(Defaults[.workers]) workers, log level \(Defaults[.logLevel])"
    )
    print("watching \(Example.suite.fileURL!.path); edit it, or write to it from another process")
    let keys: [(String, Defaults.ValueSource)] = [
        ("host", Example.suite.source(of: .host)), ("port", Example.suite.source(of: .port)),
        ("workers", Example.suite.source(of: .workers)), ("timeout", Example.suite.source(of: .timeout)),
        ("logLevel", Example.suite.source(of: .logLevel)),
    ]
    for (name, source) in keys { print("  \(name) from \(source)") }
    fflush(nil)
    for await _ in reloads {}
    withExtendedLifetime(service) {}
}

// NB: a settings file named from outside (a mounted ConfigMap, say) is the service's to read, not
// this demo's to rewrite: watch it.
if CommandLine.arguments.contains("--watch") || Example.settingsFile != nil {
    await watch()
} else {
    await run()
}
