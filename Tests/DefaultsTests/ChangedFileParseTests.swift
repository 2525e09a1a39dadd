// @testable: checks the reader's parse of a changed file against a whole parse (`FileStorage`,
// `Snapshot`).
@testable import Defaults
import Testing

/// A later version of a file parsed only where it differs from the one known
/// (`FileStorage.parseChange(of:to:)`) gives what a parse of the whole file gives, or nothing.
@Suite struct ChangedFileParseTests {
    /// A settings file as the library writes it, with values of every kind.
    private static func document(_ members: [String: JSONValue]) -> [UInt8] {
        JSONWriter.prettyBytes(.object(members))
    }

    private static let members: [String: JSONValue] = {
        var members: [String: JSONValue] = [:]
        for index in 0..<40 { members["setting-\(index)"] = .string("value \(index)") }
        members["size"] = .number("12")
        members["escaped"] = .string("a \"quoted\" \\ line\nand a tab\t")
        members["unicode"] = .string("é 😀 \u{7F}")
        members["nested"] = .object(["list": .array([.number("1"), .bool(true), .null]), "empty": .object([:])])
        members["stamp"] = .number("0")
        members["zero"] = .number("-0.5e+3")
        return members
    }()

    /// The snapshot of `bytes` parsed whole; `nil` when it is not an object or does not parse.
    private func whole(_ bytes: [UInt8]) -> FileStorage.Snapshot? {
        (try? FileStorage.snapshot(of: bytes)) ?? nil
    }

    /// Checks the parse of `new` as a change of `known` against a parse of all of it, and returns
    /// the snapshot to know next.
    @discardableResult
    private func check(
        _ known: FileStorage.Snapshot,
        _ new: [UInt8],
        expectsChangeParse: Bool? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> FileStorage.Snapshot? {
        let full = whole(new)
        let changed = FileStorage.parseChange(of: known, to: new)
        if let expectsChangeParse {
            #expect((changed != nil) == expectsChangeParse, sourceLocation: sourceLocation)
        }
        guard let changed else { return full }
        guard let full else {
            Issue.record("parsed as a change, but not whole: \(String(decoding: new, as: UTF8.self))")
            return nil
        }
        #expect(changed.members == full.members, sourceLocation: sourceLocation)
        #expect(changed.memberStarts == full.memberStarts, sourceLocation: sourceLocation)
        var differing: Set<String> = []
        for (name, value) in full.members where known.members[name] != value { differing.insert(name) }
        for name in known.members.keys where full.members[name] == nil { differing.insert(name) }
        #expect(changed.changes?.base == known.serial, sourceLocation: sourceLocation)
        #expect(Set(changed.changes?.names ?? []) == differing, sourceLocation: sourceLocation)
        #expect(changed.changes?.names.count == differing.count, sourceLocation: sourceLocation)
        return changed
    }

    private func replacing(_ bytes: [UInt8], _ old: String, with new: String) -> [UInt8] {
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains(old))
        return Array(text.replacing(old, with: new, maxReplacements: 1).utf8)
    }

    @Test func aChangedValueIsParsedAloneAndNamed() throws {
        let known = try #require(whole(Self.document(Self.members)))
        #expect(known.memberStarts?.count == Self.members.count)
        var members = Self.members
        members["stamp"] = .number("1")
        let changed = try #require(check(known, Self.document(members), expectsChangeParse: true))
        #expect(changed.changes?.names == ["stamp"])
    }

    @Test func addedRemovedAndRenamedMembersAreNamed() throws {
        let known = try #require(whole(Self.document(Self.members)))
        var members = Self.members
        members["setting-17"] = nil
        members["setting-170"] = .string("new")
        members["nested"] = .object(["list": .array([]), "empty": .object([:])])
        check(known, Self.document(members), expectsChangeParse: true)
        check(known, Self.document([:]))
        check(known, Self.document(["only": .null]))
    }

