import Foundation

/// Runs `body` on a thread of its own, and returns what it returns or throws what it throws: a call
/// that blocks (a commit to a member that does not answer, a wait for a quorum) holds no thread of
/// the cooperative pool, which has only two on two cores.
func offThePool<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Swift.Result { try body() }) }
    }
}
