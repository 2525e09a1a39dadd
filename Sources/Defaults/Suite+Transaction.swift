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
    @discardableResult
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
        let result: Result
        do {
            result = try TransactionScope.$current.withValue(scope) { try body() }
        } catch {
            _ = scope.close()
            throw error
        }
        // NB: closed first, so a task the body started writes directly from now on.
        let (writes, suppressedKeys) = scope.close()
        if !writes.isEmpty { commit(suppressedKeys: suppressedKeys) { _ in writes } }
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
        /// Keys last written inside `withoutPropagation`.
        var suppressedKeys: Set<String> = []
        /// Set once the transaction has ended: a task started inside it may outlive it.
        var isClosed = false

        /// Records a write; the last write to a key decides whether its change is propagated.
        mutating func set(_ name: String, to value: JSONValue?, suppressed: Bool) {
            writes[name] = .some(value)
            if suppressed {
                suppressedKeys.insert(name)
            } else {
                suppressedKeys.remove(name)
            }
        }
    }

    /// The writes and suppressed keys to restore when a nested transaction throws.
    struct SavePoint {
        let writes: [String: JSONValue?]
        let suppressedKeys: Set<String>
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
            if candidate.suite == identifier, candidate.isOpen { return candidate }
            scope = candidate.parent
        }
        return nil
    }

    private var isOpen: Bool { buffer.withLock { !$0.isClosed } }

    func storedValue(named name: String) -> JSONValue? {
        buffer.withLock { buffer in
            if let written = buffer.writes[name] { return written }
            return buffer.snapshot[name]
        }
    }

    /// Adds writes to the transaction; `false` when it has already ended (write directly then).
    func record(_ writes: [String: JSONValue?], suppressed: Bool) -> Bool {
        buffer.withLock { buffer in
            guard !buffer.isClosed else { return false }
            for (name, value) in writes { buffer.set(name, to: value, suppressed: suppressed) }
            return true
        }
    }

    /// Removes every value as part of the transaction; `false` when it has already ended.
    func removeAll(suppressed: Bool) -> Bool {
        buffer.withLock { buffer in
            guard !buffer.isClosed else { return false }
            for name in Set(buffer.snapshot.keys).union(buffer.writes.keys) {
                buffer.set(name, to: nil, suppressed: suppressed)
            }
            return true
        }
    }

    /// Ends the transaction and hands over its writes.
    func close() -> (writes: [String: JSONValue?], suppressedKeys: Set<String>) {
        buffer.withLock { buffer in
            buffer.isClosed = true
            return (buffer.writes, buffer.suppressedKeys)
        }
    }

    func savePoint() -> SavePoint {
        buffer.withLock { SavePoint(writes: $0.writes, suppressedKeys: $0.suppressedKeys) }
    }

    func rollBack(to savePoint: SavePoint) {
        buffer.withLock { buffer in
            buffer.writes = savePoint.writes
            buffer.suppressedKeys = savePoint.suppressedKeys
        }
    }
}
