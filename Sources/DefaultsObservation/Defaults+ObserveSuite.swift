import Defaults

extension Defaults {
    /// Calls `handler` once for each committed change to any key of `suite`.
    ///
    /// For code that cannot name its keys in advance, such as a bridge that hands out views of the
    /// whole suite: a write, a reset, a `removeAll`, a transaction, or a change read from the file
    /// (another process, a person editing it) is one call, whichever keys it touched, including keys
    /// no `Defaults.Key` names. Read what you need from the suite inside the handler; for example
    /// `suite.storedValues()` gives every value at one instant.
    ///
    /// Delivery follows the same rules as ``observe(_:options:handler:)``: a write in this process
    /// calls `handler` on the writing thread before the write returns, a change from outside the
    /// process on the file's own serial queue, and writes made inside
    /// ``withoutPropagation(_:)-(()->Result)`` are not delivered. The subscription covers every suite
    /// on the same file, as observations of keys do.
    ///
    /// ```swift
    /// let observation = Defaults.observe(suite: suite, options: []) {
    ///     print("now", suite.storedValues().count, "keys")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - suite: The suite to watch.
    ///   - options: `[.initial]` (the default) calls `handler` once before this method returns.
    ///   - handler: Called after each change.
    /// - Returns: The observation; delivery stops when it is invalidated or released.
    public static func observe(
        suite: Suite,
        options: ObservationOptions = [.initial],
        handler: @escaping @Sendable () -> Void
    ) -> Observation {
        let subscriber = Subscriber(keys: [], wholeSuites: [suite]) { _ in handler() }
        let observation = Observation(subscriber: subscriber)
        if options.contains(.initial) { handler() }
        return observation
    }
}

extension Defaults {
    /// One key's change in a suite, as stored JSON: what reads of the key saw before, and see now.
    ///
    /// Given by ``observeStoredValues(of:handler:)``.
    public struct StoredValueChange: Sendable, Equatable {
        /// The key's name in the suite.
        public let name: String
        /// What reads of the key saw before, `nil` when nothing stood there (reads saw the key's
        /// default), and always for a secret key.
        public let old: JSONValue?
        /// What reads of the key see now, `nil` when nothing stands there, and always for a secret
        /// key.
        public let new: JSONValue?
        /// Whether `name` is a secret key of the suite (``Suite/isSecret(named:)``): its values are
        /// left out, and only that it changed is told.
        public let isSecret: Bool

        /// A change of `name` from `old` to `new`.
        public init(name: String, old: JSONValue?, new: JSONValue?, isSecret: Bool = false) {
            self.name = name
            self.old = old
            self.new = new
            self.isSecret = isSecret
        }
    }

    /// Calls `handler` with the stored values that changed, once for each committed change to any
    /// key of `suite`.
    ///
    /// For tools that show or log what changes, by name and JSON, keys no `Defaults.Key` names
    /// included: the `defaults watch` command is built on it. A write, a reset, a `removeAll`, a
    /// transaction, or a change read from the file (another process, a person editing it) is one
    /// call, with each key it changed, sorted by name (UTF-8 order). `old` and `new` are what reads
    /// see, system files and their locks included: a system file that locks a key, or lifts its
    /// lock, without changing what reads see, is a change whose `old` equals its `new`. A secret
    /// key's values are never given: not under its own name, and not nested in an object under
    /// another (`{"database": {"password": …}}` for the secret `database.password` comes without
    /// its `password`). The member with the empty name, where the store keeps its record of the
    /// migrations run, is no setting and is left out.
    ///
    /// Delivery follows the rules of ``observe(suite:options:handler:)``: a write in this process
    /// calls `handler` on the writing thread before the write returns, a change from outside the
    /// process on the file's own serial queue, and writes made inside
    /// ``withoutPropagation(_:)-(()->Result)`` are not delivered.
    ///
    /// ```swift
    /// let observation = Defaults.observeStoredValues(of: suite) { changes in
    ///     for change in changes { print(change.name, change.old as Any, "->", change.new as Any) }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - suite: The suite to watch.
    ///   - handler: Called after each change, with the keys it changed.
    /// - Returns: The observation; delivery stops when it is invalidated or released.
    public static func observeStoredValues(
        of suite: Suite,
        handler: @escaping @Sendable (_ changes: [StoredValueChange]) -> Void
    ) -> Observation {
        let subscriber = Subscriber(keys: [], wholeSuites: [suite]) { event in
            var changes: [StoredValueChange] = []
            for (name, change) in event.changes where !name.isEmpty {
                if suite.isSecret(named: name) {
                    changes.append(StoredValueChange(name: name, old: nil, new: nil, isSecret: true))
                } else {
                    let old = withoutSecrets(change.old, storedUnder: name, in: suite)
                    let new = withoutSecrets(change.new, storedUnder: name, in: suite)
                    // What changed was only a secret's, nested: nothing to tell.
                    if old == new, change.old != change.new { continue }
                    changes.append(StoredValueChange(name: name, old: old, new: new))
                }
            }
            guard !changes.isEmpty else { return }
            changes.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            handler(changes)
        }
        return Observation(subscriber: subscriber)
    }

    /// `value`, stored under `name`, without what it nests at a secret key's name
    /// (`{"database": {"password": …}}` for the secret `database.password`): such a member is
    /// left out, as the secret's own name is.
    private static func withoutSecrets(_ value: JSONValue?, storedUnder name: String, in suite: Suite) -> JSONValue? {
        guard case .object(let members)? = value else { return value }
        var kept: [String: JSONValue] = [:]
        for (member, inner) in members {
            let path = name + "." + member
            if suite.isSecret(named: path) { continue }
            kept[member] = withoutSecrets(inner, storedUnder: path, in: suite)
        }
        return .object(kept)
    }
}
