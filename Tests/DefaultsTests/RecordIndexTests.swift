import DefaultsTestSupport
import Foundation
import Testing

// @testable: unit tests of the record of migrations' index (`RecordIndex`).
@testable import Defaults

/// The index a store keeps of its record of migrations: found exactly when the record lists the
/// key's id, byte for byte, whatever the names hold.
@Suite struct RecordIndexTests {
    typealias HashedName = Defaults.Suite.HashedName

    /// A record listing `ids`, as the store keeps it.
    static func record(_ ids: [String]) -> Defaults.JSONValue {
        .object(["migrations": .array(ids.map { .string($0) })])
    }

    /// Each kind of id the store writes, and names that look like its separators.
    static let shapes: [(name: String, formerly: [String], convertsFrom: String?)] = [
        ("editor.fontSize", ["fontSize"], nil),
        ("size", ["width", "w"], nil),
        ("theme", [], "Bool"),
        ("theme", ["theme", "darkMode"], "Bool"),
        ("hours", ["minutes"], "Int"),
        ("a from b", ["c, d"], nil),
        ("a", ["from b from c"], nil),
        ("café", ["cafe\u{301}"], "String"),
        ("a-name-much-longer-than-any-small-string-holds-in-place", ["another-quite-long-former-name"], "Int"),
    ]

    @Test func everyIdTheStoreWritesIsFoundAndNothingElse() {
        let ids = Self.shapes.map {
            Defaults.Suite.migrationID(name: $0.name, formerly: $0.formerly, convertsFrom: $0.convertsFrom)
        }
        let index = RecordIndex(Self.record(ids))
        for shape in Self.shapes {
            #expect(index.lists(HashedName(shape.name), formerly: shape.formerly, convertsFrom: shape.convertsFrom))
        }
        // Near misses: another type, a former name more or less, a name the record lists only as
        // part of another's id.
        #expect(!index.lists(HashedName("theme"), formerly: [], convertsFrom: "Int"))
        #expect(!index.lists(HashedName("theme"), formerly: [], convertsFrom: nil))
        #expect(!index.lists(HashedName("size"), formerly: ["width"], convertsFrom: nil))
        #expect(!index.lists(HashedName("size"), formerly: ["width", "w", "x"], convertsFrom: nil))
        #expect(!index.lists(HashedName("a"), formerly: ["b from c"], convertsFrom: nil))
        #expect(!index.lists(HashedName("a from"), formerly: ["b from c, d"], convertsFrom: nil))
        // An id is its text: pieces that join to the same text are the same id, as the record
        // compares them.
        #expect(index.lists(HashedName("a"), formerly: ["b from c, d"], convertsFrom: nil))
        #expect(index.lists(HashedName("a from b"), formerly: ["c", "d"], convertsFrom: nil))
        #expect(!index.lists(HashedName("editor.fontSize"), formerly: ["fontSiz"], convertsFrom: nil))
        #expect(!index.lists(HashedName("editor.fontSize"), formerly: ["fontSizes"], convertsFrom: nil))
        // Bytes, not canonical equivalence: the other spelling of "café" is another id here.
        #expect(!index.lists(HashedName("cafe\u{301}"), formerly: ["cafe\u{301}"], convertsFrom: "String"))
    }

    @Test func anEmptyOrMissingRecordListsNothing() {
        for record in [nil, Self.record([]), .object([:]), .string("x"), .object(["migrations": .string("x")])] {
            let index = RecordIndex(record)
            #expect(!index.lists(HashedName("fontSize"), formerly: ["old"], convertsFrom: nil))
        }
        // Values that are not ids are skipped, the ids beside them found.
        let mixed = Defaults.JSONValue.object(["migrations": .array([.number("1"), .string("a from b"), .null])])
        #expect(RecordIndex(mixed).lists(HashedName("a"), formerly: ["b"], convertsFrom: nil))
    }

    @Test func aThousandIdsAreAllFound() {
        let ids = (0..<1000).map { "setting-\($0) from old-\($0)" }
        let index = RecordIndex(Self.record(ids))
        for number in 0..<1000 {
            #expect(index.lists(HashedName("setting-\(number)"), formerly: ["old-\(number)"], convertsFrom: nil))
        }
        #expect(!index.lists(HashedName("setting-1000"), formerly: ["old-1000"], convertsFrom: nil))
    }

    @Test func theIndexKnowsTheRecordItWasMadeOfAndNoOther() {
        let record = Self.record(["a from b"])
        let index = RecordIndex(record)
        #expect(index.isIndex(of: record))
        // The same ids in another list: made again (the check is the list's storage, not its text).
        #expect(!index.isIndex(of: Self.record(["a from b"])))
        #expect(!index.isIndex(of: Self.record(["a from b", "c from d"])))
        #expect(!index.isIndex(of: nil))
        #expect(RecordIndex(nil).isIndex(of: nil))
        #expect(RecordIndex(nil).isIndex(of: Self.record([])))
    }

    @Test func aKeyWhoseNameHoldsTheSeparatorIsFoundRecordedWhenOpenedAgain() throws {
        try withTemporaryDirectory { directory in
            let url = storeSettingsURL(in: directory)
            try storeWriteFile(url, Array(#"{"c, d": 7}"#.utf8))
            do {
                let suite = Defaults.Suite(fileURL: url)
                let key = Defaults.Key<Int>("a from b", default: 0, suite: suite, formerly: ["c, d"])
                #expect(suite[key] == 7)
                try suite.synchronize()
                #expect(suite.appliedMigrations == ["a from b from c, d"])
            }
            // An old version writes the former name again. Only a key that finds its migration
            // recorded moves it again (an unrecorded one would run, and find the record lists it).
            var members = try storeFileObject(url)
            #expect(members["c, d"] == nil)
            members["c, d"] = 9
            try JSONSerialization.data(withJSONObject: members).write(to: url)
            let suite = Defaults.Suite(fileURL: url)
            let key = Defaults.Key<Int>("a from b", default: 0, suite: suite, formerly: ["c, d"])
            #expect(suite[key] == 7)
            try suite.synchronize()
            #expect(suite.storedValue(named: "c, d") == nil)
            #expect(suite.appliedMigrations == ["a from b from c, d"])
        }
    }
}
