// A secret's name has one answer: the secret's file, or the key's default. What is stored under the
// name (a hand edit, another program's value) is never read, counted or printed.
import Defaults
import DefaultsTestSupport
import Foundation
import Testing

@Suite struct SecretOneAnswerTests {
    /// A secrets folder holding `token` = "s3cret", and a suite over the in-memory space `space`
    /// reading it; another program's suite on the same space, which may store under the name.
    private struct Fixture {
        let suite: Defaults.Suite
        let other: Defaults.Suite
        let token: Defaults.Key<String>
        let errors = StoreErrorCollector()

        init(in directory: URL) throws {
            let secrets = directory.appendingPathComponent("secrets", isDirectory: true)
            try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true)
            try Data("s3cret".utf8).write(to: secrets.appendingPathComponent("token"))
            let space = "secret-one-answer-\(UUID())"
            other = Defaults.Suite(backend: Defaults.InMemoryBackend(space: space))
            other.setStoredValues(["token": .string("planted")])
            try other.synchronize()
            suite = Defaults.Suite(backend: Defaults.InMemoryBackend(space: space), errorHandler: errors.handler)
            suite.readSecrets(from: secrets)
            token = Defaults.Key<String>(secret: "token", suite: suite)
        }
    }

    /// Issue 51, item 3: an exclusive transaction that read a secret made its commit conditional
    /// on what the backend held under the secret's name, so a change there (which no read sees)
    /// ran the body again.
    @Test func anExclusiveTransactionThatReadsASecretDoesNotDependOnWhatIsStoredUnderItsName() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory)
            let suite = fixture.suite
            let count = Defaults.Key<Int>("count", default: 0, suite: suite)
            var runs = 0
            var seen: [String?] = []
            try suite.exclusiveTransaction {
                runs += 1
                seen.append(suite[fixture.token])
                if case .string(let text)? = suite.storedValue(named: "token") { seen.append(text) }
                if case .string(let text)? = suite.storedValues()["token"] { seen.append(text) }
                if runs == 1 {
                    // Another program stores under the name meanwhile.
                    fixture.other.setStoredValues(["token": .string("planted again")])
                    try? fixture.other.synchronize()
                }
                suite[count] = suite[count] + 1
            }
            #expect(runs == 1, "the body ran again for a change under the secret's name")
            #expect(seen == ["s3cret", "s3cret", "s3cret"])
            #expect(suite[count] == 1)
            #expect(fixture.errors.errors.isEmpty, "\(fixture.errors.errors)")
        }
    }

    @Test func aChangeOfAKeyTheTransactionReadStillRunsItAgain() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory)
            let suite = fixture.suite
            let count = Defaults.Key<Int>("count", default: 0, suite: suite)
            var runs = 0
            try suite.exclusiveTransaction {
                runs += 1
                _ = suite[fixture.token]
                let read = suite[count]
                if runs == 1 {
                    fixture.other.setStoredValues(["count": .number("10")])
                    try? fixture.other.synchronize()
                }
                suite[count] = read + 1
            }
            #expect(runs == 2)
            #expect(suite[count] == 11)
        }
    }

    @Test func storedValueNamedAnswersTheFileOrNothingNeverWhatIsStored() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory)
            let suite = fixture.suite
            #expect(suite.storedValue(named: "token") == .string("s3cret"))
            #expect(suite.storedValues()["token"] == .string("s3cret"))
            suite.transaction {
                #expect(suite.storedValue(named: "token") == .string("s3cret"))
                #expect(suite.storedValues()["token"] == .string("s3cret"))
            }
            // A secret without a file: its default, so nothing stored answers.
            let missing = Defaults.Key<String>(secret: "apiKey", default: "none", suite: suite)
            fixture.other.setStoredValues(["apiKey": .string("planted")])
            try fixture.other.synchronize()
            try suite.synchronize()
            #expect(suite[missing] == "none")
            #expect(suite.storedValue(named: "apiKey") == nil)
            #expect(suite.storedValues()["apiKey"] == nil)
            #expect(suite.source(of: missing) == .defaultValue)
        }
    }

    /// The hunt, in the library: the secret's text in descriptions, dumps and reports.
    @Test func theSecretsTextIsInNoDescriptionDumpOrReport() throws {
        try withStoreTemporaryDirectory { directory in
            let fixture = try Fixture(in: directory)
            let suite = fixture.suite
            // A key of another type under the same name reads the secret and cannot decode it.
            let asNumber = Defaults.Key<Int>("token", default: 0, suite: suite)
            #expect(suite[asNumber] == 0)
            suite[fixture.token] = "typed-by-hand"
            var printed = [suite.description, String(describing: fixture.token), "\(suite.source(of: fixture.token))"]
            for item in [suite as Any, fixture.token as Any] {
                var dumped = ""
                dump(item, to: &dumped)
                printed.append(dumped)
            }
            printed += fixture.errors.errors.map(\.description)
            for text in ["s3cret", "typed-by-hand"] {
                // Where it was found: which of the texts, and the line that holds it.
                let found = printed.enumerated()
                    .compactMap { index, item -> String? in
                        guard let line = item.split(separator: "\n").first(where: { $0.contains(text) }) else {
                            return nil
                        }
                        return "#\(index): \(line)"
                    }
                #expect(found.isEmpty, "\(text) in \(found)")
            }
        }
    }
}
