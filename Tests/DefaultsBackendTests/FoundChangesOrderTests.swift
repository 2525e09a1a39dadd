import Defaults
import Foundation
import Synchronization
import Testing

/// A backend written outside the package that, while it commits, reports `x` = 1 and finds that
/// another party stored `x` = 2: it says, with the count of its reports, which it saw first.
final class FindingBackend: Defaults.Backend {
    private let updates = Mutex<Defaults.BackendUpdates?>(nil)
    /// Whether it found `x` = 2 before it made its report.
    let foundBeforeReport: Bool

    init(foundBeforeReport: Bool) {
        self.foundBeforeReport = foundBeforeReport
    }

    func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        Defaults.BackendContents(values: ["x": .number("0")])
    }

    func startReporting(to updates: Defaults.BackendUpdates) {
        self.updates.withLock { $0 = updates }
    }

    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult {
        guard let updates = updates.withLock({ $0 }) else { return .stored }
        let beforeReport = updates.reportCount
        updates.changed(["x": .number("1")])
        let afterReport = updates.reportCount
        return Defaults.BackendCommitResult(
            foundChanges: ["x": .number("2")],
            reportsBefore: foundBeforeReport ? beforeReport : afterReport
        )
    }
}

/// A backend outside the package orders what its commit found among its reports, as the JSON
/// file does, with its ``Defaults/BackendUpdates/reportCount``.
@Suite struct FoundChangesOrderTests {
    @Test(arguments: [false, true])
    func whatACommitFoundGoesInWhereItsReportCountSays(foundBeforeReport: Bool) throws {
        let suite = Defaults.Suite(backend: FindingBackend(foundBeforeReport: foundBeforeReport))
        let x = Defaults.Key<Int>("x", default: -1, suite: suite)
        let other = Defaults.Key<Int>("other", default: 0, suite: suite)
        #expect(suite[x] == 0)
        suite[other] = 1
        try suite.synchronize()
        // Found after the report: the found value is newer. Found before it: the report is.
        #expect(suite[x] == (foundBeforeReport ? 1 : 2))
        #expect(suite[other] == 1)
    }

    @Test func theCountCountsEveryReportOfValuesAndNothingElse() {
        let updates = Defaults.BackendUpdates(changed: { _, _ in }, replaced: { _ in }, report: { _ in })
        #expect(updates.reportCount == 0)
        updates.changed(["a": .number("1")])
        updates.replaced(by: Defaults.BackendContents(values: [:]))
        updates.report(.backendFailed(backend: "test", reason: "down"))
        updates.reconnected()
        #expect(updates.reportCount == 2)
    }
}
