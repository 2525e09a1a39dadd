import Defaults
import Dispatch
import Foundation
import Glibc

/// The helper's commands about secret keys, run from main.swift's switch.
func runSecretCommands(_ command: String, url: URL, rest: [String]) throws {
    switch command {
    case "secret-service":
        guardMemory(bytes: 2 << 30)
        // A service's start: its suite, then its secret key, read from $CREDENTIALS_DIRECTORY.
        let suite = Defaults.Suite(fileURL: url) { error in say("error \(error.description)") }
        let port = Defaults.Key<Int>("port", default: 8080, suite: suite)
        guard let name = rest.first else {
            say("listening on \(suite[port])")
            return
        }
        let key = Defaults.Key<String>(secret: name, default: "the default", suite: suite)
        say("listening on \(suite[port])")
        say(suite[key] == "the default" ? "reads the default" : "reads the file")
    default:
        fail("unknown command \(command)")
    }
}

/// Ends the process with status 3 once it holds more than `bytes` of memory: a reader that takes
/// an endless file (`/dev/zero`) in whole fails the test instead of filling the machine.
///
/// Looked at every 10 ms from a thread of its own.
func guardMemory(bytes: Int) {
    let thread = Thread {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        while true {
            // statm: total and resident size, in pages.
            if let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
                let fields = text.split(separator: " ")
                if fields.count > 1, let resident = Int(fields[1]), resident * pageSize > bytes {
                    FileHandle.standardError.write(Data("memory guard: more than \(bytes) bytes\n".utf8))
                    _exit(3)
                }
            }
            usleep(10_000)
        }
    }
    thread.start()
}
