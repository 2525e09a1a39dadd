/// Values for this run only, from the launch arguments and the environment, that reads of a
/// suite return instead of what is stored.
///
/// Held in the store's state, under its lock. An override is text: it is tried as JSON first and
/// as a plain string next, so `-theme dark` and `-fontSize 14` both work. One that fits neither
/// way for the type a key is read as is rejected for good (for that key name) and reported once.
struct Overrides: Sendable {
    /// Where an override came from, in the order they win.
    enum Source: Hashable, Sendable {
        case launchArgument
        case environment(variable: String)
    }

    /// One override of one key, before it is decoded.
    struct Candidate: Sendable {
        let source: Source
        let text: String

        /// The stored forms to try, in order: the text as JSON when it is JSON, then as a string.
        var forms: [JSONValue] {
            let string = JSONValue.string(text)
            guard let json = try? JSONParser.parse(Array(text.utf8)) else { return [string] }
            return json == string ? [json] : [json, string]
        }
    }

    /// Values given as `-name value` launch arguments, by key name; the last one given wins.
    var arguments: [String: String] = [:]
    /// The prefix of the environment variables that override keys, when the suite opted in.
    var environmentPrefix: String?
    /// The environment the variables are looked up in, captured when the suite opted in.
    var environment: [String: String] = [:]
    /// Overrides that did not decode as the type their key was read as, and are ignored now.
    var rejected: Set<RejectedOverride> = []
    /// Decoded overrides by key name, for the type they were decoded as.
    var cache: [String: Defaults.Suite.CacheEntry] = [:]
    /// ``candidates(for:)`` by key name, so a read of a key nothing overrides costs one lookup.
    private var resolved: [String: [Candidate]] = [:]

    /// Whether nothing is overridden at all, so the store can drop this.
    var isEmpty: Bool { arguments.isEmpty && environment.isEmpty }

    struct RejectedOverride: Hashable, Sendable {
        let name: String
        let source: Source
    }

    /// The overrides of `name` still in force, strongest first; remembered until ``reject(_:of:)``.
    mutating func candidates(for name: String) -> [Candidate] {
        if let known = resolved[name] { return known }
        let found = lookUp(name)
        resolved[name] = found
        return found
    }

    /// Stops `source` from overriding `name`; `false` when it was stopped already.
    mutating func reject(_ source: Source, of name: String) -> Bool {
        resolved[name] = nil
        return rejected.insert(RejectedOverride(name: name, source: source)).inserted
    }

    /// Forgets what was decoded and rejected, after the sources changed.
    mutating func reset() {
        cache = [:]
        resolved = [:]
        rejected = []
    }

    private func lookUp(_ name: String) -> [Candidate] {
        var found: [Candidate] = []
        if let text = arguments[name], !rejected.contains(RejectedOverride(name: name, source: .launchArgument)) {
            found.append(Candidate(source: .launchArgument, text: text))
        }
        if let prefix = environmentPrefix {
            let variable = Self.environmentVariable(forKey: name, prefix: prefix)
            if let text = environment[variable],
                !rejected.contains(RejectedOverride(name: name, source: .environment(variable: variable)))
            {
                found.append(Candidate(source: .environment(variable: variable), text: text))
            }
        }
        return found
    }

    /// Whether reads of `name` return an override, so changes to its stored value are not reported.
    mutating func overrides(_ name: String) -> Bool {
        !candidates(for: name).isEmpty
    }

    /// `changes` without the keys whose reads return an override.
    mutating func reportable<Change>(_ changes: [String: Change]) -> [String: Change] {
        changes.filter { !overrides($0.key) }
    }

    // MARK: - Launch arguments

    /// The `-name value` pairs of `arguments` (the first element, the program, is skipped).
    ///
    /// A pair is an argument of one `-` and at least one more character, followed by a value that
    /// does not start with `-`, or is a negative number. Arguments starting with `--` are the
    /// program's own options and never name a key; a lone `--` ends the overrides.
    static func parseLaunchArguments(_ arguments: [String]) -> [String: String] {
        var pairs: [String: String] = [:]
        var index = 1
        while index < arguments.count - 1 {
            let current = arguments[index]
            if current == "--" { break }
            let next = arguments[index + 1]
            if current.hasPrefix("-"), !current.hasPrefix("--"), current.count > 1,
                !next.hasPrefix("-") || isNumber(next)
            {
                pairs[String(current.dropFirst())] = next
                index += 2
            } else {
                index += 1
            }
        }
        return pairs
    }

    private static func isNumber(_ text: String) -> Bool {
        guard let value = try? JSONParser.parse(Array(text.utf8)), case .number = value else { return false }
        return true
    }

    // MARK: - Environment

    /// The variable that overrides the key `name`: `prefix`, then the name in upper snake case.
    ///
    /// A lower-case letter or digit followed by an upper-case letter gets a `_` between them, as
    /// does the last capital of a run of capitals followed by a lower-case letter (`apiURLPath` →
    /// `API_URL_PATH`); every character but an ASCII letter or digit becomes `_`.
    static func environmentVariable(forKey name: String, prefix: String) -> String {
        let characters = Array(name.unicodeScalars)
        var result = prefix
        for (index, scalar) in characters.enumerated() {
            let isUpper = scalar.isASCIIUpper
            if isUpper, index > 0 {
                let previous = characters[index - 1]
                let next = index + 1 < characters.count ? characters[index + 1] : nil
                if previous.isASCIILower || previous.isASCIIDigit
                    || (previous.isASCIIUpper && next?.isASCIILower == true)
                {
                    result.append("_")
                }
            }
            if scalar.isASCIIUpper || scalar.isASCIIDigit {
                result.unicodeScalars.append(scalar)
            } else if scalar.isASCIILower {
                result.unicodeScalars.append(Unicode.Scalar(UInt8(scalar.value) - 32))
            } else {
                result.append("_")
            }
        }
        return result
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIIUpper: Bool { value >= 0x41 && value <= 0x5A }
    fileprivate var isASCIILower: Bool { value >= 0x61 && value <= 0x7A }
    fileprivate var isASCIIDigit: Bool { value >= 0x30 && value <= 0x39 }
}

extension Overrides.Source {
    /// How a report names this source of an override of the key `name`.
    func label(forKey name: String) -> String {
        switch self {
        case .launchArgument: return "launch argument -\(name)"
        case .environment(let variable): return "environment variable \(variable)"
        }
    }
}
