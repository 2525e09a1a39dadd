import Foundation
import Synchronization

extension Defaults.Suite {
    private static let standardReadsLaunchArgumentsStorage = Lock(true)

    /// Whether ``standard`` takes overrides for this run from the launch arguments.
    ///
    /// On by default, as `UserDefaults` takes them into its argument domain.
    ///
    /// Set it to `false` before the first use of ``standard`` (for example at the top of `main`)
    /// when the program's own options could be mistaken for overrides; once the standard suite
    /// exists, it keeps what it was given.
    public static var standardReadsLaunchArguments: Bool {
        get { standardReadsLaunchArgumentsStorage.withLock { $0 } }
        set { standardReadsLaunchArgumentsStorage.withLock { $0 = newValue } }
    }

    /// Makes reads of this suite return values given as `-name value` launch arguments, for this
    /// run only; nothing is written to the file.
    ///
    /// `myprogram -fontSize 14 -theme dark` makes `fontSize` read as 14 and `theme` as `"dark"`.
    /// A value is read as JSON, and as a plain string when it is not JSON or its JSON does not fit
    /// the key's type (so `-name 42` gives a `String` key `"42"`). A pair is an argument of one `-`
    /// followed by a value that does not start with `-` or is a negative number; arguments
    /// starting with `--` are left to the program, and a lone `--` ends the pairs. When a key is
    /// given twice, the last value wins.
    ///
    /// ``standard`` does this by default (see ``standardReadsLaunchArguments``). The overrides
    /// belong to the file's state, so every suite on the same file in this process reads them.
    /// Call it before reading the keys it overrides: observers are not told that reads changed.
    ///
    /// Precedence: launch argument, then environment (``overrideWithEnvironment(prefix:_:)``), then
    /// the file, then the key's default. Writing an overridden key still stores the value, but
    /// reads keep returning the override for the rest of the run, and since that value did not
    /// change, observers are not told. An override that does not decode as the key's type is
    /// ignored for that key (the next source is used) and reported once as
    /// ``Defaults/StorageError/invalidOverride(key:source:value:valueType:)``.
    ///
    /// - Parameter arguments: The launch arguments, program first; by default the process's own.
    public func overrideWithLaunchArguments(_ arguments: [String] = CommandLine.arguments) {
        let pairs = Overrides.parseLaunchArguments(arguments)
        store.changeOverrides { $0.arguments.merge(pairs) { _, new in new } }
    }

    /// Makes reads of this suite return values from environment variables whose names start
    /// with `prefix`, for this run only; nothing is written to the file.
    ///
    /// A key's variable is `prefix` followed by the key name in upper snake case (see
    /// ``environmentVariableName(forKey:prefix:)``): with the prefix `MYAPP_`, `fontSize` is read
    /// from `MYAPP_FONT_SIZE` and `http.port` from `MYAPP_HTTP_PORT`. Values are read as for
    /// launch arguments: JSON, or a plain string. Names that differ only in case or punctuation
    /// (`fontSize`, `font_size`, `font.size`) map to the same variable, and then that variable
    /// overrides each of them.
    ///
    /// Launch arguments win over the environment; see ``overrideWithLaunchArguments(_:)`` for what
    /// a write or an invalid value does. The environment is read once, now.
    ///
    /// - Parameters:
    ///   - prefix: What every variable for this suite starts with, such as `MYAPP_`.
    ///   - environment: The variables; by default the process's own.
    public func overrideWithEnvironment(
        prefix: String,
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        let relevant = environment.filter { $0.key.hasPrefix(prefix) }
        store.changeOverrides { overrides in
            overrides.environmentPrefix = prefix
            overrides.environment = relevant
        }
    }

    /// The environment variable that overrides the key `name` after
    /// ``overrideWithEnvironment(prefix:_:)`` with `prefix`.
    ///
    /// The key name in upper snake case after `prefix`: a `_` goes between a lower-case letter or
    /// digit and an upper-case letter, and before the last capital of a run of capitals followed
    /// by a lower-case letter; every character other than an ASCII letter or digit becomes `_`.
    /// `fontSize` → `FONT_SIZE`, `apiURLPath` → `API_URL_PATH`, `http.port` → `HTTP_PORT`.
    public static func environmentVariableName(forKey name: String, prefix: String) -> String {
        Overrides.environmentVariable(forKey: name, prefix: prefix)
    }
}
