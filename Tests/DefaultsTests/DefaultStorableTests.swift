import Defaults
import Foundation
import Testing

@Suite struct DefaultStorableTests {
    private static let bright = VisualSettings(themeName: "bright", fontSize: 13.5, accents: ["é", "🎨"])
    private static let dim = VisualSettings(themeName: "dim", fontSize: 11, accents: [])

    @Test func theDefaultIdentifierIsTheTypesName() {
        #expect(VisualSettings.defaultIdentifier == "VisualSettings")
        #expect(WindowLayout.defaultIdentifier == "WindowLayout")
    }

    @Test func writeStoresTheValueUnderItsTypeNameAsAJSONObject() throws {
        try withSerializationFile { file in
            try withStorableSuite(file.makeSuite()) { suite in
                Self.bright.write()
                #expect(VisualSettings.read() == Self.bright)
                try suite.synchronize()
            }
            let stored = try file.members()["VisualSettings"]
            #expect(
                stored
                    == .object([
                        "themeName": .string("bright"),
                        "fontSize": .number("13.5"),
                        "accents": .array([.string("é"), .string("🎨")]),
                    ])
            )
            try withStorableSuite(try file.makeReader()) { _ in
                #expect(VisualSettings.read() == Self.bright)
            }
            #expect(file.errors.errors.isEmpty)
        }
    }

    @Test func writeWithKeyAndReadForKeyUseTheGivenName() throws {
        try withSerializationFile { file in
            try withStorableSuite(file.makeSuite()) { suite in
                Self.bright.write(withKey: "settings.bright")
                Self.dim.write(withKey: "settings.dim")
                #expect(VisualSettings.read() == nil)
                #expect(VisualSettings.read(forKey: "settings.bright") == Self.bright)
                try suite.synchronize()
            }
            #expect(Set(try file.members().keys) == ["settings.bright", "settings.dim"])
            try withStorableSuite(try file.makeReader()) { _ in
                #expect(VisualSettings.read(forKey: "settings.bright") == Self.bright)
                #expect(VisualSettings.read(forKey: "settings.dim") == Self.dim)
                #expect(VisualSettings.read() == nil)
            }
        }
    }

    @Test func clearRemovesTheStoredValue() throws {
        try withSerializationFile { file in
            try withStorableSuite(file.makeSuite()) { suite in
                Self.bright.write()
                Self.bright.write(withKey: "a")
                Self.dim.write(withKey: "b")
                Self.dim.write(withKey: "c")

                VisualSettings.clear()
                #expect(VisualSettings.read() == nil)
                VisualSettings.clear(forKey: "a")
                #expect(VisualSettings.read(forKey: "a") == nil)
                Self.dim.clear(forKey: "b")
                #expect(VisualSettings.read(forKey: "b") == nil)
                #expect(VisualSettings.read(forKey: "c") == Self.dim)
                try suite.synchronize()
            }
            #expect(Set(try file.members().keys) == ["c"])

            try withStorableSuite(file.makeSuite()) { suite in
                Self.bright.write()
                Self.bright.clear()
                #expect(VisualSettings.read() == nil)
                try suite.synchronize()
            }
            #expect(Set(try file.members().keys) == ["c"])
        }
    }

    @Test func readReturnsNilByDefaultWhenNothingIsStored() throws {
        #expect(VisualSettings.defaultValue == nil)
        try withSerializationFile { file in
            try withStorableSuite(file.makeSuite()) { _ in
                #expect(VisualSettings.read() == nil)
                #expect(VisualSettings.read(forKey: "missing") == nil)
            }
        }
    }

    @Test func anOverriddenDefaultValueIsReadWhenNothingValidIsStored() throws {
        try withSerializationFile { file in
            try Data(#"{ "broken" : "not an object" }"#.utf8).write(to: file.url)
            try withStorableSuite(file.makeSuite()) { _ in
                #expect(WindowLayout.read() == .standard)
                #expect(WindowLayout.read(forKey: "broken") == .standard)
                let custom = WindowLayout(columns: 3, sidebar: false)
                custom.write()
                #expect(WindowLayout.read() == custom)
                WindowLayout.clear()
                #expect(WindowLayout.read() == .standard)
            }
        }
    }

    /// Runs `body` with `suite` as the suite every `DefaultStorable` type of these tests uses.
    private func withStorableSuite(
        _ suite: Defaults.Suite,
        _ body: (Defaults.Suite) throws -> Void
    ) throws {
        try StorableSuite.$current.withValue(suite) { try body(suite) }
    }
}

extension DefaultStorableTests {
    /// The suite `DefaultStorable` types of these tests use, set per test.
    fileprivate enum StorableSuite {
        @TaskLocal static var current: Defaults.Suite?
        /// Outside a test's scope: a throwaway suite, never the standard one.
        static var fallback: Defaults.Suite { .inMemory() }
    }

    fileprivate struct VisualSettings: Codable, Equatable, DefaultStorable {
        static var suite: Defaults.Suite { StorableSuite.current ?? StorableSuite.fallback }

        var themeName: String
        var fontSize: Double
        var accents: [String]
    }

    fileprivate struct WindowLayout: Codable, Equatable, DefaultStorable {
        static let standard = WindowLayout(columns: 2, sidebar: true)
        static var suite: Defaults.Suite { StorableSuite.current ?? StorableSuite.fallback }
        static var defaultValue: WindowLayout? { .standard }

        var columns: Int
        var sidebar: Bool
    }
}
