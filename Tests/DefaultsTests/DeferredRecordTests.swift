// @testable: looks at how a file's record of migrations is held (`FileStorage.Snapshot`,
// `JSONParser`, `FileBackend.differences`).
@testable import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// The record of migrations is checked as JSON when the file is read, and made only when asked.
///
/// It is the settings file's member named `""`: a program whose migrations all ran opens without
/// parsing its hundred ids. Nothing else may change.
@Suite struct DeferredRecordTests {
    /// A record with what a parse can get wrong: escapes, non-ASCII text, nesting, every literal.
    ///
    /// Ids longer than eight bytes too, where a plain one is passed over a word at a time and
    /// the first byte that is not plain comes at each place in a word.
    static let record =
        #"{"migrations" : ["é from \"e\"", "b from a", "c from c (Int)", "\u00e9\ud83d\ude00", "editor.fontSize from fontSize", "abcdefgh", "abcdefghé", "abcdefghijklmn\tx", "abcdefghijklmnopqrstuvwx"], "claim" : {"by" : [1, 2.5e3, true, false, null, {}]}}"#

    private func whole(_ bytes: [UInt8]) throws -> [String: JSONValue] {
        guard case .object(let members) = try JSONParser.parse(bytes) else { throw CancellationError() }
        return members
    }

