/// A place in a schema document: the schema there, where it sits (a JSON pointer), and the base
/// URI its own references resolve against (its `$id` applied).
struct SchemaNode: Sendable {
    let value: JSONValue
    let pointer: String
    let base: String

    /// The node of the document's root, whose base is `documentBase` unless its `$id` says.
    init(root value: JSONValue) {
        self.value = value
        pointer = ""
        base = Self.applyingIdentifier(of: value, to: SchemaIndex.documentBase)
    }

    private init(value: JSONValue, pointer: String, parentBase: String) {
        self.value = value
        self.pointer = pointer
        base = Self.applyingIdentifier(of: value, to: parentBase)
    }

    /// The member `name` of this node (an object) or its element at that index (an array), as
    /// a node; `nil` when there is none.
    func child(_ name: String) -> SchemaNode? {
        let member: JSONValue?
        switch value {
        case .object(let members): member = members[name]
        case .array(let elements):
            guard let index = Int(name), index >= 0, index < elements.count, String(index) == name else { return nil }
            member = elements[index]
        default: member = nil
        }
        guard let member else { return nil }
        return SchemaNode(value: member, pointer: pointer + "/" + Self.escaped(name), parentBase: base)
    }

    /// The schema object's members; `nil` for a Boolean schema or anything else.
    var members: [String: JSONValue]? {
        if case .object(let members) = value { return members }
        return nil
    }

    /// `base` with the `$id` of `value` (an object) resolved against it, fragment dropped.
    private static func applyingIdentifier(of value: JSONValue, to base: String) -> String {
        guard case .object(let members) = value, case .string(let identifier)? = members["$id"] else { return base }
        return URIReference.resolve(identifier, against: base).withoutFragment
    }

    /// A JSON pointer token for `name`: `~` as `~0`, `/` as `~1`.
    static func escaped(_ name: String) -> String {
        guard name.contains("~") || name.contains("/") else { return name }
        return name.replacing("~", with: "~0").replacing("/", with: "~1")
    }
}

/// Where each schema resource of a document and each anchor is, by absolute URI: the targets of
/// its `$ref`s.
struct SchemaIndex: Sendable {
    /// The base URI of a document without an `$id` at its root: a name no reference outside it
    /// can mean.
    static let documentBase = "urn:defaults:schema-document"

    /// The document's root.
    let root: SchemaNode
    /// Each schema with an `$id` (and the root), by its URI without fragment.
    private(set) var resources: [String: SchemaNode] = [:]
    /// Each schema with an `$anchor` (or a `$dynamicAnchor`), by `resource-URI#anchor`.
    private(set) var anchors: [String: SchemaNode] = [:]
    /// Every schema in the document, in the order met.
    private(set) var nodes: [SchemaNode] = []
    /// Whether any schema in the document has a `$ref`.
    private(set) var hasReferences = false

    init(_ document: JSONValue) {
        root = SchemaNode(root: document)
        resources[SchemaIndex.documentBase] = root
        record(root)
    }

    /// The keywords whose value is one schema.
    static let schemaKeywords: Set<String> = [
        "items", "contains", "additionalProperties", "propertyNames", "not", "if", "then", "else",
        "unevaluatedItems", "unevaluatedProperties", "contentSchema",
    ]
    /// The keywords whose value is an array of schemas.
    static let schemaArrayKeywords: Set<String> = ["prefixItems", "allOf", "anyOf", "oneOf"]
    /// The keywords whose value is an object of schemas.
    static let schemaMapKeywords: Set<String> = [
        "properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
    ]

    /// Records `node` and every schema inside it.
    private mutating func record(_ node: SchemaNode) {
        nodes.append(node)
        guard let members = node.members else { return }
        if members["$ref"] != nil { hasReferences = true }
        if resources[node.base] == nil { resources[node.base] = node }
        for anchorKeyword in ["$anchor", "$dynamicAnchor"] {
            if case .string(let anchor)? = members[anchorKeyword], anchors[node.base + "#" + anchor] == nil {
                anchors[node.base + "#" + anchor] = node
            }
        }
        for (keyword, member) in members {
            if Self.schemaKeywords.contains(keyword) {
                if let child = node.child(keyword) { record(child) }
            } else if Self.schemaArrayKeywords.contains(keyword) || Self.schemaMapKeywords.contains(keyword) {
                guard let holder = node.child(keyword) else { continue }
                switch member {
                case .array(let elements):
                    for index in elements.indices { if let child = holder.child(String(index)) { record(child) } }
                case .object(let entries):
                    for name in entries.keys { if let child = holder.child(name) { record(child) } }
                default:
                    continue
                }
            }
        }
    }

