import Defaults
import Foundation

#if canImport(Glibc)
import Glibc
#endif

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

/// Writes `message` as one line on standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Writes `text` and a newline to standard output, at once (it may be a pipe).
func printLine(_ text: String) {
    print(text)
    fflush(nil)
}

/// A suite named on the command line: a name in the config directory, or a file's path.
struct SuiteLocation {
    /// As the person typed it.
    let argument: String
    let url: URL

    init(_ argument: String) throws(ToolError) {
        self.argument = argument
        if argument.contains("/") {
            let current = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
            url = URL(fileURLWithPath: argument, relativeTo: current).standardizedFileURL
            return
        }
        do {
            try Defaults.Suite.validate(name: argument)
        } catch {
            throw .invalid(error.description)
        }
        url = Defaults.Suite.fileURL(forSuiteNamed: argument, in: Self.configurationDirectory)
    }

    /// Opens the suite as a program does.
    ///
    /// A suite named by name has the system files of `$XDG_CONFIG_DIRS` beneath it; one named by
    /// path has none. Problems go to `errorHandler`.
    func open(errorHandler: @escaping @Sendable (Defaults.StorageError) -> Void) -> Defaults.Suite {
        guard !argument.contains("/"), let suite = try? Defaults.Suite(name: argument, errorHandler: errorHandler)
        else { return Defaults.Suite(fileURL: url, errorHandler: errorHandler) }
        return suite
    }

    /// `$XDG_CONFIG_HOME`, or `~/.config`, as the library finds it.
    static var configurationDirectory: URL {
        Defaults.Suite.configurationDirectory(environment: ProcessInfo.processInfo.environment)
    }

    /// The file's values; `nil` when there is no file.
    ///
    /// Takes no lock: writers replace it by rename.
    ///
    /// - Throws: `.file` when it cannot be read or is not a JSON object (nothing is changed).
    func read() throws(ToolError) -> [String: JSONValue]? {
        guard let bytes = try readBytes(at: url.path) else { return nil }
        return try members(
            of: bytes,
            in: url.path,
            fix: "nothing was changed; mend it with 'defaults edit \(argument)' or a text editor"
        )
    }

    /// The values, or `.notFound` when the suite has no file.
    func readExisting() throws(ToolError) -> [String: JSONValue] {
        guard let members = try read() else {
            throw .notFound("suite \(argument) has no settings file (\(url.path))")
        }
        return members
    }
}

/// The bytes of the file at `path`; `nil` when there is none.
func readBytes(at path: String) throws(ToolError) -> [UInt8]? {
    do {
        return try FileStorage.contents(atPath: path, directoryIsMissing: false)
    } catch {
        throw .file("cannot read \(path): \(String(cString: strerror(error.code)))")
    }
}

/// The top-level members of the JSON object in `bytes`, read from `path`.
///
/// - Throws: `.file` naming the line and column of the first error, and `fix`.
func members(of bytes: [UInt8], in path: String, fix: String) throws(ToolError) -> [String: JSONValue] {
    do {
        guard let members = try FileStorage.members(of: bytes) else {
            throw ToolError.file("\(path) is not a JSON object at the top level; \(fix)")
        }
        return members
    } catch let error as ToolError {
        throw error
    } catch {
        throw .file("\(path) is not valid JSON (\(describe(error, in: bytes))); \(fix)")
    }
}

/// A parse error as a person finds it: line and column, then what is wrong.
func describe(_ error: any Error, in bytes: [UInt8]) -> String {
    guard let failure = error as? JSONParser.Failure else { return "\(error)" }
    if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return "it is empty" }
    return "line \(failure.line), column \(failure.column): \(failure.reason)"
}

/// `value` as the file shows it: indented when it is an object or array.
func render(_ value: JSONValue) -> String {
    var bytes = JSONWriter.prettyBytes(value)
    while bytes.last == 0x0A { bytes.removeLast() }
    return String(decoding: bytes, as: UTF8.self)
}

/// `value` on one line.
func renderCompact(_ value: JSONValue) -> String {
    String(decoding: JSONWriter.compactBytes(value), as: UTF8.self)
}

/// Parses one JSON value given on the command line, for the key `key`.
func parseValue(_ text: String, forKey key: String) throws(ToolError) -> JSONValue {
    do {
        let value = try JSONParser.parse(Array(text.utf8))
        if value.isNested(deeperThan: JSONValue.maximumStoredDepth) {
            throw ToolError.invalid("the value for \"\(key)\" is nested too deeply")
        }
        return value
    } catch let error as ToolError {
        throw error
    } catch {
        let reason = describe(error, in: Array(text.utf8))
        throw .invalid(
            "the value for \"\(key)\" is not JSON (\(reason)); quote text as a JSON string, or use --string <text>"
        )
    }
}

/// Checks a key name given on the command line.
func validateKey(_ key: String) throws(ToolError) {
    if key.isEmpty { throw .invalid("a key name cannot be empty") }
}
