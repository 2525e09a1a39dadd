import Defaults

extension Defaults {
    /// Runs `body` with its writes kept from every observer of this library.
    ///
    /// The writes are stored and persisted as usual; only their delivery to `observe`, `updates`,
    /// `@Default` and `@ObservableDefault` is skipped. The scope is the current task (or thread,
    /// outside a task): a write made at the same time by another task or thread still propagates.
    /// Calls nest.
    ///
    /// ```swift
    /// Defaults.observe(.celsius) { change in
    ///     Defaults.withoutPropagation {
    ///         Defaults[.fahrenheit] = change.newValue * 9 / 5 + 32   // no echo back
    ///     }
    /// }
    /// ```
    ///
    /// - Parameter body: The work whose writes are not propagated.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public static func withoutPropagation<Result>(_ body: () throws -> Result) rethrows -> Result {
        try Propagation.suppressing { try body() }
    }

    /// Runs `body` with its writes kept from every observer of this library, across suspensions.
    ///
    /// - Parameters:
    ///   - isolation: The actor `body` runs on; inferred from the caller.
    ///   - body: The work whose writes are not propagated.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public static func withoutPropagation<Result>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> Result
    ) async rethrows -> Result {
        try await Propagation.suppressing(isolation: isolation, body)
    }
}
