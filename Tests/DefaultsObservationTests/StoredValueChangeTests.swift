import DefaultsObservation
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `Defaults.observeStoredValues(of:)`: each committed change of a suite, by name and stored JSON,
/// whatever made it; a secret's values never given.
@Suite struct StoredValueChangeTests {
    typealias Change = Defaults.StoredValueChange

    @Test func aWriteInPlaceAndAJSONWriteGiveTheirOldAndNewJSON() {
        let suite = Defaults.Suite.inMemory()
        let calls = Recorder<[Change]>()
        let observation = Defaults.observeStoredValues(of: suite) { calls.append($0) }
        let count = Defaults.Key<Int>("count", default: 0, suite: suite)
        let name = Defaults.Key<String>("name", default: "", suite: suite)
        // An `Int` is written in place when nobody needs its JSON: this observer does.
        suite[count] = 1
        suite[count] = 2
        suite[name] = "Ada"
        suite[count] = 2  // the same value: no change
        count.reset()
        #expect(
            calls.elements == [
                [Change(name: "count", old: nil, new: .number("1"))],
                [Change(name: "count", old: .number("1"), new: .number("2"))],
                [Change(name: "name", old: nil, new: .string("Ada"))],
                [Change(name: "count", old: .number("2"), new: nil)],
            ]
        )
        observation.invalidate()
    }

    @Test func aTransactionIsOneCallWithEveryKeySortedByName() {
        let suite = Defaults.Suite.inMemory()
        let calls = Recorder<[Change]>()
        let observation = Defaults.observeStoredValues(of: suite) { calls.append($0) }
        suite.transaction {
            for name in ["b", "é", "a", "Z"] { suite[Defaults.Key<Int>(name, default: 0, suite: suite)] = 1 }
        }
        #expect(calls.elements.map { $0.map(\.name) } == [["Z", "a", "b", "é"]])
        suite.removeAll()
        #expect(calls.elements.count == 2)
        #expect(calls.elements.last?.allSatisfy { $0.old == .number("1") && $0.new == nil } == true)
        observation.invalidate()
    }

    @Test func suppressedWritesOtherSuitesAndAnInvalidatedObservationGiveNothing() {
        let suite = Defaults.Suite.inMemory()
        let other = Defaults.Suite.inMemory()
        let calls = Recorder<[Change]>()
        let observation = Defaults.observeStoredValues(of: suite) { calls.append($0) }
        other[Defaults.Key<Int>("a", default: 0, suite: other)] = 1
        Defaults.withoutPropagation { suite[Defaults.Key<Int>("a", default: 0, suite: suite)] = 1 }
        #expect(calls.elements.isEmpty)
        observation.invalidate()
        suite[Defaults.Key<Int>("a", default: 0, suite: suite)] = 2
        #expect(calls.elements.isEmpty)
        #expect(Defaults.observerEntryCount(for: suite) == 0)
    }

    @Test func aHandEditOfTheFileArrivesWithItsJSON() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("settings.json")
            try Data(#"{"theme": "dark", "size": 12}"#.utf8).write(to: file)
            let suite = Defaults.Suite(fileURL: file)
            let (changes, continuation) = AsyncStream.makeStream(of: [Change].self)
            let observation = Defaults.observeStoredValues(of: suite) { continuation.yield($0) }
            // As an editor saves: a new file renamed over the old.
            let edited = directory.appendingPathComponent("settings.json.tmp")
            try Data(#"{"theme": "light", "size": 12, "extra": [1, 2]}"#.utf8).write(to: edited)
            #expect(rename(edited.path, file.path) == 0)
            var iterator = changes.makeAsyncIterator()
            let change = await iterator.next()
            #expect(
                change == [
                    Change(name: "extra", old: nil, new: .array([.number("1"), .number("2")])),
                    Change(name: "theme", old: .string("dark"), new: .string("light")),
                ]
            )
            observation.invalidate()
            continuation.finish()
        }
    }

    /// Found by a black-box probe: a value of the wrong type for a key this process reads was
    /// not told, and the next change then told an old value never announced.
    @Test func aValueOfTheWrongTypeForAKeyReadHereIsToldAsStored() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("settings.json")
            try Data(#"{"x": 1}"#.utf8).write(to: file)
            let (reports, reported) = AsyncStream.makeStream(of: Defaults.StorageError.self)
            let suite = Defaults.Suite(fileURL: file) { reported.yield($0) }
            let x = Defaults.Key<Int>("x", default: 0, suite: suite)
            #expect(suite[x] == 1)
            let (changes, continuation) = AsyncStream.makeStream(of: [Change].self)
            let observation = Defaults.observeStoredValues(of: suite) { continuation.yield($0) }
            let edited = directory.appendingPathComponent("settings.json.tmp")
            try Data(#"{"x": "str"}"#.utf8).write(to: edited)
            #expect(rename(edited.path, file.path) == 0)
            // Taken in: the value is reported as one reads of `x` cannot use (and the change, if
            // told, was queued before the report).
            var problems = reports.makeAsyncIterator()
            guard case .changeDoesNotDecode(key: "x", _, _)? = await problems.next() else {
                Issue.record("the refused value was not reported")
                return
            }
            // Typed reads keep the last good value; the stored JSON is what was written.
            #expect(suite[x] == 1)
            #expect(suite.storedValue(named: "x") == .string("str"))
            try Data(#"{"x": 5}"#.utf8).write(to: edited)
            #expect(rename(edited.path, file.path) == 0)
            var iterator = changes.makeAsyncIterator()
            // Before the fix, the first call was the second change: "str" -> 5.
            let first = await iterator.next()
            #expect(first == [Change(name: "x", old: .number("1"), new: .string("str"))])
            guard first?.first?.new == .string("str") else { return }
            #expect(await iterator.next() == [Change(name: "x", old: .string("str"), new: .number("5"))])
            #expect(suite[x] == 5)
            observation.invalidate()
            continuation.finish()
            reported.finish()
        }
    }

    @Test func aSecretsChangeIsToldWithoutItsValues() async throws {
        try await withTemporaryDirectory { directory in
            let secrets = directory.appendingPathComponent("credentials")
            try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true)
            try Data("first".utf8).write(to: secrets.appendingPathComponent("token"))
            let suite = Defaults.Suite(fileURL: directory.appendingPathComponent("settings.json"))
            suite.readSecrets(from: secrets)
            let token = Defaults.Key<String>(secret: "token", default: "", suite: suite)
            #expect(suite[token] == "first")
            let (changes, continuation) = AsyncStream.makeStream(of: [Change].self)
            let observation = Defaults.observeStoredValues(of: suite) { continuation.yield($0) }
            // Rotated as a secret store does: a new file renamed over the old.
            let rotated = secrets.appendingPathComponent(".token.new")
            try Data("second".utf8).write(to: rotated)
            #expect(rename(rotated.path, secrets.appendingPathComponent("token").path) == 0)
            var iterator = changes.makeAsyncIterator()
            let change = await iterator.next()
            #expect(change == [Change(name: "token", old: nil, new: nil, isSecret: true)])
            #expect(suite[token] == "second")
            observation.invalidate()
            continuation.finish()
        }
    }

    @Test func aSecretNestedInAnObjectIsLeftOutAndTheRecordOfMigrationsIsNoSetting() async throws {
        try await withTemporaryDirectory { directory in
            let secrets = directory.appendingPathComponent("credentials")
            try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true)
            try Data("from-its-file".utf8).write(to: secrets.appendingPathComponent("database.password"))
            let file = directory.appendingPathComponent("settings.json")
            try Data(#"{"database": {"host": "a"}}"#.utf8).write(to: file)
            let suite = Defaults.Suite(fileURL: file)
            suite.readSecrets(from: secrets)
            let password = Defaults.Key<String>(secret: "database.password", default: "", suite: suite)
            #expect(suite[password] == "from-its-file")
            let (changes, continuation) = AsyncStream.makeStream(of: [Change].self)
            let observation = Defaults.observeStoredValues(of: suite) { continuation.yield($0) }
            // A hand edit plants a password nested in the settings, beside a record of migrations:
            // only the host's change is told.
            let edited = directory.appendingPathComponent("settings.json.tmp")
            let text = #"{"": {"migrations": ["a from b"]}, "database": {"host": "b", "password": "planted"}}"#
            try Data(text.utf8).write(to: edited)
            #expect(rename(edited.path, file.path) == 0)
            var iterator = changes.makeAsyncIterator()
            let change = await iterator.next()
            #expect(
                change == [
                    Change(
                        name: "database",
                        old: .object(["host": .string("a")]),
                        new: .object(["host": .string("b")])
                    )
                ]
            )
            // Only the planted password changes: nothing is told; the next change is the host's.
            try Data(#"{"database": {"host": "b", "password": "other"}}"#.utf8).write(to: edited)
            #expect(rename(edited.path, file.path) == 0)
            try Data(#"{"database": {"host": "c", "password": "other"}}"#.utf8).write(to: edited)
            #expect(rename(edited.path, file.path) == 0)
            let next = await iterator.next()
            #expect(next?.map(\.name) == ["database"])
            #expect(next?.first?.new == .object(["host": .string("c")]), "\(String(describing: next))")
            #expect(suite[password] == "from-its-file")
            observation.invalidate()
            continuation.finish()
        }
    }
}
