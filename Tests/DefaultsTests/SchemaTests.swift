import Defaults
import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The published schema, checked by a real JSON Schema validator against files the library wrote.
@Suite struct SchemaTests {
    enum Theme: String, CaseIterable, Defaults.Serializable {
        case light, dark, system
    }

    enum Speed: String, Codable, CaseIterable, Defaults.Serializable {
        case slow, fast
    }

    struct Window: Codable, Equatable, Defaults.Serializable {
        var width: Int
        var title: String
        var pinned: Bool
        var tags: [String]
        var opened: Date?
        var margins: [Double] = []
        var inner = Inner(depth: 1, speed: .slow)
    }

    struct Inner: Codable, Equatable {
        var depth: Int8
        var speed: Speed
    }

    /// A `Codable` type whose schema cannot be derived from its `init(from:)` (a raw-value enum
    /// that is not `CaseIterable` refuses the placeholder): described by its default's encoding.
    struct Legacy: Codable, Equatable, Defaults.Serializable {
        enum Kind: String, Codable { case old, new }
        var kind: Kind
        var count: Int
    }

    /// One key of each stored shape, on `suite`, with a value to write that is not its default.
    struct Keys {
        let suite: Defaults.Suite
        var fontSize: Defaults.Key<Int> {
            .init("fontSize", default: 13, suite: suite, summary: "Points", range: 6...72)
        }
        var small: Defaults.Key<Int8> { .init("small", default: 0, suite: suite) }
        var huge: Defaults.Key<UInt64> { .init("huge", default: 0, suite: suite) }
        var wide: Defaults.Key<Int64> { .init("wide", default: 0, suite: suite) }
        var giant: Defaults.Key<Int128> { .init("giant", default: 0, suite: suite) }
        var vast: Defaults.Key<UInt128> { .init("vast", default: 0, suite: suite) }
        var ratio: Defaults.Key<Double> { .init("ratio", default: 0.5, suite: suite, summary: "A ratio") }
        var scale: Defaults.Key<Float> { .init("scale", default: 1, suite: suite) }
        // Described since the compiler asks every built-in type for its schema: before, asking
        // for a CGFloat's recursed until the stack ran out.
        var zoom: Defaults.Key<CGFloat> { .init("zoom", default: 1, suite: suite) }
        var opacity: Defaults.Key<Double> { .init("opacity", default: 1, suite: suite, range: 0...1) }
        var enabled: Defaults.Key<Bool> { .init("enabled", default: false, suite: suite) }
        var name: Defaults.Key<String?> { .init("name", suite: suite, summary: "Who") }
        var since: Defaults.Key<Date> { .init("since", suite: suite) { Date(timeIntervalSince1970: 0) } }
        var blob: Defaults.Key<Data> { .init("blob", default: Data(), suite: suite) }
        var home: Defaults.Key<URL> { .init("home", default: URL(string: "https://example.com")!, suite: suite) }
        var id: Defaults.Key<UUID> {
            .init("id", default: UUID(uuidString: "00000000-0000-0000-0000-000000000000")!, suite: suite)
        }
        var recent: Defaults.Key<[String]> { .init("recent", default: [], suite: suite) }
        var counts: Defaults.Key<[Int: Double]> { .init("counts", default: [:], suite: suite) }
        var window: Defaults.Key<Window> {
            .init("window", default: Window(width: 640, title: "Main", pinned: false, tags: ["a"]), suite: suite)
        }
        var theme: Defaults.Key<Theme> { .init("theme", default: .system, suite: suite, summary: "Colours") }
        var speed: Defaults.Key<Speed> { .init("speed", default: .slow, suite: suite) }
        var span: Defaults.Key<ClosedRange<Int>> { .init("span", default: 0...1, suite: suite) }
        var tags: Defaults.Key<Set<String>> { .init("tags", default: [], suite: suite) }
        var maybe: Defaults.Key<[Int?]> { .init("maybe", default: [], suite: suite) }
        var legacy: Defaults.Key<Legacy> { .init("legacy", default: Legacy(kind: .old, count: 1), suite: suite) }