    @Test func aReadLeavesTheRecordUnparsedAndMakesItAsAWholeParseDoes() throws {
        let bytes = Array(#"{"a" : 1, "" : \#(Self.record), "z" : "last"}"#.utf8)
        let snapshot = try #require(try FileStorage.snapshot(of: bytes))
        #expect(snapshot.deferredRecord != nil)
        #expect(snapshot.parsedMembers.index(forKey: "") == nil)
        #expect(snapshot.parsedMembers.count == 2)
        #expect(snapshot.members == (try whole(bytes)))
        #expect(snapshot.record == (try whole(bytes))[""])
        #expect(snapshot.memberStarts?.count == 3)
    }

    /// Records a whole parse refuses, each refused the same way while left unparsed.
    static let brokenRecords: [[UInt8]] = [
        Array(#"{"migrations" : ["a",]}"#.utf8),
        Array(#"{"migrations" : ["a" "b"]}"#.utf8),
        Array(#"{"migrations" : [tru]}"#.utf8),
        Array(#"{"migrations" : ["\ud800"]}"#.utf8),
        Array(#"{"migrations" : ["\q"]}"#.utf8),
        Array(#"{"migrations" : ["a"#.utf8) + [0x0A] + Array(#""]}"#.utf8),
        Array(#"{"migrations" : [""#.utf8) + [0xC3, 0x28] + Array(#""]}"#.utf8),
        Array(#"{"migrations" : 01}"#.utf8),
        Array(#"{"migrations" : ["a"], }"#.utf8),
        Array(#"{"migrations" ["a"]}"#.utf8),
        Array(#"{migrations : ["a"]}"#.utf8),
        Array(#"{"migrations" : ["a"] "b" : 1}"#.utf8),
        Array(#"{"migrations" : [1 2]}"#.utf8),
        Array(#"{"migrations" : "unterminated"#.utf8),
        Array(#"{"migrations" : -}"#.utf8),
        // The same faults past the first eight bytes of an id, where plain ones are passed over
        // a word at a time.
        Array(#"{"migrations" : ["abcdefghijk"#.utf8) + [0x0A] + Array(#"lmn"]}"#.utf8),
        Array(#"{"migrations" : ["abcdefgh"#.utf8) + [0x01] + Array(#""]}"#.utf8),
        Array(#"{"migrations" : ["abcdefghijklmnop\q"]}"#.utf8),
        Array(#"{"migrations" : ["abcdefghijklmnop"#.utf8) + [0xC3, 0x28] + Array(#""]}"#.utf8),
        Array(#"{"migrations" : ["abcdefghijklmno"#.utf8) + [0xFF] + Array(#"abcdefgh"]}"#.utf8),
        // A byte that is not plain before the quote in the same word: the first one flagged counts.
        Array(#"{"migrations" : ["abc"#.utf8) + [0x01] + Array(#"de", "f"]}"#.utf8),
        Array(#"{"migrations" : ["abcdefghab"#.utf8) + [0xC3, 0x28] + Array(#"", "f"]}"#.utf8),
        Array(#"{"migrations" : ["abcdefghabc\x"]}"#.utf8),
        // What the one loop over a list of plain ids leaves to the full check: a comma too
        // many or missing, and the wrong closing bracket.
        Array(#"{"migrations" : ["a",]}"#.utf8),
        Array(#"{"migrations" : ["abcdefghijklmnop",   ]}"#.utf8),
        Array(#"{"migrations" : ["a" "b"]}"#.utf8),
        Array(#"{"migrations" : [,"a"]}"#.utf8),
        Array(#"{"migrations" : [,]}"#.utf8),
        Array(#"{"migrations" : ["a",,"b"]}"#.utf8),
        Array(#"{"migrations" : ["a"}"#.utf8),
        Array(#"{"migrations" : ["abcdefgh", "ijklmnop"#.utf8),
        Array(repeating: UInt8(ascii: "["), count: 600) + Array(repeating: UInt8(ascii: "]"), count: 600),
        Array(String(repeating: #"{"a" : "#, count: 600).utf8) + Array(repeating: UInt8(ascii: "}"), count: 600),
    ]

    /// By its index in ``brokenRecords``: a failure then names it in a few characters.
    @Test(arguments: brokenRecords.indices)
    func aBrokenRecordBreaksTheFileAsAWholeParseSays(index: Int) throws {
        let bytes = Array(#"{"a" : 1, "" : "#.utf8) + Self.brokenRecords[index] + Array(#", "z" : 2}"#.utf8)
        var deferred: String?
        do { _ = try FileStorage.snapshot(of: bytes) } catch { deferred = error.description }
        var parsed: String?
        do { _ = try JSONParser.parse(bytes) } catch { parsed = error.description }
        #expect(parsed != nil)
        #expect(deferred == parsed)
    }

    /// Ids of every length up to three words, indented by runs of spaces of every width up to
    /// three words: a plain id ends at its quote, wherever in a word that falls, and a run of
    /// spaces at the first byte that is not one (a tab, a newline, the next value).
    @Test func idsAndIndentationOfEveryWidthArePassedOverExactly() throws {
        for width in 0...24 {
            let indentation = String(repeating: " ", count: width)
            let ids = (0...24).map { "\"" + String(repeating: "x", count: $0) + "\"" }
            let record =
                "{\n\(indentation)\"migrations\"\(indentation):\(indentation)[\n\(indentation)"
                + ids.joined(separator: ",\(indentation)\t\(indentation)\n\(indentation)")
                + "\(indentation)]\(indentation)}"
            let bytes = Array("{\"a\" : 1, \"\" :\(indentation)\(record)\(indentation), \"z\" : \"last\"}".utf8)
            let snapshot = try #require(try FileStorage.snapshot(of: bytes))
            #expect(snapshot.deferredRecord != nil)
            #expect(snapshot.members == (try whole(bytes)), "indented by \(width)")
            #expect(snapshot.parsedMembers["z"] == .string("last"), "indented by \(width)")
        }
    }

    @Test func aRecordNestedToTheLimitIsTakenAsAWholeParseTakesIt() throws {
        let record =
            Array(String(repeating: #"{"a" : "#, count: 510).utf8) + [UInt8(ascii: "1")]
            + Array(repeating: UInt8(ascii: "}"), count: 510)
        let bytes = Array(#"{"" : "#.utf8) + record + Array(#", "z" : 2}"#.utf8)
        let snapshot = try #require(try FileStorage.snapshot(of: bytes))
        #expect(snapshot.deferredRecord != nil)
        #expect(snapshot.members == (try whole(bytes)))
    }

    @Test func aRecordGivenTwiceKeepsItsLastAndNoStarts() throws {
        let bytes = Array(#"{"" : {"migrations" : ["first"]}, "a" : 1, "" : {"migrations" : ["second"]}}"#.utf8)
        let snapshot = try #require(try FileStorage.snapshot(of: bytes))
        #expect(snapshot.members == (try whole(bytes)))
        #expect(snapshot.memberStarts == nil)
    }

    @Test func aChangeBesideTheRecordKeepsItUnparsedAndAChangeOfItIsFound() throws {
        var members: [String: JSONValue] = [:]
        for index in 0..<40 { members["setting-\(index)"] = .number("\(index)") }
        members[""] = try JSONParser.parse(Array(Self.record.utf8))
        let known = try #require(try FileStorage.snapshot(of: JSONWriter.prettyBytes(.object(members))))
        #expect(known.deferredRecord != nil)

        members["setting-20"] = .string("changed")
        let bytes = JSONWriter.prettyBytes(.object(members))
        let changed = try #require(FileStorage.parseChange(of: known, to: bytes))
        #expect(changed.deferredRecord != nil)
        #expect(changed.members == (try whole(bytes)))
        let changes: [String: JSONValue?] = ["setting-20": .string("changed")]
        #expect(FileBackend.differences(from: known, to: changed, excluding: [:]) == changes)

        // One more id in the record: found, with the record as a whole parse makes it.
        members[""] = .object(["migrations": .array([.string("b from a"), .string("d from c")])])
        let recordBytes = JSONWriter.prettyBytes(.object(members))
        let next = try #require(try FileStorage.snapshot(of: recordBytes))
        let recordChange: [String: JSONValue?] = ["": members[""]]
        #expect(FileBackend.differences(from: changed, to: next, excluding: [:]) == recordChange)
        // The same record written again by another hand: its text is compared, and it is the same.
        let again = try #require(try FileStorage.snapshot(of: recordBytes))
        #expect(FileBackend.differences(from: next, to: again, excluding: [:]).isEmpty)
        // Gone: found gone.
        members[""] = nil
        let gone = try #require(try FileStorage.snapshot(of: JSONWriter.prettyBytes(.object(members))))
        let removal: [String: JSONValue?] = ["": JSONValue?.none]
        #expect(FileBackend.differences(from: again, to: gone, excluding: [:]) == removal)
    }

    /// A write of another key puts the record back as the file held it, byte for byte, however it
    /// was written, and its migrations still count as run.
    @Test func aWriteKeepsTheRecordsTextAndItsMigrationsStillCount() throws {
        try withTemporaryDirectory { directory in
            let file = storeSettingsURL(in: directory)
            let record = #"{"migrations":["setting from old"] , "note": "kept as written"}"#
            try storeWriteFile(file, Array(#"{"" : \#(record), "setting" : 5}"#.utf8))
            let suite = Defaults.Suite(fileURL: file)
            let setting = Defaults.Key<Int>("setting", default: 0, suite: suite, formerly: ["old"])
            #expect(suite[setting] == 5)
            suite[Defaults.Key<Int>("other", default: 0, suite: suite)] = 1
            try suite.synchronize()
            #expect(suite.fileReplacementCount == 1)
            let text = try storeFileText(file)
            #expect(text.contains(#""" : \#(record),"#), "\(text)")
            #expect(try storeFileObject(file).count == 3)
            #expect(suite.appliedMigrations == ["setting from old"])
        }
    }

    /// Another process that adds to the record is seen, though this one never parsed the old one.
    @Test func aRecordChangedElsewhereIsSeen() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try ExternalChangeFixture(
                in: directory,
                seed: #"{"" : {"migrations" : ["a from b"]}, "port" : 1}"#
            )
            defer { fixture.recorder.stop() }
            #expect(fixture.suite[fixture.key("port")] == 1)
            try fixture.saveLikeAnEditor(#"{"" : {"migrations" : ["a from b", "c from d"]}, "port" : 2}"#)
            await fixture.waitForEvents(1)
            #expect(fixture.suite.appliedMigrations == ["a from b", "c from d"])
        }
    }
}
