@_spi(Files) import Defaults
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The stored JSON value, by its short name inside this module.
typealias JSONValue = Defaults.JSONValue

/// Why a command stopped, and the exit status that says so.
enum ToolError: Error {
    /// Wrong arguments (exit 2); `command` names the help to point to.
    case usage(String, command: String?)
    /// A value, key or file that is not what it must be (exit 2).
    case invalid(String)
    /// The suite or a key is not there (exit 1).
    case notFound(String)
    /// The file could not be read or written (exit 3).
    case file(String)
    /// A system file locks the key (exit 4).
    case locked(String)
    /// The problem was printed already (the library's error hook, or the editing loop).
    case reported(status: Int32)
    /// `--help` was given: print the help instead (exit 0).
    case help(command: String?)

    var status: Int32 {
        switch self {
        case .help: return 0
        case .notFound: return 1
        case .usage, .invalid: return 2
        case .file: return 3
        case .locked: return 4
        case .reported(let status): return status
        }
    }
}

/// Writes `message` as one line on standard error (see ``terminalSafe(_:)``).
func printError(_ message: String) {
    FileHandle.standardError.write(Data((terminalSafe(message) + "\n").utf8))
}

/// `text`, safe to print on a terminal.
///
/// What would move a terminal's cursor, change its title or reorder the text shown is written as
/// `\uXXXX`: control characters but the line feed and the tab, and the format marks (U+202E,
/// zero-width ones). In JSON text they stand only inside strings, where that is JSON's own
/// escape: JSON printed this way reads back as the same value.
func terminalSafe(_ text: String) -> String {
    func unsafe(_ scalar: Unicode.Scalar) -> Bool {
        guard scalar != "\n", scalar != "\t" else { return false }
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
    guard text.unicodeScalars.contains(where: unsafe) else { return text }
    var result = ""
    for scalar in text.unicodeScalars {
        guard unsafe(scalar) else {
            result.unicodeScalars.append(scalar)
            continue
        }
        for unit in String(scalar).utf16 { result += String(format: "\\u%04X", unit) }
    }
    return result
}

/// Writes a problem the library reported to standard error, as the command's own line:
/// starting with `defaults:`, as every error line of the command does.
func printProblem(_ error: Defaults.StorageError) {
    printError("defaults: " + problemText(error))
}

/// The text of a problem the library reported, without the library's own `Defaults: ` prefix,
/// to go into a line of the command's.
func problemText(_ error: Defaults.StorageError) -> String {
    let text = error.description
    return text.hasPrefix("Defaults: ") ? String(text.dropFirst("Defaults: ".count)) : text
}

/// Writes `text` and a newline to standard output, at once (it may be a pipe), made safe for a
/// terminal (``terminalSafe(_:)``).
func printLine(_ text: String) {
    print(terminalSafe(text))
    fflush(nil)
}

/// A suite named on the command line: a name in the config directory, a file's path, or a suite
/// kept elsewhere that a scheme of this build knows (`etcd://host:port/prefix/`).
struct SuiteLocation {
    /// As the person typed it.
    let argument: String
    /// The settings file; `nil` for a suite kept elsewhere.
    let file: URL?
    /// The backend of a suite kept elsewhere, made once for the whole command.
    private let backend: (any Defaults.Backend)?

    init(_ argument: String) throws(ToolError) {
        self.argument = argument
        if let separator = argument.range(of: "://") {
            let name = String(argument[..<separator.lowerBound])
            guard let scheme = DefaultsCommand.knownSchemes.withLock({ $0 }).first(where: { $0.name == name }) else {
                throw .invalid("this defaults knows no suites at \(name)://; a suite is a name or a file's path")
            }
            do {
                backend = try scheme.makeBackend(argument)
            } catch {
                throw .invalid("\(argument) is not a suite: \(error)")
            }
            file = nil
            return
        }
        backend = nil
        if argument.contains("/") {
            let current = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
            file = URL(fileURLWithPath: argument, relativeTo: current).standardizedFileURL
            return
        }
        do {
            file = try Defaults.Suite.fileURL(forSuiteNamed: argument)
        } catch {
            throw .invalid(error.description)
        }
    }

    /// Where the suite is, for messages: the file's path, or the argument of a suite kept elsewhere.
    var place: String { file?.path ?? argument }

    /// Opens the suite as a program does.
    ///
    /// A suite named by name has the system files of `$XDG_CONFIG_DIRS` beneath it; one named by
    /// path has none. Problems go to `errorHandler`.
    func open(errorHandler: @escaping @Sendable (Defaults.StorageError) -> Void) -> Defaults.Suite {
        if let backend { return Defaults.Suite(backend: backend, errorHandler: errorHandler) }
        guard !argument.contains("/"), let suite = try? Defaults.Suite(name: argument, errorHandler: errorHandler)
        else { return Defaults.Suite(fileURL: file!, errorHandler: errorHandler) }
        return suite
    }

    /// The schema the backend of a suite kept elsewhere keeps (etcd's, which a program published
    /// there); `nil` for a file's suite, and when the backend keeps none.
    ///
    /// - Throws: `.file` when it cannot be read.
    func keptSchema() throws(ToolError) -> JSONValue? {
        guard let backend, backend.keepsSchema else { return nil }
        do {
            return try backend.loadSchema()
        } catch .backendFailed(_, let reason) {
            throw .file("cannot read \(argument): \(reason)")
        } catch .unreadableValue(_, _, let reason) {
            throw .file("the schema of \(argument) cannot be read: \(reason)")
        } catch {
            throw .file("cannot read the schema of \(argument): \(problemText(error))")
        }
    }

    /// The file's values; `nil` when there is no file (or a suite kept elsewhere holds no key).
    ///
    /// Takes no lock: writers replace the file by rename. A suite kept elsewhere is read from its
    /// backend, now.
    ///
    /// - Throws: `.file` when it cannot be read or is not a JSON object (nothing is changed).
    func read() throws(ToolError) -> [String: JSONValue]? {
        if let backend {
            do {
                let values = try backend.load().values
                return values.isEmpty ? nil : values
            } catch .backendFailed(_, let reason) {
                throw .file("cannot read \(argument): \(reason)")
            } catch {
                throw .file("cannot read \(argument): \(problemText(error))")
            }
        }
        guard let bytes = try readBytes(at: file!.path) else { return nil }
        return try members(
            of: bytes,
            in: file!.path,
            fix: "nothing was changed; mend it with 'defaults edit \(argument)' or a text editor"
        )
    }

    /// The values, or `.notFound` when the suite has no file (or holds no key, when kept elsewhere).
    func readExisting() throws(ToolError) -> [String: JSONValue] {
        guard let members = try read() else {
            guard file != nil else { throw .notFound("suite \(argument) holds no keys") }
            throw .notFound("suite \(argument) has no settings file (\(place))")
        }
        return members
    }
}

/// The bytes of the file at `path`; `nil` when there is none (or a parent is not a directory).
///
/// Takes no lock: writers replace the file by rename. Never blocks, and reads only a regular file
/// of at most 32 MiB, as a suite does: a FIFO, a device, a socket, a directory is refused.
func readBytes(at path: String) throws(ToolError) -> [UInt8]? {
    do {
        return try Defaults._contentsOfRegularFile(atPath: path)
    } catch {
        throw .file("cannot read \(path): \(error.description)")
    }
}

/// The top-level members of the JSON object in `bytes`, read from `path`.
///
/// - Throws: `.file` naming the line and column of the first error, and `fix`.
func members(of bytes: [UInt8], in path: String, fix: String) throws(ToolError) -> [String: JSONValue] {
    let document: JSONValue
    do {
        document = try JSONValue(parsing: bytes)
    } catch {
        throw .file("\(path) is not valid JSON (\(describe(error, in: bytes))); \(fix)")
    }
    guard case .object(let members) = document else {
        throw .file("\(path) is not a JSON object at the top level; \(fix)")
    }
    return members
}

/// A parse error as a person finds it: line and column, then what is wrong.
func describe(_ error: JSONValue.ParseError, in bytes: [UInt8]) -> String {
    if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return "it is empty" }
    return "line \(error.line), column \(error.column): \(error.reason)"
}