        var all: [Defaults.Keys] {
            [
                fontSize, small, huge, wide, giant, vast, ratio, scale, zoom, opacity, enabled, name, since, blob, home,
                id, recent,
                counts,
                window, theme, speed, span, tags, maybe, legacy,
            ]
        }

        /// Writes a value other than the default to every key: extremes, NaN and infinities too.
        func writeEverything(variant: Int) {
            suite[fontSize] = variant == 0 ? 6 : 72
            suite[small] = variant == 0 ? .min : .max
            suite[huge] = .max
            suite[wide] = variant == 0 ? .min : .max
            suite[giant] = variant == 0 ? .min : .max
            suite[vast] = variant == 0 ? .max : .max - 1
            suite[ratio] = variant == 0 ? .nan : -.infinity
            suite[scale] = variant == 0 ? .greatestFiniteMagnitude : .infinity
            suite[zoom] = variant == 0 ? .nan : 2.5
            suite[opacity] = 0.25
            suite[enabled] = true
            suite[name] = "Ada"
            suite[since] = variant == 0 ? Date(timeIntervalSinceReferenceDate: 0.1) : Date(timeIntervalSince1970: 1.5)
            suite[blob] = Data([0, 1, 2, 255])
            suite[home] = URL(fileURLWithPath: "/tmp/a b")
            suite[id] = UUID()
            suite[recent] = ["a", "é"]
            suite[counts] = [-1: 0.5, 7: .infinity]
            suite[window] = Window(
                width: 800,
                title: "Other",
                pinned: true,
                tags: [],
                opened: variant == 0 ? nil : Date(timeIntervalSince1970: 7),
                margins: [.nan, 1.5, -.infinity],
                inner: Inner(depth: .min, speed: .fast)
            )
            suite[legacy] = Legacy(kind: .new, count: -3)
            suite[theme] = .dark
            suite[speed] = .fast
            suite[span] = -5...5
            suite[tags] = ["x", "y"]
            suite[maybe] = [1, nil, 3]
        }
    }

