import Defaults
import Foundation
import Synchronization

/// The `defaults` command: read, change and watch suites from a terminal or a script.
///
/// The `defaults` executable of this package runs ``main(_:schemes:)`` with its arguments. A
/// package whose suites live elsewhere builds its own `defaults` that also knows them, by passing
/// a ``Scheme`` for each: DefaultsEtcd's knows `etcd://host:port/prefix/`. Every command then
/// works on such a suite as on a file, with the same output and exit statuses.
///
/// ```swift
/// import DefaultsCommandLine
///
/// let scheme = DefaultsCommand.Scheme("mine", example: "mine://server/table") { argument in
///     try MyBackend(address: argument)
/// }
/// exit(DefaultsCommand.main(Array(CommandLine.arguments.dropFirst()), schemes: [scheme]))
/// ```
public enum DefaultsCommand {
    /// Suites kept somewhere other than a file, named on the command line as `<name>://…`.
    public struct Scheme: Sendable {
        /// What such a suite's argument starts with, before `://`: `etcd`.
        public let name: String
        /// One such argument, for the help: `etcd://127.0.0.1:2379/config/billing/`.
        public let example: String
        /// Makes the backend of the suite the argument names.
        let makeBackend: @Sendable (String) throws -> any Defaults.Backend

        /// Creates a scheme.
        ///
        /// - Parameters:
        ///   - name: What such a suite's argument starts with, before `://`.
        ///   - example: One such argument, for the help.
        ///   - makeBackend: Makes the backend of the suite a whole argument names. Each command
        ///     asks for a new one. What it throws is printed as the reason the argument is
        ///     invalid (exit 2).
        public init(
            _ name: String,
            example: String,
            makeBackend: @escaping @Sendable (String) throws -> any Defaults.Backend
        ) {
            self.name = name
            self.example = example
            self.makeBackend = makeBackend
        }
    }

    /// Runs the command line `arguments` (without the program's name) and returns the exit status.
    ///
    /// Output goes to standard output, problems to standard error. `watch` never returns: it runs
    /// until the process is interrupted.
    ///
    /// - Parameters:
    ///   - arguments: The command and its arguments, as typed: `["read", "editor", "fontSize"]`.
    ///   - schemes: The suites kept elsewhere that this build knows, besides files.
    /// - Returns: 0 done; 1 suite or key not found; 2 usage or invalid value; 3 the suite could not
    ///   be read or written; 4 a key is locked by a system file.
    public static func main(_ arguments: [String], schemes: [Scheme] = []) -> Int32 {
        knownSchemes.withLock { $0 = schemes }
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

    /// The schemes of this run.
    static let knownSchemes = Mutex<[Scheme]>([])
}
