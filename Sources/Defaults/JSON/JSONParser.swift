/// A strict RFC 8259 parser that keeps number text as written.
///
/// It never traps on bad input: every failure is a ``JSONParser/Failure`` naming where it is.
///
/// A parser is made and used only by its static functions, here and in JSONParser+TopLevel.swift
/// (which is why its state is not private).
struct JSONParser {
    /// Why a document could not be parsed, and where: as a byte offset, and as the line and column
    /// a person finds in an editor (both from 1; a column counts characters).
    struct Failure: Error, CustomStringConvertible, Sendable {
        var offset: Int
        var line: Int
        var column: Int
        var reason: String
        var description: String { "invalid JSON at line \(line), column \(column): \(reason)" }
    }

    /// Nesting deeper than this is rejected instead of risking the stack.
    static let maximumDepth = 512

    private let bytes: [UInt8]
    /// `bytes`, read without bounds checks: every read is behind a test of `index < count`.
    ///
    /// Indexing the array checked every byte's index and went through the array's storage,
    /// most of parsing a file of thousands of short strings.
    let buffer: UnsafeBufferPointer<UInt8>
    let count: Int
    var index = 0
    /// Where each member of the top-level object starts (its name's opening quote), when asked.
    var topLevelStarts: [UInt32]?
    /// Whether the top-level object gives a name twice (seen only while recording its starts).
    var topLevelRepeatsNames = false
    /// Whether the value of the top-level member named `""` (the record of migrations) is checked
    /// but not made: ``deferredRecord`` says where it is.
    var defersRecord = false
    /// Where the value of the top-level member named `""` lies, with ``defersRecord``.
    var deferredRecord: Range<Int>?
    /// While checking a deferred value: strings of plain ASCII are not made (`""` stands in).
    var discardsStrings = false

    init(bytes: [UInt8], buffer: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        self.buffer = buffer
        self.count = buffer.count
    }

