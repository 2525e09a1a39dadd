import DefaultsTestSupport
import Foundation
import Synchronization
import Testing

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
            let file = FileBackend(storage: FileStorage(url: url), layerFiles: [])
            var problems: [Defaults.StorageError] = []
            let loaded = file.load(problems: &problems)
            let store = Store(backend: .backend(BackendConnection(file)), contents: loaded.contents)
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
                while !store.state.withLock({ $0.flush.isCommitting }) { sched_yield() }
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
        suite[a] = 1
        #expect(seen.withLock { $0 } == ["a", "b"])
        suite.updateObservers(named: .init("a")) { $0 = nil }
    }
}
