import Foundation

/// How a value is laid out in a Foundation `UserDefaults`: the property-list types
/// sindresorhus/Defaults stores for it on Apple platforms.
///
/// A suite keeps every value as JSON, which has no dates, no bytes and no difference between a
/// `Codable` struct and a dictionary; the shape, derived from the Swift type, puts that back when a
/// value goes into a `UserDefaults` and takes it out again when it is read.
indirect enum PropertyListShape: Sendable, Equatable {
    /// Strings, booleans, integers and doubles as themselves; arrays and objects member by member,
    /// each as its JSON says.
    case plain
    /// A `Float`, stored as one (its NaN and infinities too).
    case float
    /// A `Double` or `CGFloat`, stored as a `Double` (its NaN and infinities too).
    case double
    /// A `Date`, stored as one.
    case date
    /// `Data`, stored as itself.
    case data
    /// A `Codable` value or a `URL`: its JSON text, as a `String`.
    case jsonText
    /// An array whose elements all have one shape.
    case array(PropertyListShape)
    /// A dictionary whose values all have one shape.
    case dictionary(PropertyListShape)
    /// An array whose elements have shapes of their own, known from the values (an `AnySerializable`
    /// array).
    case elements([PropertyListShape])
    /// A dictionary whose members have shapes of their own, known from the values.
    case members([String: PropertyListShape])
    /// An `AnySerializable`: the type says nothing; the value it wraps does.
    case any

    /// Whether an `AnySerializable` is somewhere inside, so the value, not only its type, has a say.
    var dependsOnTheValue: Bool {
        switch self {
        case .any: return true
        case .array(let element), .dictionary(let element): return element.dependsOnTheValue
        case .plain, .float, .double, .date, .data, .jsonText, .elements, .members: return false
        }
    }

    /// This shape, with what `seen` (the shape of a value as it was found) knows put where this
    /// one says `.any`: the shape of a value read where its type says nothing.
    func informed(by seen: PropertyListShape) -> PropertyListShape {
        switch self {
        case .any:
            return seen
        case .array(let element):
            guard case .elements(let found) = seen else { return self }
            return .elements(found.map { element.informed(by: $0) })
        case .dictionary(let member):
            guard case .members(let found) = seen else { return self }
            return .members(found.mapValues { member.informed(by: $0) })
        default:
            return self
        }
    }

    /// This shape of `json`, with the shape `read` had put where this one says `.any` and `json`
    /// holds the same as what was read: parts of a value read where the type says nothing, and
    /// written back unchanged, keep what they were.
    func keeping(_ read: (json: JSONValue, shape: PropertyListShape), for json: JSONValue) -> PropertyListShape {
        if self == .any && json == read.json { return read.shape }
        switch (json, read.json) {
        case (.array(let elements), .array(let readElements)):
            guard dependsOnTheValue || isElementwise else { return self }
            let matches = Self.matches(of: elements, in: readElements)
            return .elements(
                elements.indices.map { index in
                    let shape = self.element(at: index)
                    guard let match = matches[index] else { return shape }
                    return shape.keeping((readElements[match], read.shape.element(at: match)), for: elements[index])
                }
            )
        case (.object(let members), .object(let readMembers)):
            guard dependsOnTheValue || isElementwise else { return self }
            return .members(
                Dictionary(
                    uniqueKeysWithValues: members.map { name, member in
                        let shape = self.member(name)
                        guard let readMember = readMembers[name] else { return (name, shape) }
                        return (name, shape.keeping((readMember, read.shape.member(name)), for: member))
                    }
                )
            )
        default:
            return self
        }
    }

    /// For each element of `elements`, the index of the element read that it is, if any.
    ///
    /// Each read element is matched once, at its own index when it is still there, else the first
    /// unused one with the same JSON. Linear: a long array written back costs no more than reading it.
    private static func matches(of elements: [JSONValue], in readElements: [JSONValue]) -> [Int?] {
        var matches = [Int?](repeating: nil, count: elements.count)
        var taken = Set<Int>()
        for index in elements.indices where index < readElements.count && elements[index] == readElements[index] {
            matches[index] = index
            taken.insert(index)
        }
        var unused: [JSONValue: [Int]] = [:]
        for (index, element) in readElements.enumerated() where !taken.contains(index) {
            unused[element, default: []].append(index)
        }
        var used: [JSONValue: Int] = [:]
        for index in elements.indices where matches[index] == nil {
            let element = elements[index]
            guard let candidates = unused[element] else { continue }
            let next = used[element, default: 0]
            guard next < candidates.count else { continue }
            matches[index] = candidates[next]
            used[element] = next + 1
        }
        return matches
    }

    /// Whether this is a shape made from a value, element by element, member by member.
    private var isElementwise: Bool {
        switch self {
        case .elements, .members: return true
        default: return false
        }
    }

    /// This shape with JSON text replaced by the JSON's own structure: how an `AnySerializable`
    /// stores a `Codable` value or a URL, since when it is read back nothing says the text is JSON.
    var withoutJSONText: PropertyListShape {
        switch self {
        case .jsonText: return .plain
        case .array(let element): return .array(element.withoutJSONText)
        case .dictionary(let member): return .dictionary(member.withoutJSONText)
        case .elements(let elements): return .elements(elements.map(\.withoutJSONText))
        case .members(let members): return .members(members.mapValues(\.withoutJSONText))
        case .plain, .float, .double, .date, .data, .any: return self
        }
    }

    /// The shape of an element at `index` of an array of this shape.
    func element(at index: Int) -> PropertyListShape {
        switch self {
        case .array(let element): return element
        case .elements(let elements) where elements.indices.contains(index): return elements[index]
        default: return .any
        }
    }

    /// The shape of the member `name` of a dictionary of this shape.
    func member(_ name: String) -> PropertyListShape {
        switch self {
        case .dictionary(let member): return member
        case .members(let members): return members[name] ?? .any
        default: return .any
        }
    }
}

