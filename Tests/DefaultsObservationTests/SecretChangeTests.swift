// The change of a secret key, as an observer gets it: its values are there to use, and nothing
// that prints the change (a log line with the change interpolated, `dump`) shows them.
import Defaults
import DefaultsObservation
import DefaultsTestSupport
import Foundation
import Testing

@Suite struct SecretChangeTests {
    @Test func aSecretsChangeCarriesItsValuesAndNeverShowsThem() async throws {
        try await withTemporaryDirectory { directory in
            let secrets = directory.appendingPathComponent("secrets", isDirectory: true)
            try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true)
            let file = secrets.appendingPathComponent("api.token")
            try Data("first-token-1234".utf8).write(to: file)
            let suite = Defaults.Suite(fileURL: directory.appendingPathComponent("settings.json")) { _ in }
            suite.readSecrets(from: secrets)
            let token = Defaults.Key<String>(secret: "api.token", suite: suite)
            let plain = Defaults.Key<String>("greeting", default: "Hello", suite: suite)
            let changes = EventLog<Defaults.KeyChange<String>>()
            let observation = Defaults.observe(token, options: []) { changes.append($0) }
            defer { observation.invalidate() }

            // A rotated token, as a Kubernetes Secret volume's update brings it.
            try Data("second-token-5678".utf8).write(to: file, options: .atomic)
            #expect(await changes.wait(forCount: 1))
            let change = try #require(changes.all.first)
            #expect(change.oldValue == "first-token-1234")
            #expect(change.newValue == "second-token-5678")
            #expect(change.isSecret)
            var dumped = ""
            dump(change, to: &dumped)
            for shown in ["\(change)", String(reflecting: change), dumped] {
                #expect(!shown.contains("token-"), "a secret is shown: \(shown)")
            }
            #expect("\(change)" == "<secret> → <secret>")

            // A key declared again without `secret:` under the secret's name reads the secret, and
            // its change is as secret.
            let again = Defaults.Key<String>("api.token", default: "", suite: suite)
            let seenAgain = EventLog<Defaults.KeyChange<String>>()
            let observingAgain = Defaults.observe(again) { seenAgain.append($0) }
            defer { observingAgain.invalidate() }
            #expect(await seenAgain.wait(forCount: 1))
            #expect(seenAgain.all.first?.isSecret == true)
            #expect(seenAgain.all.first.map { "\($0)" } == "<secret> → <secret>")

            // Any other key's change shows its values.
            let initial = EventLog<Defaults.KeyChange<String>>()
            let other = Defaults.observe(plain) { initial.append($0) }
            defer { other.invalidate() }
            #expect(await initial.wait(forCount: 1))
            #expect(initial.all.first?.isSecret == false)
            #expect(initial.all.first.map { "\($0)" } == "Hello → Hello")
        }
    }
}
