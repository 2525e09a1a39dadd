@testable import Defaults
import Testing

/// Which schema a publish keeps where versions of a program share a backend: newer replaces
/// older, and nothing else.
@Suite struct SchemaPrecedenceTests {
    /// A schema of the keys `keys`, listing the migrations `migrations`, of `version`.
    static func schema(_ keys: [String], migrations: [String] = [], version: String? = nil) -> Defaults.JSONValue {
        var document: [String: Defaults.JSONValue] = [
            "properties": .object(Dictionary(uniqueKeysWithValues: keys.map { ($0, .object([:])) }))
        ]
        if !migrations.isEmpty {
            document["x-migrations"] = .array(migrations.map { .object(["id": .string($0)]) })
        }
        if let version { document["x-program-version"] = .string(version) }
        return .object(document)
    }

    @Test(
        arguments: [
            // (ours, kept, expected)
            (schema(["a"]), nil, SchemaPrecedence.replace),
            (schema(["a"]), schema(["a"]), .same),
            (schema(["a"]), .string("not a schema"), .replace),
            (schema(["a", "b"], migrations: ["m1", "m2"]), schema(["a"], migrations: ["m1"]), .replace),
            (schema(["a"], migrations: ["m1"]), schema(["a", "b"], migrations: ["m1", "m2"]), .keep),
            // Migrations decide before versions: a program never forgets one.
            (
                schema(["a"], migrations: ["m1", "m2"], version: "1"), schema(["b"], migrations: ["m1"], version: "9"),
                .replace
            ),
            (schema(["a", "b"], version: "1.10"), schema(["a"], version: "1.9"), .replace),
            (schema(["a"], version: "1.9"), schema(["a", "b"], version: "1.10"), .keep),
            (schema(["a", "b"], version: "2.0.1"), schema(["a"], version: "2.0"), .replace),
            (schema(["a", "b"], version: "2.0-rc2"), schema(["a"], version: "2.0-rc10"), .keep),
            (schema(["a", "b"], version: "1"), schema(["a"]), .replace),
            (schema(["a"]), schema(["a", "b"], version: "1"), .keep),
        ] as [(Defaults.JSONValue, Defaults.JSONValue?, SchemaPrecedence)]
    )
    func newerReplacesOlder(ours: Defaults.JSONValue, kept: Defaults.JSONValue?, expected: SchemaPrecedence) {
        #expect(SchemaPrecedence(ours: ours, kept: kept) == expected)
    }

    @Test func whatNothingDecidesLeavesTheKeptOneAndSaysWhy() {
        let neither = SchemaPrecedence(ours: Self.schema(["a", "b"]), kept: Self.schema(["a"]))
        #expect(
            neither
                == .undecided(
                    "another version of the program published a different schema with the same migrations, and neither gives a version to say which is newer (publishSchema's version:)"
                )
        )
        let sameVersion = SchemaPrecedence(
            ours: Self.schema(["a", "b"], version: "3.1"),
            kept: Self.schema(["a"], version: "3.1")
        )
        #expect(
            sameVersion
                == .undecided(
                    "a program of the same version (3.1) published a different schema with the same migrations; one of them was given the wrong version"
                )
        )
        // Migrations that part ways, and no version.
        let parted = SchemaPrecedence(
            ours: Self.schema(["a"], migrations: ["m1", "x"]),
            kept: Self.schema(["a"], migrations: ["m1", "y"])
        )
        guard case .undecided(let reason) = parted else {
            Issue.record("\(parted)")
            return
        }
        #expect(reason.contains("with other migrations"))
    }
}
