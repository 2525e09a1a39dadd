// The `defaults` command: read, change and watch settings files from a terminal or a script.
//
// Every change goes through the library, under the file's lock, so a running program sees it at
// once and no other process's change is lost. See `defaults help`.
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs the command line and returns the exit status.
func main(_ arguments: [String]) -> Int32 {
    guard let name = arguments.first else {
        printError(overview())
        return 2
    }
    if name == "help" || name == "--help" || name == "-h" {
        var topic = name == "help" ? arguments.dropFirst().first : nil
        if topic == "--help" || topic == "-h" { topic = "help" }
        guard let topic else {
            printLine(overview())
            return 0
        }
        guard let spec = commands.first(where: { $0.name == topic }) else {
            printError("defaults: no command \"\(topic)\"; see 'defaults help'")
            return 2
        }
        printLine(help(for: spec))
        return 0
    }
    guard let spec = commands.first(where: { $0.name == name }) else {
        printError("defaults: unknown command \"\(name)\"; see 'defaults help'")
        return 2
    }
    do {
        try run(parse(Array(arguments.dropFirst()), for: spec))
        return 0
    } catch {
        switch error {
        case .help:
            printLine(help(for: spec))
        case .usage(let message, let command):
            printError("defaults: \(message) (see 'defaults help\(command.map { " " + $0 } ?? "")')")
        case .invalid(let message), .notFound(let message), .file(let message), .locked(let message):
            printError("defaults: " + message)
        case .reported:
            break
        }
        return error.status
    }
}

exit(main(Array(CommandLine.arguments.dropFirst())))
