import Defaults
import DefaultsLaunchOverrideSamples
import Foundation
import Synchronization
import Glibc

/// The helper's commands about pending changes, failing disks and `UserDefaults` edits, run from
/// main.swift's switch.
func runFailureCommands(_ command: String, url: URL, rest: [String]) throws {
    switch command {
    case "pending-wins":
        let externals = DispatchSemaphore(value: 0)
        let suite = Defaults.Suite(fileURL: url) { _ in }
        let shared = Defaults.Key<Int>("shared", default: 0, suite: suite)
        Defaults.addChangeSink(
            Defaults.ChangeSink { change in
                guard change.suite == suite, change.origin == .external else { return }
                say("external \(change.changes.keys.sorted().joined(separator: ",")) shared=\(suite[shared])")
                externals.signal()
            }
        )
        let limit = FileSizeLimit(bytes: 4)
        suite[shared] = 2
        try? suite.synchronize()  // fails: the change stays pending
        say("pending")
        // A deadline only against a hang: the test renames the file once the pool runs it.
        guard externals.wait(timeout: .now() + 600) == .success else { fail("no external change") }
        limit.lift()
        try suite.synchronize()
        say("synchronized")

    case "exclusive-full-disk":
        let suite = Defaults.Suite(fileURL: url) { _ in }
        let n = Defaults.Key<Int>("n", default: 0, suite: suite)
        let limit = FileSizeLimit(bytes: 4)
        do {
            try suite.exclusiveTransaction { suite[n] += 1 }
            say("did not throw")
        } catch {
            say("threw")
        }
        say("in memory \(suite[n])")
        limit.lift()
        try suite.synchronize()
        say("synchronized")

    case "broken-full-disk":
        guard rest.count == 1 else { fail("usage: broken-full-disk <file> <broken text>") }
        let suite = Defaults.Suite(fileURL: url) { _ in }
        suite[Defaults.Key<Int>("c", default: 0, suite: suite)] = 3
        try Data(rest[0].utf8).write(to: url)
        let limit = FileSizeLimit(bytes: 4)
        do {
            try suite.synchronize()
            say("succeeded")
        } catch {
            say("failed")
        }
        limit.lift()
        try suite.synchronize()
        say("synchronized")

    case "userdefaults-edit":
        // NB: an absolute suite name is the path of its file, minus ".plist".
        guard let userDefaults = UserDefaults(suiteName: url.path) else { fail("no UserDefaults for \(url.path)") }
        let notifications = Lock(0)
        let token = NotificationCenter.default.addObserver(
            forName: UserDefaults.didChangeNotification,
            object: nil,
            queue: nil
        ) { _ in notifications.withLock { $0 += 1 } }
        userDefaults.set(1, forKey: "size")
        userDefaults.synchronize()
        let plist = url.path + ".plist"
        let edited = try PropertyListSerialization.data(fromPropertyList: ["size": 2], format: .xml, options: 0)
        try edited.write(to: URL(fileURLWithPath: plist))
        // NB: dated a minute ahead, so no timestamp granularity can hide the edit.
        var times = [timeval(tv_sec: time(nil) + 60, tv_usec: 0), timeval(tv_sec: time(nil) + 60, tv_usec: 0)]
        utimes(plist, &times)
        print("read after the edit: \(userDefaults.integer(forKey: "size"))")
        userDefaults.synchronize()
        print("read after synchronize: \(userDefaults.integer(forKey: "size"))")
        print("notifications: \(notifications.withLock { $0 })")
        withExtendedLifetime(token) {}
    default:
        fail("unknown command \(command)")
    }
}
