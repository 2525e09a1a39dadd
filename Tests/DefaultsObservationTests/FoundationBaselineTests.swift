import DefaultsObservation
import DefaultsTestSupport
import Foundation
import Synchronization
import Testing

/// What Foundation's `UserDefaults` does on Linux, for the README's comparison table.
///
/// These tests pin down the baseline this library improves on; only one writes to disk (in a
/// temporary directory, from a process of its own).
@Suite struct FoundationBaselineTests {
    @Test func userDefaultsSeesAnEditOfItsFileOnlyAtSynchronizeAndTellsNoOne() async throws {
        try await withTemporaryDirectory { directory in
            // NB: in a process of its own: another test's synchronize() would refresh this one's cache.
            let path = directory.appendingPathComponent("baseline").path
            let result = try await HelperProcess.run(["userdefaults-edit", path])
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(
                result.lines == [
                    "read after the edit: 1",  // the running program keeps its old value
                    "read after synchronize: 2",  // until it calls synchronize() itself
                    "notifications: 0",  // and nothing tells it
                ]
            )
        }
    }

    @Test func userDefaultsPostsNoChangeNotificationOnSet() throws {
        let suiteName = "defaults-baseline-\(UUID())"
        let userDefaults = try #require(UserDefaults(suiteName: suiteName))
        defer { userDefaults.removePersistentDomain(forName: suiteName) }
        let notifications = Atomic<Int>(0)
        let token = NotificationCenter.default.addObserver(
            forName: UserDefaults.didChangeNotification,
            object: nil,
            queue: nil
        ) { _ in notifications.add(1, ordering: .relaxed) }
        defer { NotificationCenter.default.removeObserver(token) }
        userDefaults.set(42, forKey: "answer")
        #expect(userDefaults.integer(forKey: "answer") == 42)
        #expect(notifications.load(ordering: .relaxed) == 0)

        // The same write through this library reaches an observer on the writing thread.
        let suite = Defaults.Suite(userDefaults: userDefaults)
        let answer = Defaults.Key<Int>("answer", default: 0, suite: suite)
        let seen = Atomic<Int>(0)
        let observation = Defaults.observe(answer, options: []) { _ in seen.add(1, ordering: .relaxed) }
        Defaults[answer] = 43
        #expect(seen.load(ordering: .relaxed) == 1)
        observation.invalidate()
    }

    @Test func userDefaultsCrashesOnACodableValue() async {
        await #expect(processExitsWith: .failure) {
            struct Window: Codable { var width = 640 }
            UserDefaults(suiteName: "defaults-baseline-crash")?.set(Window(), forKey: "window")
        }
    }

    @Test func theSameCodableValueIsStoredByThisLibrary() {
        struct Window: Codable, Equatable, Defaults.Serializable { var width = 640 }
        let suite = Defaults.Suite.inMemory()
        let window = Defaults.Key<Window>("window", default: Window(width: 1), suite: suite)
        Defaults[window] = Window()
        #expect(Defaults[window] == Window())
    }
}
