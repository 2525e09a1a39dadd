import Configuration
import Defaults

extension DefaultsProvider {
    /// How a config key finds its value in a suite: the places to look, in order.
    ///
    /// A place is a *path*: its first element names one of the suite's top-level keys, and each
    /// further element a member of the JSON object found so far. The first path that leads to a
    /// value other than `null` or an object is the key's value; when none does, the provider has no
    /// value for the key.
    ///
    /// The default, ``dotted``, joins the key's components with `.`, and falls back to nested
    /// objects:
    ///
    /// | config key | looks at, in order |
    /// |---|---|
    /// | `port` | `"port"` |
    /// | `http.port` | `"http.port"`, then `"http"` → `"port"` |
    /// | `http.tls.cert` | `"http.tls.cert"`, then `"http"` → `"tls.cert"`, then `"http"` → `"tls"` → `"cert"` |
    ///
    /// So a file may say either of these, and `config.int(forKey: "http.port")` reads 8080:
    ///
    /// ```json
    /// { "http.port" : 8080 }
    /// { "http" : { "port" : 8080 } }
    /// ```
    ///
    /// To use names of your own, pass a mapping:
    ///
    /// ```swift
    /// // config key `http.port` → top-level key "HTTP_PORT"
    /// let upperSnake = DefaultsProvider.KeyMapping.flat { key in
    ///     key.components.joined(separator: "_").uppercased()
    /// }
    /// // or any list of paths
    /// let underSection = DefaultsProvider.KeyMapping { key in [["service"] + key.components] }
    /// ```
    public struct KeyMapping: Sendable {
        private enum Kind {
            /// ``dotted``, resolved without building its list of paths.
            case dotted
            case paths(@Sendable (AbsoluteConfigKey) -> [[String]])
        }

        private let kind: Kind

        private init(kind: Kind) {
            self.kind = kind
        }

        /// Creates a mapping from a function that lists the paths to look at for a key, in order.
        ///
        /// - Parameter paths: Returns, for a config key, the paths to try: each a top-level key name
        ///   followed by the names of nested object members. Empty paths are skipped.
        public init(paths: @escaping @Sendable (_ key: AbsoluteConfigKey) -> [[String]]) {
            self.kind = .paths(paths)
        }

        /// The paths to look at for `key`, in order.
        ///
        /// - Parameter key: The config key.
        /// - Returns: The paths, each a top-level key name then object member names.
        public func paths(for key: AbsoluteConfigKey) -> [[String]] {
            switch kind {
            case .dotted:
                let components = key.components
                return (0..<components.count)
                    .map { split in
                        Array(components[..<split]) + [components[split...].joined(separator: ".")]
                    }
            case .paths(let makePaths):
                return makePaths(key)
            }
        }

        /// The components joined with `.` as one top-level key; when there is no such key, nested
        /// objects, preferring at each level the rest of the components joined with `.`.
        public static let dotted = KeyMapping(kind: .dotted)

        /// One top-level key per config key, named by `name`; nested objects are not looked at.
        ///
        /// - Parameter name: The stored key's name for a config key.
        /// - Returns: The mapping.
        public static func flat(_ name: @escaping @Sendable (_ key: AbsoluteConfigKey) -> String) -> KeyMapping {
            KeyMapping { key in [[name(key)]] }
        }

