// @testable: unit tests of the watcher's state machine and watch table (`FileChangeMachine`,
// `WatchTable`).
@testable import Defaults
import Testing

/// The decisions a store makes about its file changing under it, fed synthetic events.
@Suite struct FileChangeMachineTests {
    private let delays = FileChangeMachine.retryDelays

    /// Feeds `.fileEvent`, then what reading found; returns the action for the finding.
    private func event(_ machine: inout FileChangeMachine, finding: FileChangeMachine.Finding)
        -> FileChangeMachine.Action
    {
        #expect(machine.handle(.fileEvent) == .read)
        return machine.handle(.readFound(finding))
    }

    @Test func aParsedChangeIsAppliedAtOnce() {
        var machine = FileChangeMachine()
        #expect(event(&machine, finding: .parsed) == .apply)
    }

    @Test func theSameBytesAsLastSeenAreNoChange() {
        var machine = FileChangeMachine()
        #expect(event(&machine, finding: .unchanged) == .none)
    }

    @Test func aMissingFileIsLookedAtAgainBeforeItsKeysAreDropped() {
        var machine = FileChangeMachine()
        var action = event(&machine, finding: .missing)
        for delay in delays {
            guard case .retry(let after, let token) = action else {
                Issue.record("expected a retry, got \(action)")
                return
            }
            #expect(after == delay)
            #expect(machine.handle(.retryFired(token: token)) == .read)
            action = machine.handle(.readFound(.missing))
        }
        #expect(action == .applyDeletion)
    }

    @Test func aBrokenFileThatStaysBrokenIsMovedAside() {
        var machine = FileChangeMachine()
        var action = event(&machine, finding: .broken)
        var retries = 0
        while case .retry(_, let token) = action {
            retries += 1
            #expect(machine.handle(.retryFired(token: token)) == .read)
            action = machine.handle(.readFound(.broken))
        }
        #expect(retries == delays.count)
        #expect(action == .moveAside)
    }

    @Test func aFileThatComesBackDuringTheRetriesIsApplied() {
        // An editor renamed the old file away, and its new file appears before the next look.
        var machine = FileChangeMachine()
        guard case .retry(_, let token) = event(&machine, finding: .missing) else {
            Issue.record("expected a retry")
            return
        }
        #expect(machine.handle(.retryFired(token: token)) == .read)
        #expect(machine.handle(.readFound(.parsed)) == .apply)
        // The count starts over: the next missing file gets every retry again.
        var action = event(&machine, finding: .missing)
        var retries = 0
        while case .retry(_, let next) = action {
            retries += 1
            _ = machine.handle(.retryFired(token: next))
            action = machine.handle(.readFound(.missing))
        }
        #expect(retries == delays.count)
    }

    @Test func aNewEventMakesAPendingRetryStale() {
        var machine = FileChangeMachine()
        guard case .retry(_, let stale) = event(&machine, finding: .broken) else {
            Issue.record("expected a retry")
            return
        }
        // The editor finished: its close is a new event, read at once.
        #expect(machine.handle(.fileEvent) == .read)
        #expect(machine.handle(.readFound(.parsed)) == .apply)
        #expect(machine.handle(.retryFired(token: stale)) == .none)
    }

    @Test func anUnreadableFileIsReportedOnceUntilItReadsAgain() {
        var machine = FileChangeMachine()
        #expect(event(&machine, finding: .unreadable) == .reportUnreadable)
        #expect(event(&machine, finding: .unreadable) == .none)
        #expect(event(&machine, finding: .parsed) == .apply)
        #expect(event(&machine, finding: .unreadable) == .reportUnreadable)
    }
}

/// Which directories the watcher watches for its files, given what exists.
@Suite struct WatchTableTests {
    @Test func oneWatchPerDirectoryHoweverManyFilesItHolds() {
        var table = WatchTable()
        table.addFile("/home/u/.config/a/settings.json")
        table.addFile("/home/u/.config/a/other.json")
        table.addFile("/home/u/.config/b/settings.json")
        let targets = table.targets { _ in true }
        #expect(Set(targets.values) == ["/home/u/.config/a", "/home/u/.config/b"])
        #expect(
            Set(table.filePaths(in: "/home/u/.config/a")) == [
                "/home/u/.config/a/settings.json", "/home/u/.config/a/other.json",
            ]
        )
    }

    @Test func aMissingDirectoryIsWatchedThroughItsNearestExistingAncestor() {
        var table = WatchTable()
        table.addFile("/home/u/.config/new/deep/settings.json")
        let existing: Set = ["/", "/home", "/home/u", "/home/u/.config"]
        #expect(table.targets { existing.contains($0) } == ["/home/u/.config/new/deep": "/home/u/.config"])
        #expect(table.targets { _ in false } == ["/home/u/.config/new/deep": "/"])
    }

    @Test func aDirectoryWhoseTargetMovesIsReportedOnce() {
        var table = WatchTable()
        table.addFile("/c/app/settings.json")
        var existing: Set = ["/", "/c"]
        let isDirectory: (String) -> Bool = { existing.contains($0) }
        #expect(table.adopt(table.targets(isDirectory: isDirectory)) == ["/c/app"])
        #expect(table.adopt(table.targets(isDirectory: isDirectory)).isEmpty, "nothing moved")
        existing.insert("/c/app")
        #expect(table.adopt(table.targets { existing.contains($0) }) == ["/c/app"], "created: watch it directly")
    }

    @Test func forgottenWatchesAndRemovedFilesLeaveNothingBehind() {
        var table = WatchTable()
        table.addFile("/c/app/settings.json")
        table.recordWatch(of: "/c/app", descriptor: 7)
        #expect(table.directories[7] == "/c/app")
        #expect(table.forget(descriptor: 7) == "/c/app")
        #expect(table.descriptors.isEmpty)
        #expect(table.forget(descriptor: 7) == nil)
        table.removeFile("/c/app/settings.json")
        #expect(table.files.isEmpty)
        #expect(!table.contains(file: "/c/app/settings.json"))
    }

    @Test func pathsSplitAndJoinAtTheRoot() {
        #expect(WatchTable.split("/settings.json") == ("/", "settings.json"))
        #expect(WatchTable.join("/", "a") == "/a")
        #expect(WatchTable.parent(of: "/a") == "/")
        #expect(WatchTable.parent(of: "/") == nil)
    }
}
