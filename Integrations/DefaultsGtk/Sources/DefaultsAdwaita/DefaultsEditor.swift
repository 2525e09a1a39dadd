import CAdw
@_spi(Files) import Defaults
import DefaultsGtk
import DefaultsObservation
import Foundation

/// The `defaults-editor` program: the settings of any program that uses Defaults, in a
/// preferences window made from the schema it published (``PreferencesPage/init(schema:suite:title:)``).
///
/// `defaults-editor` is ``main(_:schemes:)`` over files; a build that knows other kinds of suites
/// passes their ``Scheme``s (as `defaults-editor-etcd` does for `etcd://` addresses).
public enum DefaultsEditor {
    /// A kind of suite address besides files, named by what comes before `://`.
    public struct Scheme: Sendable {
        /// What such an address starts with, before `://`: `etcd`.
        public let name: String
        let makeBackend: @Sendable (String) throws -> any Defaults.Backend

        /// Creates a scheme.
        ///
        /// - Parameters:
        ///   - name: What such an address starts with, before `://`.
        ///   - makeBackend: Makes the backend of the suite a whole address names; what it throws
        ///     is said as the reason the address is invalid.
        public init(_ name: String, makeBackend: @escaping @Sendable (String) throws -> any Defaults.Backend) {
            self.name = name
            self.makeBackend = makeBackend
        }
    }

    /// Opens the suite `address` names, as the `defaults` command does: a settings file's path; a
    /// suite's name (`$XDG_CONFIG_HOME/<name>/settings.json`, with the system files of
    /// `$XDG_CONFIG_DIRS` beneath it, their values and locks); or an address of one of `schemes`.
    ///
    /// - Parameters:
    ///   - address: The suite's name, file or address.
    ///   - schemes: The kinds of addresses known besides files.
    ///   - errorHandler: Where the suite reports problems.
    /// - Throws: ``UnknownScheme`` for an address of a scheme not in `schemes`; what the scheme,
    ///   or opening a suite by name, throws for an invalid one.
    public static func openSuite(
        _ address: String,
        schemes: [Scheme] = [],
        errorHandler: (@Sendable (Defaults.StorageError) -> Void)? = nil
    ) throws -> Defaults.Suite {
        if let separator = address.range(of: "://") {
            let name = String(address[..<separator.lowerBound])
            guard let scheme = schemes.first(where: { $0.name == name }) else {
                throw UnknownScheme(address: address, known: schemes.map(\.name))
            }
            return Defaults.Suite(backend: try scheme.makeBackend(address), errorHandler: errorHandler)
        }
        if address.contains("/") || address.hasSuffix(".json") {
            return Defaults.Suite(fileURL: URL(fileURLWithPath: address), errorHandler: errorHandler)
        }
        return try Defaults.Suite(name: address, errorHandler: errorHandler)
    }

    /// A schema file named with `--schema` that is not there.
    struct MissingSchema: Error, CustomStringConvertible {
        var description: String { "no such file" }
    }

    /// An address whose scheme this build does not know.
    public struct UnknownScheme: Error, CustomStringConvertible {
        /// The address.
        public let address: String
        /// The schemes it knows.
        public let known: [String]
        /// What is wrong, in words.
        public var description: String {
            known.isEmpty
                ? "\(address): only suites kept in files can be edited here (this build knows no other schemes)"
                : "\(address): not a kind of address this build knows (\(known.map { $0 + "://" }.joined(separator: ", ")))"
        }
    }

    /// The schema published for `suite`: read from `file`, else from beside the suite's settings
    /// file (`settings.schema.json`), else the one its backend keeps (etcd's); `nil` when there
    /// is none there.
    ///
    /// - Throws: What reading or parsing the file threw.
    public static func schema(of suite: Defaults.Suite, from file: URL? = nil) throws -> Defaults.JSONValue? {
        // A suite kept by a backend that keeps its schema (etcd's): the one a program published there.
        guard let path = file ?? suite.fileURL.map(Defaults.Suite.schemaFileURL(forSettingsFile:)) else {
            return try suite.publishedSchema()
        }
        // Without blocking, and only a regular file: a FIFO or a device in its place is refused.
        guard let bytes = try Defaults._contentsOfRegularFile(atPath: path.path) else {
            guard file == nil else { throw MissingSchema() }
            return nil
        }
        return try Defaults.JSONValue(parsing: bytes)
    }

