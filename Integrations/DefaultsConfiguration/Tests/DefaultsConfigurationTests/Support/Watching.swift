import Configuration
import DefaultsConfiguration

/// Runs `body` while a task copies the value updates of `key` into a mailbox, as ints.
func watching(
    _ provider: DefaultsProvider,
    _ key: AbsoluteConfigKey,
    _ body: (Mailbox<Result<Int?, any Error>>) async throws -> Void
) async throws {
    let updates = Mailbox<Result<Int?, any Error>>()
    try await provider.watchValue(forKey: key, type: .int) { sequence in
        let copying = Task {
            for await update in sequence {
                updates.put(
                    update.map { result in
                        guard case .int(let value)? = result.value?.content else { return nil }
                        return value
                    }
                )
            }
        }
        defer { copying.cancel() }
        try await body(updates)
    }
}

/// No update arrived in time.
struct NothingArrived: Error {}

/// The next value update of a ``watching(_:_:_:)`` mailbox, or the error it carries.
func next(_ updates: Mailbox<Result<Int?, any Error>>) async throws -> Int? {
    guard let update = await updates.take() else { throw NothingArrived() }
    return try update.get()
}
