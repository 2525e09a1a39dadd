import DefaultsBackendTesting
import Foundation
import Testing

// @testable: runs the conformance checks on the `UserDefaults` backend itself
// (`UserDefaultsBackend`).
@testable import Defaults

/// A suite over `UserDefaults` is a suite over a backend too: it passes the checks any backend
/// must, but for reports, which Foundation on Linux gives none of.
@Suite struct UserDefaultsBackendConformanceTests {
    @Test func theUserDefaultsBackendPassesTheConformanceChecks() throws {
        let domains = Lock<Set<String>>([])
        defer {
            for domain in domains.withLock({ $0 }) { UserDefaults.standard.removePersistentDomain(forName: domain) }
        }
        try BackendConformance(
            seesChangesMadeElsewhere: false,
            makeBackend: { space in
                // NB: two instances of one domain share its values in the process, as two backends
                // over one space must.
                let domain = "DefaultsStoreTests.\(space)"
                domains.withLock { _ = $0.insert(domain) }
                guard let userDefaults = UserDefaults(suiteName: domain) else {
                    throw Defaults.StorageError.backendFailed(backend: "UserDefaults", reason: "no domain \(domain)")
                }
                return UserDefaultsBackend(userDefaults)
            }
        )
        .run()
    }

    @Test func aSuiteOverTheBackendIsTheAdapterOfItsUserDefaults() throws {
        let domain = "DefaultsStoreTests.\(UUID().uuidString)"
        let userDefaults = try #require(UserDefaults(suiteName: domain))
        defer { UserDefaults.standard.removePersistentDomain(forName: domain) }
        let suite = Defaults.Suite(userDefaults: userDefaults)
        let key = Defaults.Key<Int>("count", default: 0, suite: suite)
        suite[key] = 3
        // Stored at once, not at the next commit: other code reads it now.
        #expect(userDefaults.integer(forKey: "count") == 3)
        #expect(suite.description == "Defaults.Suite(userDefaults)")
    }
}
