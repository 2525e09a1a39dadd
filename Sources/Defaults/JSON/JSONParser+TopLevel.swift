// Parsing a settings file's top level: where each member starts, a record of migrations left
// unparsed, and a run of members from the middle of a changed file.
extension JSONParser {
    /// A settings document's top-level members, and where each of them starts.
    struct TopLevel {
        /// The members; a name given twice keeps its last value.
        var members: [String: JSONValue]
        /// The offset of each member's name (its opening quote), in the order written; `nil` when
        /// a name is given twice, or the document is too large for 32-bit offsets.
        var starts: [UInt32]?
        /// Where the value of the member named `""` lies, when it was asked to be left unparsed
        /// (it is then not among `members`).
        var deferredRecord: Range<Int>?
    }

    /// Parses one complete JSON document, as ``parse(_:)`` does, and says where each member of its
    /// top-level object starts.
    ///
    /// - Parameter defersRecord: Check the value of the member named `""` (the record of
    ///   migrations: a hundred strings that an open seldom needs), but leave it unparsed.
    /// - Returns: `nil` when the document is valid but its top level is not an object.
    static func parseTopLevel(_ bytes: [UInt8], defersRecord: Bool = false) throws(Failure) -> TopLevel? {
        let records = bytes.count <= Int(UInt32.max)
        let result = bytes.withUnsafeBufferPointer { buffer -> Result<TopLevel?, Failure> in
            var parser = JSONParser(bytes: bytes, buffer: buffer)
            if records { parser.topLevelStarts = [] }
            parser.defersRecord = defersRecord
            do throws(Failure) {
                guard case .object(let members) = try parser.parseDocument() else { return .success(nil) }
                let starts = parser.topLevelRepeatsNames ? nil : parser.topLevelStarts
                return .success(TopLevel(members: members, starts: starts, deferredRecord: parser.deferredRecord))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Members of a document's top-level object, parsed from the middle of the document.
    struct Run {
        /// The members parsed, in the order written (a name may come twice).
        var members: [(key: String, value: JSONValue)]
        /// Where each of them starts.
        var starts: [UInt32]
        /// Whether the parse stopped at the offset it was given, rather than at the document's end.
        var stopped: Bool
    }

    /// Parses the members of `bytes`' top-level object from `start`, the start of a member's name
    /// that follows a comma, to the end of the document, checking that it ends there.
    ///
    /// - Parameter stop: Stop instead when a member would start at this offset: the parse then
    ///   says nothing about what follows.
    /// - Throws: Where the document is broken; the failure may say it differently from ``parse(_:)``,
    ///   which should parse it again for the report.
    static func parseMembers(
        _ bytes: [UInt8],
        from start: Int,
        stoppingAt stop: Int?
    ) throws(Failure) -> Run {
        let result = bytes.withUnsafeBufferPointer { buffer -> Result<Run, Failure> in
            var parser = JSONParser(bytes: bytes, buffer: buffer)
            parser.index = start
            do throws(Failure) {
                return .success(try parser.parseMembers(stoppingAt: stop))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    mutating func parseMembers(stoppingAt stop: Int?) throws(Failure) -> Run {
        var run = Run(members: [], starts: [], stopped: false)
        while true {
            if index == stop {
                run.stopped = true
                return run
            }
            guard index < count, index <= Int(UInt32.max), buffer[index] == UInt8(ascii: "\"") else {
                throw failure("expected a string key")
            }
            run.starts.append(UInt32(truncatingIfNeeded: index))
            let key = try parseString()
            skipWhitespace()
            guard index < count, buffer[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            index += 1
            skipWhitespace()
            run.members.append((key, try parseValue(depth: 1)))
            skipWhitespace()
            guard index < count else { throw failure("unexpected end of data") }
            switch buffer[index] {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                index += 1
                skipWhitespace()
                guard index == count else { throw failure("unexpected data after the top-level value") }
                return run
            default: throw failure("expected ',' or '}'")
            }
        }
    }

    /// Checks one value as ``parseValue(depth:)`` would parse it, and fails where it would, but
    /// makes nothing: no array, no object, and no string of plain ASCII.
    mutating func skipValue(depth: Int) throws(Failure) {
        guard depth < Self.maximumDepth else { throw failure("nesting deeper than \(Self.maximumDepth)") }
        guard index < count else { throw failure("unexpected end of data") }
        switch buffer[index] {
        case UInt8(ascii: "{"): try skipMembers(depth: depth)
        case UInt8(ascii: "["): try skipElements(depth: depth)
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try parseNumber()
        default: throw failure("unexpected character")
        }
    }

    /// Checks a string as `parseString` does, making it only when it is not plain ASCII.
    ///
    /// A string of plain ASCII with no escape (a record's ids) is passed over here, eight bytes
    /// at a time; any other is checked by `parseString` from its start, with its messages.
    private mutating func skipString() throws(Failure) {
        var (at, isFound) = plainRun(from: index + 1)
        if !isFound {
            // Fewer than eight bytes were left: the rest one by one.
            while at < count, buffer[at] >= 0x20, buffer[at] < 0x80, buffer[at] != UInt8(ascii: "\""),
                buffer[at] != UInt8(ascii: "\\")
            {
                at += 1
            }
            isFound = at < count
        }
        if isFound, buffer[at] == UInt8(ascii: "\"") {
            index = at + 1
            return
        }
        discardsStrings = true
        defer { discardsStrings = false }
        _ = try parseString()
    }

    /// ``skipValue(depth:)`` of an object: the same checks, in the same order, as `parseObject`.
    private mutating func skipMembers(depth: Int) throws(Failure) {
        index += 1
        skipIndentation()
        if index < count, buffer[index] == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            skipIndentation()
            guard index < count, buffer[index] == UInt8(ascii: "\"") else { throw failure("expected a string key") }
            try skipString()
            skipIndentation()
            guard index < count, buffer[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            index += 1
            skipIndentation()
            try skipValue(depth: depth + 1)
            skipIndentation()
            guard index < count else { throw failure("unexpected end of data") }
            switch buffer[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return
            default: throw failure("expected ',' or '}'")
            }
        }
    }

    /// ``skipValue(depth:)`` of an array: the same checks, in the same order, as `parseArray`.
    private mutating func skipElements(depth: Int) throws(Failure) {
        if depth + 1 < Self.maximumDepth, let end = endOfPlainStrings(from: index) {
            index = end
            return
        }
        index += 1
        skipIndentation()
        if index < count, buffer[index] == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            skipIndentation()
            try skipValue(depth: depth + 1)
            skipIndentation()
            guard index < count else { throw failure("unexpected end of data") }
            switch buffer[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return
            default: throw failure("expected ',' or ']'")
            }
        }
    }

    /// Where the array opening at `start` ends, when it holds only strings of plain ASCII without
    /// escapes (a record's ids) and whitespace between them: one loop, no call per element.
    ///
    /// `nil` at anything else, with nothing moved: ``skipElements(depth:)`` then checks the array
    /// from its start, with its messages. What it passes, the full check passes too.
    private func endOfPlainStrings(from start: Int) -> Int? {
        var at = passingWhitespace(from: start + 1)
        guard at < count else { return nil }
        if buffer[at] == UInt8(ascii: "]") { return at + 1 }
        while true {
            guard at < count, buffer[at] == UInt8(ascii: "\"") else { return nil }
            let (end, isFound) = plainRun(from: at + 1)
            guard isFound, buffer[end] == UInt8(ascii: "\"") else { return nil }
            at = passingWhitespace(from: end + 1)
            guard at < count else { return nil }
            switch buffer[at] {
            case UInt8(ascii: ","): at = passingWhitespace(from: at + 1)
            case UInt8(ascii: "]"): return at + 1
            default: return nil
            }
        }
    }

    /// Where a run of plain string bytes from `start` ends, passed eight bytes at a time: the
    /// offset of the first byte that is a quote, a backslash, a control byte or not ASCII
    /// (`isFound`), or where fewer than eight bytes were left to look at (not `isFound`).
    @inline(__always)
    private func plainRun(from start: Int) -> (end: Int, isFound: Bool) {
        let highs: UInt64 = 0x8080_8080_8080_8080
        var at = start
        while at + 8 <= count {
            let word = UnsafeRawPointer(buffer.baseAddress! + at).loadUnaligned(as: UInt64.self)
            // The lowest byte flagged is the first that is not plain ASCII.
            let stops = Self.runEnds(word) | word & highs
            guard stops == 0 else { return (at + stops.trailingZeroBitCount / 8, true) }
            at += 8
        }
        return (at, false)
    }

    /// The offset of the first byte from `start` that is not whitespace; a run of spaces (a
    /// line's indentation) is passed eight bytes at a time.
    @inline(__always)
    private func passingWhitespace(from start: Int) -> Int {
        var at = start
        while at < count {
            let byte = buffer[at]
            if byte == 0x20 {
                at += 1
                while at + 8 <= count {
                    let others =
                        UnsafeRawPointer(buffer.baseAddress! + at).loadUnaligned(as: UInt64.self)
                        ^ 0x2020_2020_2020_2020
                    guard others == 0 else {
                        at += others.trailingZeroBitCount / 8
                        break
                    }
                    at += 8
                }
            } else if byte == 0x0A || byte == 0x09 || byte == 0x0D {
                at += 1
            } else {
                return at
            }
        }
        return at
    }

    /// ``skipWhitespace()`` that passes a run of spaces (a pretty-printed file's indentation)
    /// eight bytes at a time: the lowest byte that is not a space ends it.
    ///
    /// For values checked and not made: in the parse of the values, the few spaces of a member's
    /// indentation cost less byte by byte.
    private mutating func skipIndentation() {
        index = passingWhitespace(from: index)
    }
}