    /// Parses one complete JSON document.
    static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        let result = bytes.withUnsafeBufferPointer { buffer -> Result<JSONValue, Failure> in
            var parser = JSONParser(bytes: bytes, buffer: buffer)
            do throws(Failure) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The whole document's one value, with nothing but whitespace around it.
    mutating func parseDocument() throws(Failure) -> JSONValue {
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard index == count else { throw failure("unexpected data after the top-level value") }
        return value
    }

    func failure(_ reason: String, at position: Int? = nil) -> Failure {
        let offset = min(position ?? index, bytes.count)
        let before = bytes[..<offset]
        let lineStart = before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
        return Failure(
            offset: offset,
            line: before.count { $0 == UInt8(ascii: "\n") } + 1,
            column: String(decoding: bytes[lineStart..<offset], as: UTF8.self).count + 1,
            // At the end, "expected ..." reads as if something wrong were there.
            reason: offset == bytes.count ? "unexpected end of data" : reason
        )
    }

    mutating func skipWhitespace() {
        while index < count {
            switch buffer[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(Failure) -> JSONValue {
        guard depth < Self.maximumDepth else { throw failure("nesting deeper than \(Self.maximumDepth)") }
        guard index < count else { throw failure("unexpected end of data") }
        switch buffer[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw failure("unexpected character")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(Failure) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= self.count else { throw failure("unexpected end of data") }
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for offset in 0..<count where buffer[index + offset] != expected[offset] {
            throw failure("invalid literal")
        }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(Failure) -> JSONValue {
        index += 1
        // Listed first, and made a dictionary of the right size at the end: growing one member
        // by member rehashes it as it grows (`defaults-profile open10k`).
        var listed: [(key: String, value: JSONValue)] = []
        skipWhitespace()
        if index < count, buffer[index] == UInt8(ascii: "}") {
            index += 1
            return .object([:])
        }
        while true {
            skipWhitespace()
            guard index < count, buffer[index] == UInt8(ascii: "\"") else {
                throw failure("expected a string key")
            }
            if depth == 0 { topLevelStarts?.append(UInt32(truncatingIfNeeded: index)) }
            let key = try parseString()
            skipWhitespace()
            guard index < count, buffer[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            index += 1
            skipWhitespace()
            if depth == 0, defersRecord, key.isEmpty {
                // Checked as any value is, and where it lies kept; given twice, a name's starts
                // are not kept, as below.
                let start = index
                try skipValue(depth: depth + 1)
                if deferredRecord != nil { topLevelRepeatsNames = true }
                deferredRecord = start..<index
            } else {
                listed.append((key, try parseValue(depth: depth + 1)))
            }
            skipWhitespace()
            guard index < count else { throw failure("unexpected end of data") }
            switch buffer[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                var members = [String: JSONValue](minimumCapacity: listed.count)
                // A name given twice keeps its last value.
                for (key, value) in listed { members[key] = value }
                if depth == 0, members.count != listed.count { topLevelRepeatsNames = true }
                return .object(members)
            default: throw failure("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(Failure) -> JSONValue {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < count, buffer[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard index < count else { throw failure("unexpected end of data") }
            switch buffer[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            default: throw failure("expected ',' or ']'")
            }
        }
    }

    mutating func parseNumber() throws(Failure) -> String {
        let start = index
        if buffer[index] == UInt8(ascii: "-") { index += 1 }
        guard index < count else { throw failure("unexpected end of number") }
        if buffer[index] == UInt8(ascii: "0") {
            index += 1
        } else if isDigit(buffer[index]) {
            while index < count, isDigit(buffer[index]) { index += 1 }
        } else {
            throw failure("expected a digit")
        }
        if index < count, buffer[index] == UInt8(ascii: ".") {
            index += 1
            guard index < count, isDigit(buffer[index]) else { throw failure("expected a digit after '.'") }
            while index < count, isDigit(buffer[index]) { index += 1 }
        }
        if index < count, buffer[index] == UInt8(ascii: "e") || buffer[index] == UInt8(ascii: "E") {
            index += 1
            if index < count, buffer[index] == UInt8(ascii: "+") || buffer[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < count, isDigit(buffer[index]) else { throw failure("expected an exponent") }
            while index < count, isDigit(buffer[index]) { index += 1 }
        }
        return String(decoding: buffer[start..<index], as: UTF8.self)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    mutating func parseString() throws(Failure) -> String {
        index += 1
        var runStart = index
        // Most strings have no escapes: the run between the quotes is the string, with no
        // concatenation. `result` starts only at the first escape.
        var result: String?
        while true {
            // The plain bytes of a run in one tight loop; whether they are all ASCII is one OR.
            var seen: UInt8 = 0
            var seenWords: UInt64 = 0
            // Eight bytes at a time while none of them ends the run.
            // The word that holds the run's end gives its place too: its lowest flagged byte.
            while index + 8 <= count {
                let word = UnsafeRawPointer(buffer.baseAddress! + index).loadUnaligned(as: UInt64.self)
                let ends = Self.runEnds(word)
                guard ends == 0 else {
                    let plainBits = ends.trailingZeroBitCount & ~7
                    seenWords |= word & ((1 &<< UInt64(plainBits)) &- 1)
                    index += plainBits / 8
                    break
                }
                seenWords |= word
                index += 8
            }
            while index < count {
                let byte = buffer[index]
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                seen |= byte
                index += 1
            }
            guard index < count else { throw failure("unterminated string") }
            if seenWords & 0x8080_8080_8080_8080 != 0 { seen |= 0x80 }
            let byte = buffer[index]
            if byte == UInt8(ascii: "\"") {
                // ASCII needs no check; anything else is checked by making it, below.
                if discardsStrings, result == nil, seen < 0x80 {
                    index += 1
                    return ""
                }
                let run = try string(from: runStart, to: index, isASCII: seen < 0x80)
                index += 1
                guard var result else { return run }
                result += run
                return result
            }
            if byte < 0x20 { throw failure("unescaped control character in string") }
            // Taken out of `result`, so the appends below find the text unshared and grow it in
            // place (a copy per escape made a long string with many escapes quadratic: 100,000
            // characters, every seventh one escaped, took 26 s in a debug build).
            var escaped = result.take() ?? ""
            escaped += try string(from: runStart, to: index, isASCII: seen < 0x80)
            index += 1
            guard index < count else { throw failure("unterminated escape") }
            let escape = buffer[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): escaped.append("\"")
            case UInt8(ascii: "\\"): escaped.append("\\")
            case UInt8(ascii: "/"): escaped.append("/")
            case UInt8(ascii: "b"): escaped.append("\u{08}")
            case UInt8(ascii: "f"): escaped.append("\u{0C}")
            case UInt8(ascii: "n"): escaped.append("\n")
            case UInt8(ascii: "r"): escaped.append("\r")
            case UInt8(ascii: "t"): escaped.append("\t")
            case UInt8(ascii: "u"):
                let first = try parseHex4()
                if (0xD800...0xDBFF).contains(first) {
                    guard index + 1 < count, buffer[index] == UInt8(ascii: "\\"),
                        buffer[index + 1] == UInt8(ascii: "u")
                    else { throw failure("unpaired surrogate") }
                    index += 2
                    let second = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(second) else { throw failure("unpaired surrogate") }
                    let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                    escaped.unicodeScalars.append(Unicode.Scalar(value)!)
                } else {
                    guard let scalar = Unicode.Scalar(first) else { throw failure("unpaired surrogate") }
                    escaped.unicodeScalars.append(scalar)
                }
            default:
                throw failure("invalid escape")
            }
            result = escaped
            runStart = index
        }
    }

    /// The bytes of `word` that end a run of a string's plain bytes, each marked by its high bit:
    /// a quote, a backslash or a control character (bytes of 0x80 and above never do); 0 when none.
    ///
    /// Each test sets a byte's high bit where that byte is the one sought, and may set it for a
    /// byte above one that is, never when none is (the classic "has a zero byte" test): the lowest
    /// mark is always a byte that ends the run, the first.
    static func runEnds(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & highs }
        let quote = hasZeroByte(word ^ (ones &* 0x22))
        let backslash = hasZeroByte(word ^ (ones &* 0x5C))
        // A byte below 0x20, among bytes below 0x80: subtracting 0x20 from it borrows.
        let control = (word &- ones &* 0x20) & ~word & highs
        return quote | backslash | control
    }

    /// The text of `bytes[start..<end]`, which holds no quote and no escape.
    ///
    /// ASCII needs no validation; anything else is validated strictly (`String(decoding:)` would
    /// silently repair invalid UTF-8, and the file would then not be what it says).
    private func string(from start: Int, to end: Int, isASCII: Bool) throws(Failure) -> String {
        let run = UnsafeBufferPointer(rebasing: buffer[start..<end])
        if isASCII { return String(decoding: run, as: UTF8.self) }
        guard let text = String(validating: run, as: UTF8.self) else {
            throw failure("invalid UTF-8 in string", at: end)
        }
        return text
    }

    private mutating func parseHex4() throws(Failure) -> UInt32 {
        guard index + 4 <= count else { throw failure("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = buffer[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("invalid hex digit")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