    /// Runs the program with `arguments` (those after its name) and returns its exit status:
    /// opens the window and returns once it is closed.
    ///
    ///     defaults-editor <suite name | settings file | address> [--schema <file>] [--picture <png>]
    ///
    /// `--schema` reads the schema from a file of your choice (for a suite whose program
    /// published none: a suite in etcd shows the schema a program published there); `--picture`
    /// draws the window once, saves it as a PNG and exits.
    /// Exit status 2 for wrong arguments or an address that is no suite's, 1 when no picture
    /// could be drawn.
    ///
    /// - Parameters:
    ///   - arguments: The command's arguments.
    ///   - schemes: The kinds of addresses known besides files.
    public static func main(_ arguments: [String], schemes: [Scheme] = []) -> Int32 {
        var arguments = arguments
        let addresses = (["suite name", "settings file"] + schemes.map { "\($0.name)://…" }).joined(separator: " | ")
        for name in ["--picture", "--schema"] where arguments.last == name {
            complain("\(name) needs a file's path after it")
            return 2
        }
        guard let picture = option("--picture", in: &arguments), let schemaFile = option("--schema", in: &arguments),
            arguments.count == 1, !arguments[0].hasPrefix("-")
        else {
            complain("usage: \(programName) <\(addresses)> [--schema <file>] [--picture <png>]")
            return 2
        }
        let address = arguments[0]
        // A picture that cannot be saved is said before anything is drawn.
        if let path = picture {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue,
                FileManager.default.isWritableFile(atPath: folder)
            else {
                complain("cannot save the picture at \(path): \(folder) is not a folder this program may write")
                return 2
            }
            var isTaken: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isTaken),
                isTaken.boolValue || !FileManager.default.isWritableFile(atPath: path)
            {
                complain("cannot save the picture at \(path): it is a folder, or a file this program may not write")
                return 2
            }
        }
        // A settings file that is not one is left as it is: opening it as a suite would move it
        // aside and start from defaults, which is for a program, not for a window that shows it.
        if !address.contains("://"), let problem = brokenSettingsFile(at: address) {
            complain("\(problem); nothing was changed: mend it by hand, or move it away to start anew")
            return 1
        }
        let suite: Defaults.Suite
        do {
            suite = try openSuite(address, schemes: schemes) { error in complain("\(error)") }
        } catch {
            complain("\(error)")
            return 2
        }
        // Without a schema (or with one that is not JSON, said so), every value shows as JSON.
        var schema: Defaults.JSONValue?
        let schemaURL = schemaFile.map { URL(fileURLWithPath: $0) }
        do {
            schema = try Self.schema(of: suite, from: schemaURL)
            if schema == nil {
                let place = suite.fileURL.map { "at \(Defaults.Suite.schemaFileURL(forSettingsFile: $0).path)" }
                complain(
                    "no schema \(place ?? "kept for \(address)"); the values are shown as JSON"
                        + " (--schema <file> reads one from elsewhere)"
                )
            }
        } catch {
            let path = schemaURL ?? suite.fileURL.map(Defaults.Suite.schemaFileURL(forSettingsFile:))
            complain("\(path?.path ?? address): \(error); its values are shown as JSON")
        }
        // What the window's checks of values cannot apply is said once, before it opens.
        let unchecked = schema.map { Defaults.JSONSchema($0).uncheckedKeywords } ?? []
        for keyword in unchecked { complain("warning: the schema's \(keyword)") }
        if schema == .bool(false) {
            complain("warning: the schema is false, which allows no value; it describes no key")
        }
        if case .object(let document)? = schema, let properties = document["properties"] {
            if case .object = properties {
            } else {
                complain("warning: the schema's properties is not an object; it describes no key")
            }
        }
        // Values are checked key by key: a rule of the whole file is not applied.
        if case .object(let document)? = schema {
            if case .object(let described)? = document["properties"], described[""] != nil {
                complain(
                    "warning: the schema describes \"\", the name a settings file keeps for its own record;"
                        + " it is not shown"
                )
            }
            let described: Set<String> = [
                "$schema", "$id", "$anchor", "$comment", "$defs", "definitions", "title", "description", "type",
                "properties", "default", "examples", "readOnly", "writeOnly", "deprecated",
            ]
            let said = Set(unchecked.filter { $0.location.isEmpty }.map(\.keyword))
            for keyword in document.keys.sorted()
            where !described.contains(keyword) && !keyword.hasPrefix("x-") && !said.contains(keyword) {
                let name = String(decoding: Defaults.JSONValue.string(keyword).description.utf8, as: UTF8.self)
                complain("warning: the schema's \(name) at its root is not checked: values are checked key by key")
            }
        }
        gtk_init()
        GLibMainLoop.driveMainActor()
        let title = suite.fileURL.map { $0.deletingLastPathComponent().lastPathComponent } ?? address
        let window = MainActor.assumeIsolated {
            let window = PreferencesWindow(
                title: "Settings of \(title)",
                pages: [PreferencesPage(schema: schema, suite: suite, title: "Settings")]
            )
            gtk_window_set_default_size(
                UnsafeMutableRawPointer(window.window).assumingMemoryBound(to: GtkWindow.self),
                640,
                720
            )
            // A picture shows every row the window has room for: all made before the first frame.
            if picture != nil { for page in window.pages { _ = page.rows } }
            window.present()
            return window
        }
        if let path = picture {
            // Tried after each turn of the loop until the window is drawn; a timer wakes the loop
            // every 20 ms meanwhile, for at most 200 turns.
            let timer = g_timeout_add(20, { _ in 1 }, nil)
            var saved = false
            for _ in 0..<200 where !saved {
                g_main_context_iteration(nil, 1)
                saved = MainActor.assumeIsolated { window.savePicture(to: path) }
            }
            g_source_remove(timer)
            if !saved { complain("the window was never drawn; no picture") }
            // What the window wrote, if anything, is in the file (or etcd) before the process ends.
            try? suite.synchronize()
            return saved ? 0 : 1
        }
        print("editing \(suite.fileURL?.path ?? address); close the window to quit")
        while MainActor.assumeIsolated({ window.isOpen }) {
            g_main_context_iteration(nil, 1)
        }
        try? suite.synchronize()
        return 0
    }

    /// Takes `--name <value>` out of `arguments`: `.some(nil)` when absent, `nil` when it has no
    /// value.
    private static func option(_ name: String, in arguments: inout [String]) -> String?? {
        guard let flag = arguments.firstIndex(of: name) else { return .some(nil) }
        guard flag + 1 < arguments.count else { return nil }
        let value = arguments[flag + 1]
        arguments.removeSubrange(flag...(flag + 1))
        return .some(value)
    }

    /// The program's name, as it was run.
    private static var programName: String {
        CommandLine.arguments.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "defaults-editor"
    }

    /// Prints `message` on standard error, prefixed with the program's name, with what would
    /// move the cursor, change the terminal or reorder text escaped (a path or a key's name may
    /// hold anything).
    private static func complain(_ message: String) {
        FileHandle.standardError.write(Data("\(programName): \(printable(message))\n".utf8))
    }

    /// What is wrong with the settings file `address` names, when it is there, a regular file,
    /// and not a JSON object; `nil` otherwise (the suite says what else is wrong).
    private static func brokenSettingsFile(at address: String) -> String? {
        let url: URL
        if address.contains("/") || address.hasSuffix(".json") {
            url = URL(fileURLWithPath: address)
        } else if let named = try? Defaults.Suite.fileURL(forSuiteNamed: address) {
            url = named
        } else {
            return nil
        }
        var status = stat()
        guard stat(url.path, &status) == 0 else { return nil }
        switch status.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: return "\(url.path) is a directory, not a settings file"
        default: return "\(url.path) is not a regular file (a FIFO, a socket or a device), not a settings file"
        }
        // What every process reads at most (see the library's FileFormat article).
        guard status.st_size <= 32 << 20 else {
            return "\(url.path) is larger than 32 MiB, the most a settings file holds"
        }
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        guard !data.isEmpty else { return "\(url.path) is empty, not a settings file" }
        do {
            guard case .object = try Defaults.JSONValue(parsing: Array(data)) else {
                return "\(url.path) is not a settings file: its top level is not a JSON object"
            }
            return nil
        } catch {
            return "\(url.path) is not a settings file: \(error)"
        }
    }
}
