import Defaults
import Foundation
import Testing

@Suite struct SerializationKeyNameTests {
    private static let names = [
        "com.example.dotted.name",
        "..leading and trailing dots..",
        "with spaces  and\ttabs",
        "user@example.com",
        "日本語のキー",
        "émoji 🎉👨‍👩‍👧",
        "مفتاح",
        #"quote " and backslash \"#,
        "/slashes/like/a/path",
        "new\nline",
        "\u{0}",
        " ",
    ]

    @Test func anyNonEmptyNameWorksThroughTheFile() throws {
        try withSerializationFile { file in
            let writer = file.makeSuite()
            for (index, name) in Self.names.enumerated() {
                writer[Defaults.Key<Int>(name, default: -1, suite: writer)] = index
            }
            try writer.synchronize()

            let members = try file.members()
            #expect(Set(members.keys) == Set(Self.names))
            let reader = try file.makeReader()
            for (index, name) in Self.names.enumerated() {
                #expect(
                    reader[Defaults.Key<Int>(name, default: -1, suite: reader)] == index,
                    "\(name.debugDescription)"
                )
                #expect(members[name] == .number(String(index)))
            }
            #expect(try file.text().contains(#""user@example.com" : 3"#))
            #expect(try file.text().contains(#""日本語のキー" : 4"#))
            #expect(file.errors.errors.isEmpty)
        }
    }

    @Test func keysWithTheSameNameShareOneStoredValue() throws {
        try withSerializationFile { file in
            let suite = file.makeSuite()
            let first = Defaults.Key<String>("shared.name", default: "", suite: suite)
            let second = Defaults.Key<String>("shared.name", default: "other default", suite: suite)
            suite[first] = "written once"
            #expect(suite[second] == "written once")
            #expect(first == second)
        }
    }

    @Test func anEmptyNameStopsTheProgram() async {
        await #expect(processExitsWith: .failure) {
            _ = Defaults.Key<Int>("", default: 0, suite: .inMemory())
        }
    }
}
