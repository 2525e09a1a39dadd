import DefaultsTestSupport
import Foundation
import Synchronization
import Testing

// @testable: drives the store's commit step by step (`Store`, `BackendConnection`) to pin the order
// of a commit and a change from elsewhere.
@testable import Defaults

/// What a file commit finds and what the watcher reported meanwhile reach memory in the order they
/// were read; sinks hear changes in the order they were made.
@Suite struct CommitOrderTests {
    /// A report older than what a commit found does not win.
    ///
    /// The watcher read x = 1 and reported it while a commit waited for the file's lock (so the
    /// report is held); then another process wrote x = 2, which the commit found.
    @Test func aReportHeldDuringACommitDoesNotOverwriteWhatTheCommitFoundLater() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("settings.json")
            try Data(#"{"x": 0}"#.utf8).write(to: url)
            let file = FileBackend(storage: FileStorage(url: url))
            var problems: [Defaults.StorageError] = []
            let loaded = file.load(problems: &problems)
            let store = Store(backend: .backend(BackendConnection(file)), contents: loaded)
            let updates = store.makeUpdates()
            // Reporting, but not watched: the test plays the watcher.
            file.files.withLock { $0.updates = updates }
            store.state.withLock { state in
                state.values["a"] = .number("1")
                state.markChanged("a")
            }
            let committed = DispatchSemaphore(value: 0)
            file.storage.lock.withProcessLock {
                Thread.detachNewThread {
                    _ = store.flushNow()
                    committed.signal()
                }
                // The commit has taken the pending key, so reports are held from here on; it then
                // waits for the lock this thread holds.
                let deadline = Date().addingTimeInterval(60)
                while !store.state.withLock({ $0.flushing.machine.isCommitting }) {
                    if Date() > deadline {
                        Issue.record("the commit never took the pending key")
                        break
                    }
                    sched_yield()
                }
                updates.changed(["x": .number("1")])
                try? Data(#"{"x": 2}"#.utf8).write(to: url, options: .atomic)
            }
            committed.wait()
            #expect(try String(contentsOf: url, encoding: .utf8).contains(#""x" : 2"#))
            #expect(store.state.withLock { $0.values["x"] } == .number("2"))
            #expect(store.state.withLock { $0.values["a"] } == .number("1"))
        }
    }

    /// A slot that, told `a` changed, writes `b` (a setting derived from it).
    private final class DerivingSlot: Defaults.ObserverSlot {
        func deliverChange(
            in suite: Defaults.Suite,
            named name: String,
            old: JSONValue?,
            new: JSONValue?,
            oldDecoded: Defaults.Suite.CacheEntry?,
            newDecoded: Defaults.Suite.CacheEntry?,
            isPropagationSuppressed: Bool
        ) {
            suite[Defaults.Key<Int>("b", default: 0, suite: suite)] = 2
        }

        static func deliver(_ change: Defaults.SuiteChange) {}
    }

    @Test func sinksHearAnObserversWriteAfterTheChangeItObserved() {
        let suite = Defaults.Suite.inMemory()
        let a = Defaults.Key<Int>("a", default: 0, suite: suite)
        let seen = Mutex<[String]>([])
        let sink = Defaults.ChangeSink { event in
            guard event.suite === suite else { return }
            event.forEachName { name in seen.withLock { $0.append(name) } }
        }
        Defaults.addChangeSink(sink)
        defer { Defaults.removeChangeSink(sink) }
        suite.updateObservers(named: .init("a")) { $0 = DerivingSlot() }
        defer { suite.updateObservers(named: .init("a")) { $0 = nil } }
        suite[a] = 1
        #expect(seen.withLock { $0 } == ["a", "b"])
    }

    /// What a commit found goes in after the reports made before it found it, and before the rest:
    /// before those that arrived after the backend was asked, when the backend gives no count.
    @Test(arguments: [(nil, ["1", "2", "3"]), (0 as Int?, ["2", "1", "3"]), (2 as Int?, ["1", "3", "2"])])
    func whatACommitFoundGoesInAmongTheReportsHeldMeanwhile(count: Int?, order: [String]) {
        let connection = BackendConnection(Defaults.InMemoryBackend())
        let applied = Mutex<[String]>([])
        func x(_ report: BackendConnection.Report) -> String {
            guard case .changed(let values, _) = report, case .number(let text)?? = values["x"] else { return "?" }
            return text
        }
        let apply: (BackendConnection.Report, Set<String>) -> Void = { report, _ in
            applied.withLock { $0.append(x(report)) }
        }
        _ = connection.committing(
            {
                connection.receive(.changed(["x": .number("1")], revision: nil), apply: apply)
                connection.callingBackend()
                connection.receive(.changed(["x": .number("3")], revision: nil), apply: apply)
                return 0
            },
            settle: { _ in BackendConnection.Settled(written: [], found: (["x": .number("2")], count)) },
            apply: apply
        )
        #expect(applied.withLock { $0 } == order)
    }
}
