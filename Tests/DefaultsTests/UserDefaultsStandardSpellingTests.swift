import DefaultsTestSupport
import Foundation
import Testing

/// `UserDefaults.standard`, in every spelling of the API that takes one, is the standard suite.
///
/// That is the JSON file `Defaults[key]` uses. Run in a helper process with its own
/// `XDG_CONFIG_HOME`: the standard suite of this process is the real `~/.config`, which tests never
/// touch.
@Suite struct UserDefaultsStandardSpellingTests {
    @Test func userDefaultsStandardIsTheStandardSuite() async throws {
        try await withTemporaryDirectory(prefix: "DefaultsStoreTests") { directory in
            let result = try await HelperProcess.run(
                ["userdefaults-standard"],
                environment: ["XDG_CONFIG_HOME": directory.path]
            )
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(
                result.lines == [
                    "Defaults reads 7 written through UserDefaults.standard",
                    "UserDefaults.standard reads hello written through Defaults",
                    "keys equal: true",
                    "suites are the standard suite: true",
                    "after reset: dynamic 3, optional nil, count 7",
                    "Foundation's UserDefaults.standard holds count: false",
                    "synchronized",
                ]
            )
            // What went through `UserDefaults.standard` is in the standard suite's file.
            let file = directory.appendingPathComponent("defaults-test-helper/settings.json")
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
            #expect(object?["count"] as? Int == 7)
            #expect(object?["text"] as? String == "hello")
            #expect(object?["gone"] as? Int == 1)
            #expect(object?["dynamic"] == nil && object?["optional"] == nil)
        }
    }

    @Test func removeAllWithUserDefaultsStandardEmptiesTheStandardFile() async throws {
        try await withTemporaryDirectory(prefix: "DefaultsStoreTests") { directory in
            let result = try await HelperProcess.run(
                ["userdefaults-standard", "remove-all"],
                environment: ["XDG_CONFIG_HOME": directory.path]
            )
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(result.lines.last == "removed all: count 0, text none")
            let file = directory.appendingPathComponent("defaults-test-helper/settings.json")
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
            #expect(object?.isEmpty == true)
        }
    }
}
