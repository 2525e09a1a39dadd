import DefaultsObservation
import DefaultsTestSupport
import Foundation
import Testing

/// The article "Writing a backend" shows ArticleBackend.swift's backend, and it works.
@Suite struct ArticleBackendTests {
    @Test func theArticleShowsTheBackendThisTargetCompiles() throws {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let root = here.deletingLastPathComponent().deletingLastPathComponent()
        let source = try String(contentsOf: here.appendingPathComponent("ArticleBackend.swift"), encoding: .utf8)
        let article = try String(
            contentsOf: root.appendingPathComponent("DocC/Defaults.docc/WritingABackend.md"),
            encoding: .utf8
        )
        let begin = try #require(source.range(of: "// article: begin\n"))
        let end = try #require(source.range(of: "// article: end\n"))
        let code = String(source[begin.upperBound..<end.lowerBound])
        #expect(
            article.contains("```swift\n" + code + "```\n"),
            "the article's backend differs from ArticleBackend.swift"
        )
    }

    @Test func aChangeOfTheDictionaryReachesTheSuiteAsAnOutsideChange() async throws {
        let backend = DictionaryBackend()
        let suite = Defaults.Suite(backend: backend)
        let key = Defaults.Key<String>("logLevel", default: "info", suite: suite)
        let told = EventLog<Defaults.KeyChange<String>>()
        let observation = Defaults.observe(key, options: []) { told.append($0) }
        backend.set(.string("debug"), forKey: "logLevel")
        #expect(await told.wait(forCount: 1))
        #expect(told.all == [Defaults.KeyChange(oldValue: "info", newValue: "debug")])
        #expect(suite[key] == "debug")
        // A write through the suite reaches the dictionary at synchronize(), and is no outside change.
        suite[key] = "warning"
        try suite.synchronize()
        #expect(try backend.load().values["logLevel"] == .string("warning"))
        try suite.exclusiveTransaction { suite[key] += "!" }
        #expect(try backend.load().values["logLevel"] == .string("warning!"))
        backend.set(nil, forKey: "logLevel")
        #expect(await told.wait(forCount: 4))
        #expect(told.all.map(\.newValue) == ["debug", "warning", "warning!", "info"])
        _ = observation
    }
}
