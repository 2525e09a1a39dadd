import Benchmark
import Configuration
@_spi(Benchmarks) import Defaults
import DefaultsConfiguration
import DefaultsObservation
import Foundation
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// MARK: GSettings

/// GLib's GSettings with its keyfile backend, the reference on this platform: each write is a
/// `gsettings set` (a process that writes the keyfile and exits), watched by `gsettings monitor`.
///
/// Registered only where Debian's libglib2.0-bin is installed. "latency" is measured from the
/// `gsettings set` process's exit (its write is done by then) to the monitor's line.
func gsettingsLatency() {
    let tools = ["/usr/bin/gsettings", "/usr/bin/glib-compile-schemas", "/usr/bin/stdbuf"]
    guard tools.allSatisfy({ FileManager.default.isExecutableFile(atPath: $0) }) else { return }
    Benchmark(
        "CrossProcess/GSettings keyfile (gsettings set, gsettings monitor), 100 keys",
        configuration: latencyConfiguration(.microseconds, warmup: 5, maxDuration: .seconds(60), writes: 300)
    ) { benchmark, fixture in
        var value = fixture.round.value
        for _ in benchmark.scaledIterations {
            value += 1
            let called = monotonicNanoseconds()
            spawnAndWait(
                ["/usr/bin/gsettings", "set", "org.defaults.bench", "stamp", "\(value)"],
                environment: fixture.environment
            )
            let returned = monotonicNanoseconds()
            let arrived = fixture.arrivals.time(of: value)
            benchmark.measurement(latencyMetric, max(0, arrived - returned))
            benchmark.measurement(earlyMetric, max(0, returned - arrived))
            benchmark.measurement(endToEndMetric, arrived - called)
        }
        fixture.round.value = value
    } setup: { () throws -> (environment: [String: String], arrivals: Arrivals, round: Box<Int>, monitor: Process) in
        let root = Scratch.url("gsettings")
        let schemas = root.appendingPathComponent("schemas")
        let keyfile = root.appendingPathComponent("config/glib-2.0/settings/keyfile")
        try FileManager.default.createDirectory(at: schemas, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: keyfile.deletingLastPathComponent(),
            withIntermediateDirectories: true
        )
        // The same shape as the other 100-key file: 99 strings and the stamp.
        let keys = (0..<99).map { #"<key name="setting-\#($0)" type="s"><default>''</default></key>"# }.joined()
        let schema =
            #"<schemalist><schema id="org.defaults.bench" path="/org/defaults/bench/">"#
            + keys + #"<key name="stamp" type="i"><default>0</default></key></schema></schemalist>"#
        try Data(schema.utf8).write(to: schemas.appendingPathComponent("org.defaults.bench.gschema.xml"))
        precondition(spawnAndWait(["/usr/bin/glib-compile-schemas", schemas.path], environment: [:]) == 0)
        let values = (0..<99).map { "setting-\($0)='value \($0)'\n" }.joined()
        try Data(("[org/defaults/bench]\n" + values + "stamp=0\n").utf8).write(to: keyfile)
        let environment = [
            "GSETTINGS_SCHEMA_DIR": schemas.path,
            "GSETTINGS_BACKEND": "keyfile",
            "XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
            "PATH": "/usr/bin:/bin",
        ]
        let arrivals = Arrivals()
        // NB: through a shell that kills the monitor once this process is gone: the monitor must not
        // outlive the benchmark, holding its pipes open. SIGKILL: it inherits blocked signals.
        let monitor = Process()
        monitor.executableURL = URL(fileURLWithPath: "/bin/sh")
        monitor.arguments = [
            "-c",
            "/usr/bin/stdbuf -oL /usr/bin/gsettings monitor org.defaults.bench stamp & "
                + "while kill -0 $PPID 2>/dev/null; do sleep 1; done; kill -9 $!",
        ]
        monitor.environment = environment
        let output = Pipe()
        monitor.standardOutput = output
        monitor.standardInput = FileHandle.nullDevice
        monitor.standardError = FileHandle.nullDevice
        try monitor.run()
        let reader = Thread {
            var pending: [UInt8] = []
            while true {
                let data = output.fileHandleForReading.availableData
                if data.isEmpty { return }
                pending.append(contentsOf: data)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    // "stamp: 42"
                    if let value = Int(line.split(separator: " ").last ?? "") { arrivals.record(value) }
                }
            }
        }
        reader.start()
        // The monitor needs a moment to start watching: write until it reports a change.
        var probe = -1
        while true {
            spawnAndWait(
                ["/usr/bin/gsettings", "set", "org.defaults.bench", "stamp", "\(probe)"],
                environment: environment
            )
            if arrivals.time(of: probe, within: .now() + .milliseconds(200)) != nil { break }
            probe -= 1
        }
        return (environment, arrivals, Box(0), monitor)
    }
}