        /// ``resolve(_:joined:read:)`` where some names are a secret key's (`isSecret`), and
        /// whether the value found is a secret's.
        ///
        /// A secret's name has one answer: the secret's file, or no value (the key's default). So
        /// a path whose first elements join with `.` to a secret's name (`["database", "password"]`
        /// for the secret `database.password`, as well as `["database.password"]`) reads the
        /// secret in their place, never what is stored under that name or nested under its parts,
        /// and the first path that reaches a secret ends the search: its value, or none.
        func resolve(
            _ key: AbsoluteConfigKey,
            joined: String,
            read: (String) -> Defaults.JSONValue?,
            isSecret: (String) -> Bool
        ) -> (value: Defaults.JSONValue?, isSecret: Bool) {
            switch kind {
            case .dotted:
                // Every name a path of `dotted` reads, or joins its first elements to, is one of
                // the components' prefixes joined: without a secret among them, the usual walk.
                var prefix = ""
                var touchesSecret = false
                for component in key.components {
                    prefix = prefix.isEmpty ? component : prefix + "." + component
                    if isSecret(prefix) {
                        touchesSecret = true
                        break
                    }
                }
                guard touchesSecret else { return (resolve(key, joined: joined, read: read), false) }
                return Self.resolve(paths: paths(for: key), read: read, isSecret: isSecret)
            case .paths(let makePaths):
                return Self.resolve(paths: makePaths(key), read: read, isSecret: isSecret)
            }
        }

        /// The first value along `paths`, where a path's first elements that join to a secret's
        /// name stand for that secret (see ``resolve(_:joined:read:isSecret:)``).
        private static func resolve(
            paths: [[String]],
            read: (String) -> Defaults.JSONValue?,
            isSecret: (String) -> Bool
        ) -> (value: Defaults.JSONValue?, isSecret: Bool) {
            for path in paths {
                guard let first = path.first, !first.isEmpty else { continue }
                var name = first
                var rest = path.dropFirst()
                var reachesSecret = isSecret(name)
                var joined = first
                for (index, element) in zip(path.indices.dropFirst(), path.dropFirst()) where !reachesSecret {
                    joined += "." + element
                    if isSecret(joined) {
                        name = joined
                        rest = path[(index + 1)...]
                        reachesSecret = true
                    }
                }
                if reachesSecret {
                    // A secret's value is text: nothing is inside it.
                    guard rest.isEmpty, let value = read(name), isValue(value) else { return (nil, true) }
                    return (value, true)
                }
                guard var value = read(name) else { continue }
                var complete = true
                for member in rest {
                    guard case .object(let members) = value, let next = members[member] else {
                        complete = false
                        break
                    }
                    value = next
                }
                if complete, isValue(value) { return (value, false) }
            }
            return (nil, false)
        }

        /// The first value other than `null` or an object along the paths for `key`; `read` gives a
        /// top-level key's stored value, and `joined` is the key's components joined with `.`.
        func resolve(
            _ key: AbsoluteConfigKey,
            joined: String,
            read: (String) -> Defaults.JSONValue?
        ) -> Defaults.JSONValue? {
            switch kind {
            case .dotted:
                // The paths of `paths(for:)` in the same order, walked without making them: this
                // runs on every lookup, and the first path (one top-level key) is the common case.
                let components = key.components
                guard !components.isEmpty else { return nil }
                if let value = read(joined), Self.isValue(value) { return value }
                guard components.count > 1, var reached = read(components[0]) else { return nil }
                for split in 1..<components.count {
                    // `reached` is what components[..<split] lead to.
                    guard case .object(let members) = reached else { return nil }
                    let isLast = split == components.count - 1
                    let rest = isLast ? components[split] : components[split...].joined(separator: ".")
                    if let value = members[rest], Self.isValue(value) { return value }
                    guard !isLast, let next = members[components[split]] else { return nil }
                    reached = next
                }
                return nil
            case .paths(let makePaths):
                for path in makePaths(key) {
                    guard let first = path.first, var value = read(first) else { continue }
                    var complete = true
                    for member in path.dropFirst() {
                        guard case .object(let members) = value, let next = members[member] else {
                            complete = false
                            break
                        }
                        value = next
                    }
                    if complete, Self.isValue(value) { return value }
                }
                return nil
            }
        }

        /// Whether `value` is a value for a config key: not `null`, which is no value, and not an
        /// object, whose leaves are the values (as swift-configuration's JSON provider reads them).
        private static func isValue(_ value: Defaults.JSONValue) -> Bool {
            switch value {
            case .null, .object: return false
            default: return true
            }
        }
    }
}