/// `value` as the file shows it: indented when it is an object or array.
func render(_ value: JSONValue) -> String { value.prettyDescription }

/// `value` on one line.
func renderCompact(_ value: JSONValue) -> String { value.description }

/// Whether `lhs` sorts before `rhs` by their UTF-8 bytes, as the settings file orders its keys.
func utf8Precedes(_ lhs: String, _ rhs: String) -> Bool {
    lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
}

/// Parses one JSON value given on the command line, for the key `key`.
func parseValue(_ text: String, forKey key: String) throws(ToolError) -> JSONValue {
    let value: JSONValue
    do {
        value = try JSONValue(parsing: text)
    } catch {
        // JSON, but deeper than a settings file holds: said as that, not as text that is not JSON.
        if error.reason.hasPrefix("nesting deeper than") {
            throw .invalid(
                "the value for \"\(key)\" is nested deeper than \(JSONValue.maximumStoredDepth) levels, the most a settings file holds"
            )
        }
        let reason = describe(error, in: Array(text.utf8))
        throw .invalid(
            "the value for \"\(key)\" is not JSON (\(reason)); quote text as a JSON string, or use --string <text>"
        )
    }
    if value.isNested(deeperThan: JSONValue.maximumStoredDepth) {
        throw .invalid("the value for \"\(key)\" is nested too deeply")
    }
    return value
}

/// Checks a key name given on the command line.
func validateKey(_ key: String) throws(ToolError) {
    if key.isEmpty { throw .invalid("a key name cannot be empty") }
}
