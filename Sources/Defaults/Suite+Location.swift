import Foundation
import Synchronization

extension Defaults.Suite {
    private static let applicationIdentifierStorage = Lock<String?>(nil)

    /// The name of the directory that holds ``standard``'s file under the XDG configuration directory.
    ///
    /// It defaults to the process name. Set it before the first use of ``standard`` (for example at
    /// the top of `main`); once the standard suite exists, it stays where it is.
    ///
    /// Setting a name that ``init(name:errorHandler:)`` would reject stops the program with a message
    /// naming the rule it breaks.
    public static var applicationIdentifier: String {
        get {
            applicationIdentifierStorage.withLock { $0 } ?? defaultApplicationIdentifier
        }
        set {
            do {
                try validate(name: newValue)
            } catch {
                preconditionFailure(error.description)
            }
            applicationIdentifierStorage.withLock { $0 = newValue }
        }
    }

    private static var defaultApplicationIdentifier: String {
        let name = ProcessInfo.processInfo.processName
        return (try? validate(name: name)) != nil ? name : "defaults"
    }

    /// The suite keys use unless they name another: `$XDG_CONFIG_HOME/<application id>/settings.json`.
    ///
    /// `~/.config` stands in for `$XDG_CONFIG_HOME` when that variable is unset or not absolute.
    /// Beneath it lie the system files of `$XDG_CONFIG_DIRS`, as for ``init(name:errorHandler:)``.
    /// See ``applicationIdentifier``. Reads return values given as `-name value` launch arguments
    /// for this run (see ``overrideWithLaunchArguments(_:)`` and ``standardReadsLaunchArguments``).
    public static let standard: Defaults.Suite = {
        let environment = ProcessInfo.processInfo.environment
        let name = applicationIdentifier
        let file = fileURL(forSuiteNamed: name, in: configurationDirectory(environment: environment))
        let suite = Defaults.Suite(
            opening: file,
            systemFiles: systemFileURLs(forSuiteNamed: name, environment: environment, excluding: file),
            errorHandler: nil,
            reportsLoadProblemsLater: true
        )
        if standardReadsLaunchArguments { suite.overrideWithLaunchArguments() }
        return suite
    }()

    /// The XDG configuration directory that suites opened by name keep their files in:
    /// `$XDG_CONFIG_HOME`, or `~/.config` when that variable is unset or not absolute.
    ///
    /// Read from the environment at each call, as ``init(name:errorHandler:)`` reads it.
    public static var configurationDirectory: URL {
        configurationDirectory(environment: ProcessInfo.processInfo.environment)
    }

    /// Where ``init(name:errorHandler:)`` keeps the file of the suite named `name`:
    /// `settings.json` in the directory `name` under ``configurationDirectory``.
    ///
    /// Nothing is created or read: for a tool that finds a program's settings by its suite's name.
    ///
    /// ```swift
    /// let file = try Defaults.Suite.fileURL(forSuiteNamed: "org.example.editor")
    /// ```
    ///
    /// - Throws: ``Defaults/SuiteNameError`` for a name ``init(name:errorHandler:)`` rejects.
    public static func fileURL(forSuiteNamed name: String) throws(Defaults.SuiteNameError) -> URL {
        try validate(name: name)
        return fileURL(forSuiteNamed: name, in: configurationDirectory)
    }

    /// The XDG configuration directory for `environment`.
    static func configurationDirectory(environment: [String: String]) -> URL {
        if let configured = environment["XDG_CONFIG_HOME"], configured.hasPrefix("/") {
            return URL(fileURLWithPath: configured, isDirectory: true)
        }
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".config", isDirectory: true)
    }

    /// The XDG system configuration directories for `environment`, most important first.
    ///
    /// `$XDG_CONFIG_DIRS`, or `/etc/xdg` when it is unset or empty. Entries that are not absolute
    /// paths are ignored, as the XDG Base Directory spec says.
    static func systemConfigurationDirectories(environment: [String: String]) -> [URL] {
        let listed = (environment["XDG_CONFIG_DIRS"] ?? "").split(separator: ":").map(String.init)
        let absolute = listed.filter { $0.hasPrefix("/") }
        return (absolute.isEmpty && listed.isEmpty ? ["/etc/xdg"] : absolute)
            .map {
                URL(fileURLWithPath: $0, isDirectory: true)
            }
    }

    /// The system files beneath the suite named `name`: its file in each system configuration
    /// directory, but `file` itself (the user's, which may be listed there too).
    static func systemFileURLs(
        forSuiteNamed name: String,
        environment: [String: String],
        excluding file: URL
    ) -> [URL] {
        var seen: Set<String> = [file.standardizedFileURL.path]
        return systemConfigurationDirectories(environment: environment)
            .map { fileURL(forSuiteNamed: name, in: $0) }
            .filter { seen.insert($0.standardizedFileURL.path).inserted }
    }

    /// Where the suite named `name` keeps its file inside `configurationDirectory`.
    static func fileURL(forSuiteNamed name: String, in configurationDirectory: URL) -> URL {
        configurationDirectory.appendingPathComponent(name, isDirectory: true)
            .appendingPathComponent("settings.json", isDirectory: false)
    }

    /// Checks that `name` is a single, ordinary path component.
    static func validate(name: String) throws(Defaults.SuiteNameError) {
        if name.isEmpty {
            throw Defaults.SuiteNameError(name: name, reason: "a suite name cannot be empty")
        }
        if name == "." || name == ".." {
            throw Defaults.SuiteNameError(name: name, reason: "a suite name cannot be \".\" or \"..\"")
        }
        if name.contains("/") {
            throw Defaults.SuiteNameError(
                name: name,
                reason: "a suite name is one path component and cannot contain \"/\""
            )
        }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw Defaults.SuiteNameError(name: name, reason: "a suite name cannot contain control characters")
        }
    }
}

extension Defaults.Suite {
    /// Waits until no suite has a file under `directory` open (so none will write there again),
    /// or until `deadline`; for tests that remove a temporary directory afterwards.
    ///
    /// - Returns: The paths of the files still open at the deadline; empty when none is.
    package static func waitUntilNoFileIsOpen(under directory: URL, until deadline: Date) -> [String] {
        StoreRegistry.waitUntilNoFileStore(under: ResolvedPath.normalize(directory.path), until: deadline)
    }
}
