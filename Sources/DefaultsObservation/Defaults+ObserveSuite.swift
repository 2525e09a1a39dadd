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
