extension Defaults.JSONValue: CustomStringConvertible {
    /// Parses one JSON document, keeping number text as written.
    ///
    /// For a backend that keeps values as JSON text (see ``Defaults/Backend``).
    ///
    /// - Throws: ``Defaults/JSONValue/ParseError`` naming where the text stops being JSON.
    public init(parsing text: String) throws(ParseError) {
        do throws(JSONParser.Failure) {
            self = try JSONParser.parse(Array(text.utf8))
        } catch {
            throw ParseError(line: error.line, column: error.column, reason: error.reason)
        }
    }

    /// Parses one JSON document given as UTF-8 bytes, as a settings file is read: a byte order
    /// mark at the start is skipped (RFC 8259 lets a reader ignore one; editors sometimes write it).
    ///
    /// ```swift
    /// let document = try Defaults.JSONValue(parsing: Array(try Data(contentsOf: file)))
    /// ```
    ///
    /// - Throws: ``Defaults/JSONValue/ParseError`` naming where the bytes stop being JSON,
    ///   including bytes that are not UTF-8.
    public init(parsing bytes: [UInt8]) throws(ParseError) {
        let document = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
        do throws(JSONParser.Failure) {
            self = try JSONParser.parse(document)
        } catch {
            throw ParseError(line: error.line, column: error.column, reason: error.reason)
        }
    }

    /// The value as compact JSON text, members in sorted order: what ``init(parsing:)-(String)`` reads back
    /// to an equal value.
    public var description: String { String(decoding: JSONWriter.compactBytes(self), as: UTF8.self) }

    /// The value as JSON text indented as the settings file is, members in sorted order.
    public var prettyDescription: String { String(decoding: JSONWriter.prettyBytes(self).dropLast(), as: UTF8.self) }

    /// Why text is not one JSON document, and where (both from 1; a column counts characters).
    public struct ParseError: Error, CustomStringConvertible, Sendable, Equatable {
        /// The line the problem is on.
        public let line: Int
        /// The column the problem is at.
        public let column: Int
        /// What is wrong there.
        public let reason: String

        /// One line saying what is wrong and where.
        public var description: String { "invalid JSON at line \(line), column \(column): \(reason)" }
    }
}
