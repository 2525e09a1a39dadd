import Synchronization

extension Defaults.Suite {
    /// Runs `body` as one transaction and returns its value.
    ///
    /// Writes to this suite inside `body` land together when it returns: other threads see all of
    /// them or none, they make one change event listing every key that changed, and at most one
    /// file write. Reads inside `body` see the suite as it was when the transaction began plus the
    /// body's own writes. If `body` throws, nothing it wrote is kept. A transaction opened inside
    /// another on the same suite folds into the outer one (and if it throws, only its own writes
    /// are dropped).
    ///
    /// ```swift
    /// suite.transaction {
    ///     suite[.width] = 800
    ///     suite[.height] = 600
    /// }
    /// ```
    ///
    /// Writes from other threads made while `body` runs are not part of the transaction; where
    /// both write the same key, the transaction's value lands last.
    ///
    /// - Parameter body: The work to do; it runs on the calling thread.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func transaction<Result>(_ body: () throws -> Result) rethrows -> Result {
        if let outer = TransactionScope.find(for: self) {
            let saved = outer.savePoint()
            do {
                return try body()
            } catch {
                outer.rollBack(to: saved)
                throw error
            }
        }
        let scope = state.withLock { state in
            state.openTransactions += 1
            return TransactionScope(suite: self, snapshot: state.tree, parent: TransactionScope.current)
        }
        defer { state.withLock { $0.openTransactions -= 1 } }
        let result = try TransactionScope.$current.withValue(scope) { try body() }
        let writes = scope.pendingWrites
        if !writes.isEmpty { commit { _ in writes } }
        return result
    }
}

/// The writes of an open transaction, visible to the task or thread that opened it.
final class TransactionScope: Sendable {
    /// The innermost open transaction of this task or thread, on any suite.
    @TaskLocal static var current: TransactionScope?

    struct Buffer {
        var snapshot: [String: JSONValue]
        /// `nil` means removed.
        var writes: [String: JSONValue?] = [:]
    }

    let suite: ObjectIdentifier
    let parent: TransactionScope?
    private let buffer: Mutex<Buffer>

    init(suite: Defaults.Suite, snapshot: [String: JSONValue], parent: TransactionScope?) {
        self.suite = ObjectIdentifier(suite)
        self.parent = parent
        self.buffer = Mutex(Buffer(snapshot: snapshot))
    }

    /// The open transaction on `suite` in this task or thread, if any.
    static func find(for suite: Defaults.Suite) -> TransactionScope? {
        var scope = current
        let identifier = ObjectIdentifier(suite)
        while let candidate = scope {
            if candidate.suite == identifier { return candidate }
            scope = candidate.parent
        }
        return nil
    }

    func storedValue(named name: String) -> JSONValue? {
        buffer.withLock { buffer in
            if let written = buffer.writes[name] { return written }
            return buffer.snapshot[name]
        }
    }

    func record(_ writes: [String: JSONValue?]) {
        buffer.withLock { buffer in
            for (name, value) in writes { buffer.writes[name] = .some(value) }
        }
    }

    func removeAll() {
        buffer.withLock { buffer in
            for name in buffer.snapshot.keys { buffer.writes[name] = .some(nil) }
            for name in buffer.writes.keys { buffer.writes[name] = .some(nil) }
        }
    }

    var pendingWrites: [String: JSONValue?] { buffer.withLock { $0.writes } }

    func savePoint() -> [String: JSONValue?] { pendingWrites }

    func rollBack(to savePoint: [String: JSONValue?]) {
        buffer.withLock { $0.writes = savePoint }
    }
}
