// config-service: a service whose settings come from its command line, its environment and a
// settings file, and that sees a change to the file the moment it is made.
//
//     swift run config-service                      # prints http.port and log.level, then watches
//     swift run config-service --http-port 7000     # the command line wins over the file
//     LOG_LEVEL=debug swift run config-service      # so does the environment
//
// From another shell, in the package root (the `defaults` command):
//
//     swift run defaults write config-service http.port 9090
//     swift run defaults write config-service log.level --string debug
//
// and the service prints the new value at once. Ctrl-C stops it.
import Configuration
import DefaultsConfiguration
import Foundation

#if canImport(Glibc)
import Glibc
#endif

let suite = try Defaults.Suite(name: "config-service")
let config = ConfigReader(providers: [
    CommandLineArgumentsProvider(),
    EnvironmentVariablesProvider(),
    DefaultsProvider(suite: suite),
])

print("config-service: settings in \(suite.fileURL?.path ?? "memory"); watching http.port and log.level")
fflush(nil)  // One line at a time, even into a pipe.

/// Prints `name = value` each time the value changes; the first line is the value at start.
func report<Value: Equatable & Sendable>(_ name: String, _ updates: some AsyncSequence<Value, Never>) async {
    var last: Value?
    for await value in updates where value != last {
        last = value
        print("\(name) = \(value)")
        fflush(nil)
    }
}

try await withThrowingDiscardingTaskGroup { group in
    group.addTask {
        try await config.watchInt(forKey: "http.port", default: 8080) { await report("http.port", $0) }
    }
    group.addTask {
        try await config.watchString(forKey: "log.level", default: "info") { await report("log.level", $0) }
    }
}
