import Dispatch
import Foundation

/// Migrations over a backend whose exclusive transactions are optimistic (etcd): each process's
/// transaction runs, and only the first to commit holds. So that a migration's body runs in one
/// process of all those opening the store at once, as it does under a file's lock, the process
/// that runs them first claims the right to, in the record itself; the others wait for the record
/// to list them, and run none.
extension Defaults.Suite {
    /// How long a claim holds while its holder is silent: a process that died or stalled while
    /// migrating is taken over after this long, measured by each waiting process on its own clock
    /// from when it first saw the claim.
    static let migrationClaimLifetime = Duration.seconds(30)

    /// The record's member naming the process that is running migrations.
    static let migrationClaimMember = "running"

    /// Whether migrations here need a claim: the store's backend commits optimistically.
    var migrationsNeedClaim: Bool {
        store.locking == nil && store.writeThrough == nil && store.commitsLater
    }

    /// What claiming found.
    private enum ClaimOutcome {
        /// The record lists every migration: another process ran them.
        case nothingToRun
        /// Another process holds the claim.
        case waiting
        /// This process holds it.
        case claimed
    }

    /// Claims the right to run `migrations` (those the record does not list, and `forced`), and
    /// waits while another process holds it.
    ///
    /// - Returns: The claim's token, or `nil` when the record lists them all by then.
    func claimMigrations(_ migrations: [Defaults.Migration], forced: Set<String>) throws -> String? {
        let token = UUID().uuidString
        // When this process first saw each other holder's claim, on its own clock.
        var seen: [String: ContinuousClock.Instant] = [:]
        var pause = Duration.milliseconds(2)
        while true {
            var outcome = ClaimOutcome.nothingToRun
            try exclusiveTransaction {
                let scope = TransactionScope.find(for: self)!
                let record = scope.storedValue(named: Self.migrationRecordName)
                let recorded = Self.recordedMigrations(in: record)
                guard migrations.contains(where: { !recorded.contains($0.id) || forced.contains($0.id) }) else {
                    outcome = .nothingToRun
                    return
                }
                if let holder = Self.migrationClaimHolder(in: record), holder != token {
                    let first = seen[holder] ?? .now
                    seen[holder] = first
                    if ContinuousClock.now - first < Self.migrationClaimLifetime {
                        outcome = .waiting
                        return
                    }
                }
                _ = scope.record([Self.migrationRecordName: Self.record(record, claimedBy: token)], suppressed: true)
                outcome = .claimed
            }
            switch outcome {
            case .nothingToRun: return nil
            case .claimed: return token
            case .waiting:
                // The holder's record reaches memory through the backend's reports (etcd's watch).
                Thread.sleep(
                    forTimeInterval: Double(pause.components.attoseconds) / 1e18 + Double(pause.components.seconds)
                )
                pause = min(pause * 2, .milliseconds(100))
            }
        }
    }

    /// Gives the claim `token` up, if this process still holds it (its migrations failed).
    func releaseMigrationClaim(_ token: String) {
        _ = try? exclusiveTransaction {
            let scope = TransactionScope.find(for: self)!
            let record = scope.storedValue(named: Self.migrationRecordName)
            guard Self.migrationClaimHolder(in: record) == token else { return }
            _ = scope.record([Self.migrationRecordName: Self.record(record, claimedBy: nil)], suppressed: true)
        }
    }

    /// Who holds the claim `record` names, if any.
    static func migrationClaimHolder(in record: JSONValue?) -> String? {
        guard case .object(let members)? = record, case .object(let claim)? = members[migrationClaimMember],
            case .string(let holder)? = claim["by"]
        else { return nil }
        return holder
    }

    /// `record` with the claim of `token` (none: without a claim).
    static func record(_ record: JSONValue?, claimedBy token: String?) -> JSONValue? {
        var members: [String: JSONValue] = [:]
        if case .object(let old)? = record { members = old }
        members[migrationClaimMember] = token.map { .object(["by": .string($0)]) }
        return members.isEmpty ? nil : .object(members)
    }
}
