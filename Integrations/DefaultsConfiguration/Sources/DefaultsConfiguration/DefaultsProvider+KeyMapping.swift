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
        private let makePaths: @Sendable (AbsoluteConfigKey) -> [[String]]

        /// Creates a mapping from a function that lists the paths to look at for a key, in order.
        ///
        /// - Parameter paths: Returns, for a config key, the paths to try: each a top-level key name
        ///   followed by the names of nested object members. Empty paths are skipped.
        public init(paths: @escaping @Sendable (_ key: AbsoluteConfigKey) -> [[String]]) {
            self.makePaths = paths
        }

        /// The paths to look at for `key`, in order.
        ///
        /// - Parameter key: The config key.
        /// - Returns: The paths, each a top-level key name then object member names.
        public func paths(for key: AbsoluteConfigKey) -> [[String]] {
            makePaths(key)
        }

        /// The components joined with `.` as one top-level key; when there is no such key, nested
        /// objects, preferring at each level the rest of the components joined with `.`.
        public static let dotted = KeyMapping { key in
            let components = key.components
            guard !components.isEmpty else { return [] }
            return (0..<components.count)
                .map { split in
                    Array(components[..<split]) + [components[split...].joined(separator: ".")]
                }
        }

        /// One top-level key per config key, named by `name`; nested objects are not looked at.
        ///
        /// - Parameter name: The stored key's name for a config key.
        /// - Returns: The mapping.
        public static func flat(_ name: @escaping @Sendable (_ key: AbsoluteConfigKey) -> String) -> KeyMapping {
            KeyMapping { key in [[name(key)]] }
        }

        /// The first value other than `null` or an object along the paths for `key`, and the path
        /// that led to it; `read` gives a top-level key's stored value.
        func resolve(
            _ key: AbsoluteConfigKey,
            read: (String) -> Defaults.JSONValue?
        ) -> Defaults.JSONValue? {
            for path in paths(for: key) {
                guard let first = path.first, var value = read(first) else { continue }
                var complete = true
                for member in path.dropFirst() {
                    guard case .object(let members) = value, let next = members[member] else {
                        complete = false
                        break
                    }
                    value = next
                }
                guard complete else { continue }
                switch value {
                case .null, .object:
                    // NB: as swift-configuration's JSON provider, which skips nulls and reads only
                    // the leaves of objects.
                    continue
                default:
                    return value
                }
            }
            return nil
        }
    }
}
