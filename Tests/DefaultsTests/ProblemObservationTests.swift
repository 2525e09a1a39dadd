// Defaults.observeProblems: every problem of every suite, with its suite, beside the suite's own
// handler. Observations are process-wide and tests run in parallel: each keeps its own suite's.
import Defaults
import DefaultsTestSupport
import Foundation
import Testing

@Suite struct ProblemObservationTests {
    /// What an observation saw of one suite.
    final class Seen: Sendable {
        let suite: Defaults.Suite
        let problems = EventLog<Defaults.StorageError>()
        init(_ suite: Defaults.Suite) { self.suite = suite }

        func observe() -> Defaults.ProblemObservation {
            Defaults.observeProblems { [self] suite, problem in
                if suite == self.suite { problems.append(problem) }
            }
        }
    }

    @Test func aProblemReachesTheSuitesHandlerAndTheObserverWithItsSuite() throws {
        try withStoreTemporaryDirectory { directory in
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: storeSettingsURL(in: directory), errorHandler: errors.handler)
            let seen = Seen(suite)
            let observation = seen.observe()
            suite.setStoredValues(["": .bool(true)])
            #expect(errors.errors.count == 1)
            #expect(seen.problems.count == 1)
            if case .serializationFailed(let key, _)? = seen.problems.all.first {
                #expect(key == "")
            } else {
                Issue.record("expected serializationFailed, got \(seen.problems.all)")
            }
            // Another suite's problem is delivered with that suite, not this one.
            let other = Defaults.Suite(fileURL: directory.appendingPathComponent("other.json")) { _ in }
            other.setStoredValues(["": .bool(true)])
            #expect(seen.problems.count == 1)

            observation.cancel()
            suite.setStoredValues(["": .bool(true)])
            #expect(errors.errors.count == 2)
            #expect(seen.problems.count == 1)
        }
    }

    @Test func aProblemFoundInTheBackgroundIsObservedWithItsSuite() async throws {
        try await withTemporaryDirectory { directory in
            let url = storeSettingsURL(in: directory)
            try storeWriteFile(url, Array(#"{"kept": 1}"#.utf8))
            let errors = StoreErrorCollector()
            let suite = Defaults.Suite(fileURL: url, errorHandler: errors.handler)
            let seen = Seen(suite)
            let observation = seen.observe()
            defer { observation.cancel() }
            #expect(suite[Defaults.Key<Int>("kept", default: 0, suite: suite)] == 1)
            // A person saves a broken file: the watcher finds it, off every caller's thread.
            try storeWriteFile(url, Array(#"{"kept": "#.utf8))
            #expect(await seen.problems.wait(forCount: 1))
            guard case .corruptFileRewritten(let reported, _, _)? = seen.problems.all.first else {
                Issue.record("expected corruptFileRewritten, got \(seen.problems.all)")
                return
            }
            #expect(reported.path == url.path)
            #expect(await errors.wait(forCount: 1))
        }
    }
}