/// A type that says itself how it is laid out in a `UserDefaults`.
///
/// The built-in types conform; a type with a bridge has the shape of what its bridge stores, and a
/// `Codable` type is its JSON text.
protocol PropertyListShaped {
    /// The shape of every value of the type.
    static var propertyListShape: PropertyListShape { get }
    /// The shape of this value: the type's, unless an `AnySerializable` inside knows better.
    var propertyListShapeOfValue: PropertyListShape { get }
}

extension PropertyListShaped {
    var propertyListShapeOfValue: PropertyListShape { Self.propertyListShape }
}

/// Marks the bridge of `Codable` types, whose values a `UserDefaults` holds as JSON text.
protocol StoresJSONText {}

extension ValueCoding {
    /// The shape of every value of `type` in a `UserDefaults`.
    ///
    /// Worked out once per type and kept: it is asked on every read of a suite over `UserDefaults`.
    static func propertyListShape<T: Defaults.Serializable>(of type: T.Type) -> PropertyListShape {
        let identifier = ObjectIdentifier(type)
        if let known = knownShapes.withLock({ $0[identifier] }) { return known }
        let shape = derivedShape(of: type)
        knownShapes.withLock { $0[identifier] = shape }
        return shape
    }

    /// The shape of `value` in a `UserDefaults`: its type's, with what any `AnySerializable` inside
    /// wraps.
    static func propertyListShape<T: Defaults.Serializable>(of value: T) -> PropertyListShape {
        let shape = propertyListShape(of: T.self)
        guard shape.dependsOnTheValue else { return shape }
        if let shaped = value as? any PropertyListShaped { return shaped.propertyListShapeOfValue }
        guard let serializable = T.bridge.serialize(value as? T.Value),
            let nested = serializable as? any Defaults.Serializable
        else { return shape }
        return propertyListShape(of: nested)
    }

    private static let knownShapes = Lock<[ObjectIdentifier: PropertyListShape]>([:])

    private static func derivedShape<T: Defaults.Serializable>(of type: T.Type) -> PropertyListShape {
        if let shaped = type as? any PropertyListShaped.Type { return shaped.propertyListShape }
        if T.Bridge.self is any StoresJSONText.Type { return .jsonText }
        if let nested = T.Serializable.self as? any Defaults.Serializable.Type {
            return propertyListShape(of: nested)
        }
        return .plain
    }
}

// The built-in types say their shapes where they say their JSON (`Bridges/`): `JSONRepresentable`
// requires it.

extension Defaults.CodableBridge: StoresJSONText {}
