import Foundation

extension Defaults {
    /// Where the value a read of a key returns comes from: the layer that gives it.
    ///
    /// The layers, highest first: a secret's file; a lock in a system file; a launch argument; an environment
    /// variable; the suite's own file; the system files beneath it, in their order; the key's
    /// default. See ``Defaults/Suite/source(of:)``.
    ///
    /// ```swift
    /// if case .locked(let file, _) = suite.source(of: .fontSize) {
    ///     print("fontSize is set by your administrator in \(file.path)")
    /// }
    /// ```
    public enum ValueSource: Equatable, Sendable, CustomStringConvertible {
        /// A system file (`by`) locks the key: reads return the system value, from the first system
        /// file that sets it (`valueFrom`), or the key's default when none does.
        case locked(by: URL, valueFrom: URL?)
        /// The key is secret, and this file gives its value (``Defaults/Key/init(secret:default:suite:summary:)``).
        case secret(URL)
        /// A `-name value` launch argument, for this run (``Defaults/Suite/overrideWithLaunchArguments(_:)``).
        case launchArgument
        /// An environment variable, for this run (``Defaults/Suite/overrideWithEnvironment(prefix:_:)``).
        case environment(variable: String)
        /// The suite's own file, which writes go to.
        case userFile(URL)
        /// The suite's own storage when it is not a file: memory, or a `UserDefaults`.
        case suiteStorage
        /// A system file beneath the suite's own file.
        case systemFile(URL)
        /// Nothing sets the key (or what is set does not decode as its type): its default.
        case defaultValue

        /// A few words naming the layer, to follow "from": as `defaults read --origin` prints it.
        public var description: String {
            switch self {
            case .locked(let file, let valueFrom):
                let value = valueFrom.map { "the value of \($0.path)" } ?? "the program's default"
                return "a lock in \(file.path), with \(value)"
            case .secret(let file): return "the secret file \(file.path)"
            case .launchArgument: return "a launch argument"
            case .environment(let variable): return "the environment variable \(variable)"
            case .userFile(let file): return "the user's file \(file.path)"
            case .suiteStorage: return "the suite's storage"
            case .systemFile(let file): return "the system file \(file.path)"
            case .defaultValue: return "the program's default"
            }
        }
    }
}