    /// The schema `reference` leads to from a schema whose base is `base`, or why it leads nowhere.
    func resolve(_ reference: String, from base: String) -> Result<SchemaNode, Unresolved> {
        let target = URIReference.resolve(reference, against: base)
        let resourceURI = target.withoutFragment
        guard let resource = resources[resourceURI] else { return .failure(.outside(resourceURI)) }
        let fragment = target.fragment ?? ""
        if fragment.isEmpty { return .success(resource) }
        if let decoded = fragment.removingPercentEncoding(), decoded.hasPrefix("/") {
            var node = resource
            for token in decoded.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
                let name = String(token).replacing("~1", with: "/").replacing("~0", with: "~")
                guard let next = node.child(name) else { return .failure(.nowhere(target.text)) }
                node = next
            }
            return .success(node)
        }
        guard let anchored = anchors[resourceURI + "#" + fragment] else { return .failure(.nowhere(target.text)) }
        return .success(anchored)
    }

    /// Why a reference leads nowhere.
    enum Unresolved: Error {
        /// To a document other than this one (the metaschema, a remote file): never fetched.
        case outside(String)
        /// To a place this document does not have.
        case nowhere(String)
    }
}

/// A URI reference taken apart as RFC 3986 does, enough to resolve one against a base.
struct URIReference: Equatable {
    var scheme: String?
    var authority: String?
    var path: String
    var query: String?
    var fragment: String?

    init(scheme: String?, authority: String?, path: String, query: String?, fragment: String?) {
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.query = query
        self.fragment = fragment
    }

    /// `text` taken apart (RFC 3986, appendix B).
    init(_ text: String) {
        var rest = Substring(text)
        if let hash = rest.firstIndex(of: "#") {
            fragment = String(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        }
        if let question = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: question)...])
            rest = rest[..<question]
        }
        if let colon = rest.firstIndex(of: ":"), colon != rest.startIndex,
            !rest[..<colon].contains(where: { $0 == "/" }),
            rest[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }),
            rest.first!.isLetter
        {
            scheme = String(rest[..<colon])
            rest = rest[rest.index(after: colon)...]
        }
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex(of: "/") ?? rest.endIndex
            authority = String(rest[..<end])
            rest = rest[end...]
        }
        path = String(rest)
    }

    /// The reference written out again.
    var text: String {
        var result = ""
        if let scheme { result += scheme + ":" }
        if let authority { result += "//" + authority }
        result += path
        if let query { result += "?" + query }
        if let fragment { result += "#" + fragment }
        return result
    }

    /// The reference written out without its fragment.
    var withoutFragment: String {
        var copy = self
        copy.fragment = nil
        return copy.text
    }

    /// `reference` resolved against the absolute URI `base` (RFC 3986, section 5.2.2).
    static func resolve(_ reference: String, against base: String) -> URIReference {
        let reference = URIReference(reference)
        let base = URIReference(base)
        if reference.scheme != nil {
            var target = reference
            target.path = removingDotSegments(reference.path)
            return target
        }
        var target = URIReference(
            scheme: base.scheme,
            authority: base.authority,
            path: base.path,
            query: base.query,
            fragment: reference.fragment
        )
        if reference.authority != nil {
            target.authority = reference.authority
            target.path = removingDotSegments(reference.path)
            target.query = reference.query
        } else if reference.path.isEmpty {
            if reference.query != nil { target.query = reference.query }
        } else {
            if reference.path.hasPrefix("/") {
                target.path = removingDotSegments(reference.path)
            } else if base.authority != nil && base.path.isEmpty {
                target.path = removingDotSegments("/" + reference.path)
            } else {
                let directory = base.path.lastIndex(of: "/").map { String(base.path[...$0]) } ?? ""
                target.path = removingDotSegments(directory + reference.path)
            }
            target.query = reference.query
        }
        return target
    }

    /// `path` without its `.` and `..` segments (RFC 3986, section 5.2.4).
    static func removingDotSegments(_ path: String) -> String {
        guard path.contains(".") else { return path }
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for (position, segment) in segments.enumerated() {
            let isLast = position == segments.count - 1
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if output.count > 1 || (output.count == 1 && !output[0].isEmpty) { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        let joined = output.joined(separator: "/")
        return path.hasPrefix("/") && !joined.hasPrefix("/") ? "/" + joined : joined
    }
}

extension String {
    /// The string with each `%XX` decoded as UTF-8; `nil` when that is not UTF-8.
    func removingPercentEncoding() -> String? {
        guard contains("%") else { return self }
        var bytes: [UInt8] = []
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