    @Test func aNumberThatGrowsPastWhereTheVersionsAgreeIsReadWhole() throws {
        // "12" becomes "123": the versions agree on "12", and a parse that took the shared
        // beginning as parsed would miss the digit after it.
        let known = try #require(whole(Self.document(Self.members)))
        let new = replacing(known.bytes, "\"size\" : 12,", with: "\"size\" : 123,")
        let changed = try #require(check(known, new, expectsChangeParse: true))
        #expect(changed.members["size"] == .number("123"))
    }

    @Test func aNameGivenTwiceIsLeftToTheWholeParseWhichKeepsTheLastValue() throws {
        let known = try #require(whole(Self.document(Self.members)))
        let new = replacing(known.bytes, "\"stamp\" : 0,", with: "\"stamp\" : 0,\n  \"setting-3\" : \"again\",")
        check(known, new, expectsChangeParse: false)
        #expect(whole(new)?.members["setting-3"] == .string("again"))
        #expect(whole(new)?.memberStarts == nil)
    }

    @Test func aBrokenVersionIsLeftToTheWholeParse() throws {
        let known = try #require(whole(Self.document(Self.members)))
        for broken in [
            replacing(known.bytes, "\"stamp\" : 0,", with: "\"stamp\" : ,"),
            replacing(known.bytes, "\"stamp\" : 0,", with: "\"stamp\" : 0"),
            replacing(known.bytes, "\"stamp\" : 0,", with: "\"stamp\" : \"\\x\","),
            replacing(known.bytes, "\"stamp\" : 0,", with: "\"stamp\" : 0,,"),
            Array(known.bytes.dropLast(2)),
            known.bytes + Array("{}".utf8),
            replacing(known.bytes, "\"stamp\" : 0,", with: "\"stamp\" : [0,"),
        ] {
            check(known, broken, expectsChangeParse: false)
            #expect(throws: JSONParser.Failure.self) { try FileStorage.snapshot(of: broken) }
        }
    }

    @Test func aByteOrderMarkOrAChangedFirstMemberIsReadWhole() throws {
        let known = try #require(whole(Self.document(Self.members)))
        check(known, [0xEF, 0xBB, 0xBF] + known.bytes, expectsChangeParse: false)
        var members = Self.members
        members["escaped"] = .string("the first member")
        check(known, Self.document(members), expectsChangeParse: false)
        #expect(whole([0xEF, 0xBB, 0xBF] + known.bytes)?.memberStarts == nil)
    }

    @Test func randomEditsParseAsTheWholeFileDoes() throws {
        var generator = SeededGenerator(seed: 21)
        let pieces = [
            "", " ", "\n", ",", ":", "\"", "\\", "{", "}", "[", "]", "0", "12", "-", "e5", ".5", "true", "null",
            "\"k\" : 1,", "\"setting-1\" : 2,", "\"z\" : {\"a\" : [1, 2]},", "é", "\\u00e9", "\\ud83d\\ude00", "\u{1}",
        ]
        var known = try #require(whole(Self.document(Self.members)))
        var parsedAsChanges = 0
        for round in 0..<3_000 {
            var bytes = known.bytes
            if round % 3 == 0 {
                // A value changed, added or removed, as a program writes it.
                var members = known.members
                let name = "setting-\(Int.random(in: 0..<60, using: &generator))"
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: members[name] = nil
                case 1: members[name] = .number("\(Int.random(in: -5...5, using: &generator))")
                default: members[name] = .string(pieces.randomElement(using: &generator)!)
                }
                bytes = Self.document(members)
            } else {
                // Bytes edited in place, as a person (or a bad editor) might.
                let offset = Int.random(in: 0...bytes.count, using: &generator)
                let removed = min(Int.random(in: 0..<4, using: &generator), bytes.count - offset)
                let inserted = Array(pieces.randomElement(using: &generator)!.utf8)
                bytes.replaceSubrange(offset..<(offset + removed), with: inserted)
            }
            if FileStorage.parseChange(of: known, to: bytes) != nil { parsedAsChanges += 1 }
            // NB: the next round edits what this one made when it parses, else the last good one.
            if let next = check(known, bytes), next.memberStarts != nil { known = next }
        }
        #expect(parsedAsChanges > 500)
    }
}

/// A deterministic generator (SplitMix64), so a failure repeats.
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