    @Test func everyFileTheLibraryWritesValidatesAgainstItsSchema() async throws {
        try await withTemporaryDirectory(prefix: "SchemaTests") { directory in
            var files: [URL] = []
            var schemaFile: URL?
            for variant in 0..<2 {
                let file = directory.appendingPathComponent("v\(variant)/settings.json")
                let suite = Defaults.Suite(fileURL: file)
                let keys = Keys(suite: suite)
                #expect(try suite.publishSchema(for: keys.all))
                keys.writeEverything(variant: variant)
                try suite.synchronize()
                files.append(file)
                schemaFile = suite.schemaFileURL
            }
            // The file with nothing written but a `$schema` reference validates too.
            let referencing = directory.appendingPathComponent("referencing.json")
            try Data(#"{ "$schema" : "./settings.schema.json", "unknown" : [1] }"#.utf8).write(to: referencing)
            files.append(referencing)
            let failures = try await SchemaValidator.failures(of: files, against: try #require(schemaFile))
            #expect(failures.isEmpty, "\(failures)")
        }
    }

    @Test(arguments: [
        ("fontSize", #""big""#), ("fontSize", "100"), ("fontSize", "5"), ("fontSize", "1.5"),
        ("small", "128"), ("huge", "-1"), ("huge", "18446744073709551616"), ("wide", "9223372036854775808"),
        ("giant", "170141183460469231731687303715884105728"), ("giant", "-170141183460469231731687303715884105729"),
        ("vast", "340282366920938463463374607431768211456"), ("vast", "-1"),
        ("ratio", #""nan""#), ("scale", "1e39"), ("opacity", "1.5"), ("opacity", #""NaN""#),
        ("enabled", "1"), ("name", "3"), ("since", "true"), ("blob", #""not base64!""#), ("home", "7"),
        ("id", #""not-a-uuid""#), ("recent", #"[1]"#), ("counts", #"{"one": 1}"#), ("counts", #"{"1": "x"}"#),
        ("window", #"{"width": "wide"}"#), ("window", #"{"title": "T", "pinned": true, "tags": []}"#),
        (
            "window",
            #"{"width": 1, "title": "T", "pinned": true, "tags": [], "inner": {"depth": 300, "speed": "slow"}}"#
        ),
        ("window", #"{"width": 1, "title": "T", "pinned": true, "tags": [], "inner": {"depth": 3, "speed": "warp"}}"#),
        ("window", #"{"width": 1, "title": "T", "pinned": true, "tags": [], "opened": "today"}"#),
        ("legacy", #"{"kind": 1, "count": 1}"#), ("theme", #""sepia""#), ("speed", #""warp""#), ("span", "[1]"),
        ("tags", #""x""#), ("maybe", #"[1, "two"]"#),
    ])
    func aWrongValueFailsValidationNamingItsKey(key: String, json: String) async throws {
        try await withTemporaryDirectory(prefix: "SchemaTests") { directory in
            let suite = Defaults.Suite(fileURL: directory.appendingPathComponent("settings.json"))
            try suite.publishSchema(for: Keys(suite: suite).all)
            let wrong = directory.appendingPathComponent("wrong.json")
            try Data(#"{ "\#(key)" : \#(json) }"#.utf8).write(to: wrong)
            let failures = try await SchemaValidator.failures(of: [wrong], against: try #require(suite.schemaFileURL))
            #expect(!failures.isEmpty)
            #expect(failures.allSatisfy { $0.key == key }, "\(failures)")
        }
    }

    @Test func theSchemaSaysTypeDefaultSummaryAndRange() throws {
        let suite = Defaults.Suite.inMemory()
        let keys = Keys(suite: suite)
        guard case .object(let document) = suite.schema(for: keys.all),
            case .object(let properties)? = document["properties"],
            case .object(let fontSize)? = properties["fontSize"],
            case .object(let theme)? = properties["theme"],
            case .object(let since)? = properties["since"],
            case .object(let small)? = properties["small"]
        else {
            Issue.record("not a schema with properties")
            return
        }
        #expect(document["$schema"] == .string("https://json-schema.org/draft/2020-12/schema"))
        #expect(fontSize["type"] == .string("integer"))
        #expect(fontSize["minimum"] == .number("6"))
        #expect(fontSize["maximum"] == .number("72"))
        #expect(fontSize["default"] == .number("13"))
        #expect(fontSize["description"] == .string("Points"))
        #expect(fontSize["x-swift-type"] == .string("Int"))
        #expect(theme["enum"] == .array([.string("light"), .string("dark"), .string("system")]))
        #expect(since["default"] == nil)  // a dynamic default is not called
        #expect(small["minimum"] == .number("-128"))
        #expect(small["maximum"] == .number("127"))
        guard case .object(let window)? = properties["window"], case .object(let legacy)? = properties["legacy"] else {
            Issue.record("no window or legacy")
            return
        }
        #expect(
            window["required"]
                == .array(["inner", "margins", "pinned", "tags", "title", "width"].map(JSONValue.string))
        )
        #expect(legacy["required"] == nil)  // the fallback: the default's members, none required
        #expect(keys.fontSize.range == 6...72)
        #expect(keys.fontSize.summary == "Points")
        #expect(keys.small.range == nil)
        #expect(keys.small.summary == nil)
    }

    /// A key's migration in its entry: its former names, the id the store records, the type a
    /// conversion reads (named from the type only when asked), and `x-final` when it is not.
    @Test func theSchemaSaysEachKeysMigration() throws {
        let suite = Defaults.Suite.inMemory()
        let renamed = Defaults.Key<Int>("editor.fontSize", default: 13, suite: suite, formerly: ["fontSize"])
        let converted = Defaults.Key<Double>("hours", default: 1, suite: suite, formerly: ["minutes"], isFinal: false) {
            (minutes: Int) in Double(minutes) / 60
        }
        let plain = Defaults.Key<Int>("plain", default: 0, suite: suite)
        guard case .object(let document) = suite.schema(for: [renamed, converted, plain]),
            case .object(let properties)? = document["properties"],
            case .object(let rename)? = properties["editor.fontSize"],
            case .object(let conversion)? = properties["hours"],
            case .object(let none)? = properties["plain"]
        else {
            Issue.record("not a schema with properties")
            return
        }
        #expect(rename["x-formerly"] == .array([.string("fontSize")]))
        #expect(rename["x-migration"] == .string("editor.fontSize from fontSize"))
        #expect(rename["x-converts-from"] == nil)
        #expect(rename["x-final"] == nil)
        #expect(conversion["x-formerly"] == .array([.string("minutes")]))
        #expect(conversion["x-migration"] == .string("hours from minutes (Int)"))
        #expect(conversion["x-converts-from"] == .string("Int"))
        #expect(conversion["x-final"] == .bool(false))
        #expect(none["x-migration"] == nil && none["x-formerly"] == nil)
    }

    @Test func publishingTheSameKeysAgainDoesNotRewriteTheFile() throws {
        try withTemporaryDirectory(prefix: "SchemaTests") { directory in
            let suite = Defaults.Suite(fileURL: directory.appendingPathComponent("app/settings.json"))
            let keys = Keys(suite: suite)
            let schema = try #require(suite.schemaFileURL)
            #expect(schema.path == directory.appendingPathComponent("app/settings.schema.json").path)
            #expect(try suite.publishSchema(for: keys.all))
            let first = try inode(of: schema)
            #expect(try !suite.publishSchema(for: keys.all))
            #expect(try !Defaults.Suite(fileURL: suite.fileURL!).publishSchema(for: Keys(suite: suite).all))
            #expect(try inode(of: schema) == first)
            #expect(try suite.publishSchema(for: [keys.fontSize]))
            #expect(try inode(of: schema) != first)
            // Publishing touches only the schema: the settings file is not created.
            #expect(!FileManager.default.fileExists(atPath: suite.fileURL!.path))
        }
    }

    @Test func aSuiteThatIsNotAFilePublishesNothing() throws {
        let suite = Defaults.Suite.inMemory()
        #expect(suite.schemaFileURL == nil)
        #expect(try !suite.publishSchema(for: Keys(suite: suite).all))
    }

    @Test func aHandEditThatBreaksTheSchemaIsReportedOnceAndKept() throws {
        try withSerializationFile { file in
            try Data(#"{ "fontSize" : "big", "loose" : "text", "theme" : "sepia" }"#.utf8).write(to: file.url)
            let suite = file.makeSuite()
            let keys = Keys(suite: suite)
            let loose = Defaults.Key<Int>("loose", default: 1, suite: suite)
            try suite.publishSchema(for: [keys.fontSize, keys.theme])
            #expect(suite[keys.fontSize] == 13)
            #expect(suite[keys.fontSize] == 13)
            #expect(suite[keys.theme] == .system)
            #expect(suite[loose] == 1)  // not described: as before, nothing reported
            suite[keys.enabled] = true  // another write: the undecodable value is decoded again
            #expect(suite[keys.fontSize] == 13)
            let reports = file.errors.errors.map(\.description)
            #expect(
                reports == [
                    #"Defaults: "fontSize" holds "big", which is not a value of type Int; it reads its default, and the value stays stored until it is mended"#,
                    #"Defaults: "theme" holds "sepia", which is not a value of type Theme; it reads its default, and the value stays stored until it is mended"#,
                ]
            )
            try suite.synchronize()
            #expect(try file.members()["fontSize"] == .string("big"))
        }
    }

    @Test func aSchemaReferenceInTheFileIsKeptAndNeverReported() throws {
        try withSerializationFile { file in
            try Data(#"{ "$schema" : "./settings.schema.json", "fontSize" : 20 }"#.utf8).write(to: file.url)
            let suite = file.makeSuite()
            let keys = Keys(suite: suite)
            try suite.publishSchema(for: keys.all)
            #expect(suite[keys.fontSize] == 20)
            suite[keys.fontSize] = 30
            try suite.synchronize()
            let members = try file.members()
            #expect(members["$schema"] == .string("./settings.schema.json"))
            #expect(members["fontSize"] == .number("30"))
            #expect(file.errors.errors.isEmpty)
        }
    }

    private func inode(of url: URL) throws -> UInt {
        var info = stat()
        guard stat(url.path, &info) == 0 else { throw CocoaError(.fileNoSuchFile) }
        return UInt(info.st_ino)
    }
}
