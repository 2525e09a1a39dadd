#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Writes a ``JSONValue`` as pretty-printed JSON with sorted keys: the layout of a suite's file.
///
/// Non-ASCII text is written as UTF-8, not escaped, so a person reads what the program stored;
/// control characters, quotes and backslashes are escaped.
enum JSONWriter {
    /// The document's bytes, ending with a newline.
    static func prettyBytes(_ value: JSONValue) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(value, indent: 0, into: &output)
        output.append(UInt8(ascii: "\n"))
        return output
    }

    /// The document's bytes for an object of `members` and of the record of migrations, whose
    /// text is written as it was read (it is named `""`, so it comes first), and where that text
    /// lies in them.
    static func prettyBytes(
        _ members: [String: JSONValue],
        recordText record: ArraySlice<UInt8>
    ) -> (bytes: [UInt8], record: Range<Int>) {
        var output: [UInt8] = []
        output.reserveCapacity(256 + record.count)
        output.append(UInt8(ascii: "{"))
        newline(1, into: &output)
        output.append(contentsOf: #""" : "#.utf8)
        let start = output.count
        output.append(contentsOf: record)
        let range = start..<output.count
        for member in sortedMembers(members) {
            output.append(UInt8(ascii: ","))
            newline(1, into: &output)
            writeString(member.key, into: &output)
            output.append(contentsOf: " : ".utf8)
            write(member.value, indent: 1, into: &output)
        }
        newline(0, into: &output)
        output.append(contentsOf: "}\n".utf8)
        return (output, range)
    }

    /// The compact form, used where the text is an implementation detail (Codable round trips).
    static func compactBytes(_ value: JSONValue) -> [UInt8] {
        var output: [UInt8] = []
        write(value, indent: nil, into: &output)
        return output
    }

    private static func write(_ value: JSONValue, indent: Int?, into output: inout [UInt8]) {
        switch value {
        case .null:
            output.append(contentsOf: "null".utf8)
        case .bool(let flag):
            output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let text):
            output.append(contentsOf: text.utf8)
        case .string(let text):
            writeString(text, into: &output)
        case .array(let elements):
            guard !elements.isEmpty else {
                output.append(contentsOf: "[]".utf8)
                return
            }
            output.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                newline(indent.map { $0 + 1 }, into: &output)
                write(element, indent: indent.map { $0 + 1 }, into: &output)
            }
            newline(indent, into: &output)
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            guard !members.isEmpty else {
                output.append(contentsOf: "{}".utf8)
                return
            }
            output.append(UInt8(ascii: "{"))
            // Sort by UTF-8 bytes so the order is stable whatever the Unicode normalisation.
            for (offset, member) in sortedMembers(members).enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                newline(indent.map { $0 + 1 }, into: &output)
                writeString(member.key, into: &output)
                output.append(contentsOf: (indent == nil ? ":" : " : ").utf8)
                write(member.value, indent: indent.map { $0 + 1 }, into: &output)
            }
            newline(indent, into: &output)
            output.append(UInt8(ascii: "}"))
        }
    }

    /// The members of an object in the order of their names' UTF-8 bytes.
    ///
    /// Each name's first eight bytes are read once, as a big-endian integer whose order is theirs:
    /// most comparisons of a sort compare two integers, and only names sharing their first eight
    /// bytes compare the rest. (Comparing the text in each of the sort's comparisons was most of
    /// the cost of writing a 10,000-key file.)
    static func sortedMembers(_ members: [String: JSONValue]) -> [(key: String, value: JSONValue)] {
        let all = Array(members)
        // The sort moves pairs of integers, not the members: moving a name and a value retains
        // and releases both, at every step of the sort.
        var order = all.indices.map { (prefix: utf8Prefix(all[$0].key), index: $0) }
        order.sort { lhs, rhs in
            if lhs.prefix != rhs.prefix { return lhs.prefix < rhs.prefix }
            return utf8Precedes(all[lhs.index].key, all[rhs.index].key)
        }
        return order.map { all[$0.index] }
    }

    /// The first eight UTF-8 bytes of `text` as a big-endian integer, zeros after a shorter text:
    /// two texts whose integers differ sort as their integers do.
    static func utf8Prefix(_ text: String) -> UInt64 {
        var prefix: UInt64 = 0
        var count = 0
        for byte in text.utf8 {
            prefix = prefix << 8 | UInt64(byte)
            count += 1
            if count == 8 { return prefix }
        }
        return prefix << (8 * UInt64(8 - count))
    }

    /// Whether `lhs`'s UTF-8 bytes sort before `rhs`'s.
    ///
    /// `memcmp` over contiguous bytes: a generic element-by-element comparison of the two UTF-8
    /// views made sorting the keys of a 10,000-key file most of the cost of writing it.
    static func utf8Precedes(_ lhs: String, _ rhs: String) -> Bool {
        let contiguous = lhs.utf8.withContiguousStorageIfAvailable { left in
            rhs.utf8.withContiguousStorageIfAvailable { right in
                let common = min(left.count, right.count)
                if common > 0, let a = left.baseAddress, let b = right.baseAddress {
                    let order = memcmp(a, b, common)
                    if order != 0 { return order < 0 }
                }
                return left.count < right.count
            }
        }
        if let contiguous, let precedes = contiguous { return precedes }
        // A string bridged from elsewhere may have no contiguous UTF-8; compare it the slow way.
        return lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }

    private static func newline(_ indent: Int?, into output: inout [UInt8]) {
        guard let indent else { return }
        output.append(UInt8(ascii: "\n"))
        output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    private static func writeString(_ text: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        // Most text needs no escape: copy it whole rather than byte by byte.
        if !text.utf8.contains(where: {
            $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 == 0x7F
        }) {
            output.append(contentsOf: text.utf8)
            output.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): output.append(contentsOf: "\\\\".utf8)
            case UInt8(ascii: "\n"): output.append(contentsOf: "\\n".utf8)
            case UInt8(ascii: "\r"): output.append(contentsOf: "\\r".utf8)
            case UInt8(ascii: "\t"): output.append(contentsOf: "\\t".utf8)
            case 0x00..<0x20, 0x7F:
                let hex = Array("0123456789abcdef".utf8)
                output.append(contentsOf: "\\u00".utf8)
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0xF)])
            default:
                output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
