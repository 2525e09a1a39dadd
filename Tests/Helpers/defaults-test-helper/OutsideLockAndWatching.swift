import Defaults
import DefaultsLaunchOverrideSamples
import Foundation
import Synchronization
import Glibc

/// The helper's commands about values released outside the lock, read-only files, removeAll and
/// watching, run from main.swift's switch.
func runOutsideLockAndWatchingCommands(_ command: String, url: URL, rest: [String]) throws {
    switch command {
    case "release-outside-lock":
        final class Payload: Codable, Defaults.Serializable, @unchecked Sendable {  // `n` is a `let`
            let n: Int
            nonisolated(unsafe) static var onRelease: (@Sendable () -> Void)?  // set before any release
            deinit { Payload.onRelease?() }
        }
        /// Hangs on "q" so the outside change carries an observer slot, and is handed the change as
        /// the observation module's slots are; told of no one-key write here.
        final class Slot: Defaults.ObserverSlot {
            // Set before any change.
            nonisolated(unsafe) static var onDeliver: (@Sendable (Defaults.SuiteChange) -> Void)?

            func deliverChange(
                in suite: Defaults.Suite,
                named name: String,
                old: Defaults.JSONValue?,
                new: Defaults.JSONValue?,
                oldDecoded: Defaults.Suite.CacheEntry?,
                newDecoded: Defaults.Suite.CacheEntry?,
                isPropagationSuppressed: Bool
            ) {}

            static func deliver(_ change: Defaults.SuiteChange) { onDeliver?(change) }
            /// Keys kept for the process's life: `dispatchMain()` ends the main thread, whose stack
            /// held them, and LeakSanitizer would call them leaked at exit.
            nonisolated(unsafe) static var kept: [Defaults._AnyKey] = []
        }
        let suite = Defaults.Suite(fileURL: url) { error in say("error \(error)") }
        let p = Defaults.Key<Payload?>("p", suite: suite)
        let released = DispatchSemaphore(value: 0)
        // See `renamed`'s conversion.
        let proceed = DispatchSemaphore(value: 0)
        Payload.onRelease = {
            proceed.signal()
            _ = suite.storedValues()
            suite[Defaults.Key<Int>("r", default: 0, suite: suite)] = 1
            try? suite.synchronize()
            say("released")
            released.signal()
        }
        guard suite[p]?.n == 1 else { fail("expected p.n == 1") }
        // A new name for "q", not final, read through it: after the change is taken in, the
        // thread that read the file (holding the suite's gate) works the read-through out again,
        // running this conversion. Once armed, it holds that thread until the old value's release
        // has begun (on the delivery queue, where it belongs) or the change is being delivered,
        // so an old value left to that thread to release is released after the delivery, every
        // time, and not by chance.
        let armed = Atomic<Bool>(false)
        let renamed = Defaults.Key<Int>("q.renamed", default: 0, suite: suite, formerly: ["q"], isFinal: false) {
            (old: Int) in
            // Once: the release's own write works the read-through out again too.
            if armed.exchange(false, ordering: .acquiringAndReleasing) { _ = proceed.wait(timeout: .now() + 20) }
            return old
        }
        guard suite[renamed] == 1 else { fail("expected q.renamed == 1, read through q") }
        Slot.kept = [p, renamed]
        armed.store(true, ordering: .releasing)
        Slot.onDeliver = { change in
            guard change.origin == .external, change.changes["q"] != nil else { return }
            // The old value goes before observers hear of the change.
            let releasedFirst = released.wait(timeout: .now()) == .success
            proceed.signal()
            guard releasedFirst else {
                // Waited for before exiting: a release racing exit() can stop the process. Left
                // with _exit: a release on the thread that read the file stops that thread
                // holding the suite's gate, which exit()'s last commit would wait for.
                let late = released.wait(timeout: .now() + 20) == .success
                FileHandle.standardError.write(
                    Data("the change was delivered before the old value was released\(late ? "" : " (never)")\n".utf8)
                )
                _exit(2)
            }
            say("changed n=\(suite[p]?.n ?? -1)")
            exit(0)
        }
        suite.updateObservers(named: .init("q")) { $0 = Slot() }
        say("ready")
        withExtendedLifetime(suite) { dispatchMain() }

    case "read-only":
        let suite = Defaults.Suite(fileURL: url) { error in say("error \(error)") }
        let port = Defaults.Key<Int>("port", default: -1, suite: suite)
        say("port \(suite[port])")
        say("source \(suite.source(of: port))")
        suite[port] = 99
        suite.removeAll()
        do {
            try suite.exclusiveTransaction { suite[port] = 98 }
            say("exclusive ran")
        } catch {
            say("exclusive threw")
        }
        // NB: the refused write is never silent: the next synchronize() throws it.
        do {
            try suite.synchronize()
            say("synchronized")
        } catch {
            say("synchronize threw \(error)")
        }
        say("port \(suite[port])")

    case "follow-read-only":
        let suite = Defaults.Suite(fileURL: url) { error in say("error \(error)") }
        let port = Defaults.Key<Int>("port", default: -1, suite: suite)
        let changed = DispatchSemaphore(value: 0)
        Defaults.addChangeSink(
            Defaults.ChangeSink { change in
                if change.suite == suite, change.origin == .external { changed.signal() }
            }
        )
        suite[port] = 1
        try suite.synchronize()
        say("ready")
        changed.wait()
        say("changed port=\(suite[port])")
        suite[port] = 2
        say("port \(suite[port])")

    case "pending-then-read-only":
        guard rest.count == 1 else { fail("usage: pending-then-read-only <link> <target>") }
        let refused = DispatchSemaphore(value: 0)
        let reverted = DispatchSemaphore(value: 0)
        let suite = Defaults.Suite(fileURL: url) { error in
            guard case .readOnlyFile = error else { return }
            say("error \(error)")
            refused.signal()
        }
        let port = Defaults.Key<Int>("port", default: -1, suite: suite)
        Defaults.addChangeSink(
            Defaults.ChangeSink { change in
                if change.suite == suite, change.origin == .external { reverted.signal() }
            }
        )
        suite[port] = 5
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".settings.json.link")
        guard symlink(rest[0], temporary.path) == 0, rename(temporary.path, url.path) == 0 else { fail("re-pointing") }
        refused.wait()
        reverted.wait()
        say("port \(suite[port])")

    case "remove-all":
        let suite = Defaults.Suite(fileURL: url) { error in
            // NB: with DEFAULTS_WATCHER=poll, being told the file is polled is expected.
            if case .pollingForChanges = error { return }
            say("error \(error)")
        }
        let changed = DispatchSemaphore(value: 0)
        Defaults.addChangeSink(
            Defaults.ChangeSink { change in
                if change.suite == suite, change.origin == .external { changed.signal() }
            }
        )
        let keys = { suite.storedValues().keys.sorted().joined(separator: ",") }
        say("ready")
        while let line = readLine() {
            let words = line.split(separator: " ").map(String.init)
            switch words.first {
            case "wait":
                while suite.storedValue(named: words[1]) == nil { changed.wait() }
                say("seen \(words[1])")
            case "remove-all":
                say("memory had \(keys())")
                if words.count > 1 {
                    // "remove-all in-transaction": with a write after it, in one transaction.
                    suite.transaction {
                        suite.removeAll()
                        suite[Defaults.Key<Int>("kept", default: 0, suite: suite)] = 4
                    }
                } else {
                    suite.removeAll()
                }
                try suite.synchronize()
                say("removed")
            case "keys":
                say("memory \(keys())")
            default:
                fail("unknown command \(line)")
            }
        }

    case "watch":
        let suite = Defaults.Suite(fileURL: url) { error in say("error \(error)") }
        Defaults.addChangeSink(
            Defaults.ChangeSink { change in
                guard change.suite == suite else { return }
                let origin = change.origin == .external ? "external" : "local"
                let keys = change.changes.keys.sorted()
                    .map { name in
                        "\(name)=\(change.changes[name]?.new.map { $0.description } ?? "nil")"
                    }
                say("\(origin) \(keys.joined(separator: ","))")
            }
        )
        say("ready")
        // Runs until the test kills it; the suite stays alive meanwhile.
        withExtendedLifetime(suite) { dispatchMain() }
    default:
        fail("unknown command \(command)")
    }
}
