/// A JSON value checked but not yet made: where it lies in the bytes of a document.
///
/// The record of migrations (the settings file's member named `""`) is kept so: it lists an id
/// per migration ever run, and a program whose migrations all ran opens without reading it.
struct DeferredJSON: Sendable, Equatable {
    /// The document the value is part of.
    let document: [UInt8]
    /// Where the value lies in it.
    let range: Range<Int>

    /// The value, made now.
    var value: JSONValue {
        // The same parser checked these bytes already, one level deeper.
        guard let value = try? JSONParser.parse(Array(document[range])) else {
            preconditionFailure("a JSON value checked when its document was read no longer parses")
        }
        return value
    }

    /// Whether both are the same text: the same value, written the same way.
    static func == (lhs: DeferredJSON, rhs: DeferredJSON) -> Bool {
        guard lhs.range.count == rhs.range.count else { return false }
        return lhs.document[lhs.range].elementsEqual(rhs.document[rhs.range])
    }
}
