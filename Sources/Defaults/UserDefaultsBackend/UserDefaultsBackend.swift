import Foundation

/// The backend of a suite over a Foundation `UserDefaults`: values as property-list values other
/// code can read.
///
/// Each value is laid out as sindresorhus/Defaults lays it out on Apple platforms, by its key's type
/// (a `PropertyListShape`): strings, booleans, numbers, dates and bytes as themselves, alone or in
/// arrays and dictionaries, `Codable` values and URLs as JSON text, so `userDefaults.integer(forKey:)`
/// sees an `Int` key and `object(forKey:) as? Date` a `Date` key. The store hands over JSON only, so
/// the keys that read and write a name teach the backend its shape. A value containing `nil` (which
/// property lists cannot hold) or a number a property list would change (wider than 64 bits, or a
/// double written otherwise than Swift writes it) is stored as its JSON text in a `Data`, so it
/// reads back as it was.
///
/// Other code in the process reads and writes the same `UserDefaults` directly, and Foundation on
/// Linux announces none of it, so two things differ from other backends, and the store asks this
/// one directly for them (``Store/userDefaults``): every read of the suite takes the value the
/// `UserDefaults` holds now, and every write is stored at once, not coalesced, so other code reads it
/// at once. For the same reason it reports no changes made elsewhere, and offers no conditional
/// commit (an `exclusiveTransaction` over it is a plain transaction: nothing could exclude the other
/// code).
final class UserDefaultsBackend: Defaults.Backend, @unchecked Sendable {  // UserDefaults locks its own state internally
    // A `var` only so `holdsTheOnlyReference` can pass it inout; it is never reassigned.
    private(set) var userDefaults: UserDefaults

    init(_ userDefaults: UserDefaults) {
        self.userDefaults = userDefaults
    }

    /// Whether nothing but this storage holds `userDefaults` strongly.
    ///
    /// Only meaningful while no other thread can reach this storage (see `UserDefaultsAdapters`).
    var holdsTheOnlyReference: Bool {
        isKnownUniquelyReferenced(&userDefaults)
    }

    /// The names of every value `userDefaults` reads, from any of its domains.
    var storedNames: [String] {
        Array(userDefaults.dictionaryRepresentation().keys)
    }

    var name: String { "UserDefaults" }

    /// Every value the `UserDefaults` reads, from any of its domains.
    func load() throws(Defaults.StorageError) -> Defaults.BackendContents {
        var values: [String: JSONValue] = [:]
        for name in storedNames {
            if let value = value(forKey: name) { values[name] = value }
        }
        return Defaults.BackendContents(values: values)
    }

    /// Stores `changes` key by key; with `removesEverything`, every value the `UserDefaults` reads
    /// goes first.
    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) -> Defaults.BackendCommitResult {
        if changes.removesEverything {
            for name in storedNames where changes.values[name] == nil { set(nil, forKey: name) }
        }
        for (name, value) in changes.values { set(value, forKey: name) }
        return .stored
    }

    /// What keys taught the backend about each name: how to lay out what comes without a type (a
    /// transaction's commit, ``load()``, `storedValue(named:)`).
    private struct Known: Sendable {
        /// The shape the type of the last key that read or wrote the name gives it.
        var typeShape: PropertyListShape?
        /// The last values written through keys, with the shape each value gave (an
        /// `AnySerializable` knows more than its type): a commit finds its own by its JSON, whatever
        /// was written meanwhile.
        var written: [(json: JSONValue, shape: PropertyListShape)] = []
        /// The value last read where the type says nothing (an `AnySerializable`), with the shape
        /// it had: parts written back unchanged keep the types other code gave them.
        var read: (json: JSONValue, shape: PropertyListShape)?
    }

    private let known = Lock<[String: Known]>([:])

    /// How many written values ``Known`` keeps per name.
    private static let writtenKept = 8

    /// Records the shape a key's type gives `name`.
    func learn(typeShape shape: PropertyListShape, forKey name: String) {
        known.withLock { $0[name, default: Known()].typeShape = shape }
    }

    /// Records the shape of a value about to be written under `name`, by its JSON.
    func learn(_ shape: PropertyListShape, ofWritten json: JSONValue, forKey name: String) {
        known.withLock { known in
            var entry = known[name, default: Known()]
            entry.written.append((json, shape))
            if entry.written.count > Self.writtenKept { entry.written.removeFirst() }
            known[name] = entry
        }
    }

    /// The first bytes of a `Data` that holds a value's JSON text (a UTF-8 byte-order mark): what
    /// tells it from bytes stored as such, in any process.
    private static let jsonTextMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// The value the `UserDefaults` holds under `name`, as JSON; `shape` says how it was laid out,
    /// when the type reading it is known.
    func value(forKey name: String, shape: PropertyListShape?) -> JSONValue? {
        guard let object = userDefaults.object(forKey: name) else { return nil }
        let shape = shape ?? known.withLock { $0[name]?.typeShape } ?? .any
        if shape != .data, let data = Self.unwrapped(object) as? Data {
            // A value a property list cannot hold is stored as its JSON text in a `Data`,
            // marked (see `set`); a typed key that is not `Data` also takes the unmarked text
            // earlier versions stored.
            let bytes = Array(data)
            if bytes.starts(with: Self.jsonTextMark),
                let parsed = try? JSONParser.parse(Array(bytes.dropFirst(Self.jsonTextMark.count)))
            {
                return parsed
            }
            if shape != .any, let parsed = try? JSONParser.parse(bytes) { return parsed }
        }
        let json = Self.json(from: object, shape: shape)
        if shape.dependsOnTheValue, let json {
            // The JSON of an AnySerializable cannot say it held a date: kept here, so that
            // writing the value back stores each unchanged part as it was.
            let read = (json, shape.informed(by: Self.shape(ofPropertyList: object)))
            known.withLock { $0[name, default: Known()].read = read }
        }
        return json
    }

    func set(_ value: JSONValue?, forKey name: String) {
        guard let value else {
            userDefaults.removeObject(forKey: name)
            return
        }
        let entry = known.withLock { $0[name] }
        var shape = entry?.written.last { $0.json == value }?.shape ?? entry?.typeShape ?? .any
        if let read = entry?.read { shape = shape.keeping(read, for: value) }
        let stored =
            Self.propertyList(from: value, shape: shape) ?? Data(Self.jsonTextMark + JSONWriter.compactBytes(value))
        userDefaults.set(stored, forKey: name)
    }

    /// `json` as the property-list value sindresorhus/Defaults stores for a value of `shape`, or `nil`
    /// when a property list cannot hold it (a `null` inside, a number a property list would change).
    private static func propertyList(from json: JSONValue, shape: PropertyListShape) -> Any? {
        if case .null = json { return nil }
        if shape == .jsonText { return String(decoding: JSONWriter.compactBytes(json), as: UTF8.self) }
        switch json {
        case .null:
            return nil
        case .bool(let flag):
            return flag
        case .number(let text):
            // As a number only when it is exactly that number; otherwise (a number too big for
            // 64 bits, a double not written the way Swift writes it) the JSON text keeps it.
            switch shape {
            case .date:
                // A date that milliseconds cannot hold is its seconds since 2001.
                if let seconds = Double(text), seconds.description == text {
                    return Date(timeIntervalSinceReferenceDate: seconds)
                }
            case .float:
                if let float = Float(text), float.description == text { return float }
            default:
                break
            }
            if let integer = Int(text), String(integer) == text { return integer }
            // Property lists hold unsigned 64-bit integers too; a Double would lose digits.
            if let unsigned = UInt64(text), String(unsigned) == text { return unsigned }
            if let double = Double(text), double.description == text { return double }
            return nil
        case .string(let text):
            switch shape {
            case .date: if let date = Date.make(from: json) { return date }
            case .data: if let data = Data(base64Encoded: text) { return data }
            case .float: if let float = Float.make(from: json) { return float }
            case .double: if let double = Double.make(from: json) { return double }
            default: break
            }
            return text
        case .array(let elements):
            var result: [Any] = []
            result.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                guard let converted = propertyList(from: element, shape: shape.element(at: index)) else { return nil }
                result.append(converted)
            }
            return result
        case .object(let members):
            var result: [String: Any] = [:]
            for (name, member) in members {
                guard let converted = propertyList(from: member, shape: shape.member(name)) else { return nil }
                result[name] = converted
            }
            return result
        }
    }

    /// The JSON of a property-list value the `UserDefaults` holds, laid out as `shape` says.
    private static func json(from object: Any, shape: PropertyListShape) -> JSONValue? {
        guard let object = unwrapped(object) else { return .null }
        if type(of: object) == Bool.self, let flag = object as? Bool { return .bool(flag) }
        switch object {
        case let text as String:
            if shape == .jsonText, let parsed = try? JSONParser.parse(Array(text.utf8)) { return parsed }
            return .string(text)
        case let data as Data:
            return .string(data.base64EncodedString())
        case let date as Date:
            return date.jsonValue
        case let number as NSNumber:
            return json(fromNumber: number, shape: shape)
        case let array as [Any]:
            var elements: [JSONValue] = []
            elements.reserveCapacity(array.count)
            for (index, element) in array.enumerated() {
                guard let converted = json(from: element, shape: shape.element(at: index)) else { return nil }
                elements.append(converted)
            }
            return .array(elements)
        case let dictionary as [String: Any]:
            var members: [String: JSONValue] = [:]
            for (name, member) in dictionary {
                guard let converted = json(from: member, shape: shape.member(name)) else { return nil }
                members[name] = converted
            }
            return .object(members)
        default:
            return nil
        }
    }

    /// The JSON of a number, by the number's own type, whatever Swift type it comes back as:
    /// Foundation hands an `Int` back as an `Int64` (or an `NSNumber`), a `Bool` inside an array or
    /// dictionary as an `NSNumber`, and a `Float` read from the file as a `Double`.
    private static func json(fromNumber number: NSNumber, shape: PropertyListShape) -> JSONValue {
        // A boolean is a number of its own class; its type code, "c", is also a signed char's.
        if ObjectIdentifier(type(of: number)) == booleanClass { return .bool(number.boolValue) }
        switch String(cString: number.objCType) {
        case "q", "l", "i", "s", "c": return .number(String(number.int64Value))
        case "Q", "L", "I", "S", "C": return .number(String(number.uint64Value))
        case "f":
            if shape == .double { return floatingPointJSON(Double(number.floatValue)) }
            return floatingPointJSON(number.floatValue)
        default:
            let double = number.doubleValue
            // A Float comes back from the file as the Double of the same value: exact.
            if shape == .float { return floatingPointJSON(Float(double)) }
            // Written as Swift writes a Double ("3.0"), as the value was before it was stored;
            // an integer key reads a whole one all the same.
            return floatingPointJSON(double)
        }
    }

    /// The shape a property-list value has, seen from the value: where a type says nothing.
    private static func shape(ofPropertyList object: Any) -> PropertyListShape {
        guard let object = unwrapped(object) else { return .plain }
        if type(of: object) == Bool.self { return .plain }
        switch object {
        case is String: return .plain
        case is Data: return .data
        case is Date: return .date
        case let number as NSNumber:
            guard ObjectIdentifier(type(of: number)) != booleanClass else { return .plain }
            switch String(cString: number.objCType) {
            case "f": return .float
            case "d": return .double
            default: return .plain
            }
        case let array as [Any]: return .elements(array.map(shape(ofPropertyList:)))
        case let dictionary as [String: Any]: return .members(dictionary.mapValues(shape(ofPropertyList:)))
        default: return .plain
        }
    }

    /// The class of the numbers Foundation makes for booleans.
    private static let booleanClass = ObjectIdentifier(type(of: NSNumber(value: true)))

    /// `object` without the `Optional` Foundation wraps an array's elements and a dictionary's
    /// members in; `nil` for an empty one.
    private static func unwrapped(_ object: Any) -> Any? {
        // By the dynamic type first: a cast alone would wrap any value in an Optional to make
        // it conform.
        guard type(of: object) is any OptionalPropertyListValue.Type,
            let optional = object as? any OptionalPropertyListValue
        else { return object }
        return optional.wrappedObject.flatMap(unwrapped)
    }
}

/// An `Optional` of any type, to take an element of a property list out of it.
private protocol OptionalPropertyListValue {
    var wrappedObject: Any? { get }
}

extension Optional: OptionalPropertyListValue {
    fileprivate var wrappedObject: Any? { map { $0 as Any } }
}

extension Defaults.Suite {
    /// Creates a suite over a Foundation `UserDefaults`, for code that must share one with others.
    ///
    /// Every read asks `userDefaults`, so writes made through it by other code are seen; writes
    /// through this suite are stored as property-list values that such code can read. Changes made
    /// directly through `userDefaults` are not reported to observers: Foundation on Linux does not
    /// announce them.
    ///
    /// - Parameter userDefaults: The store to read and write.
    public convenience init(userDefaults: UserDefaults) {
        self.init(
            store: Store(backend: .backend(BackendConnection(UserDefaultsBackend(userDefaults)))),
            location: nil,
            errorHandler: nil
        )
    }
}

extension UserDefaultsBackend: WriteThroughBackend {
    func value<Value: Defaults.Serializable>(forKey name: String, readAs type: Value.Type) -> JSONValue? {
        let shape = ValueCoding.propertyListShape(of: Value.self)
        learn(typeShape: shape, forKey: name)
        return value(forKey: name, shape: shape)
    }

    func value(forKey name: String) -> JSONValue? {
        value(forKey: name, shape: nil)
    }

    func willWrite<Value: Defaults.Serializable>(_ value: Value, as json: JSONValue, forKey name: String) {
        let typeShape = ValueCoding.propertyListShape(of: Value.self)
        learn(typeShape: typeShape, forKey: name)
        // Only a value that knows more than its type (an AnySerializable inside) is kept.
        let valueShape = ValueCoding.propertyListShape(of: value)
        if valueShape != typeShape { learn(valueShape, ofWritten: json, forKey: name) }
    }

    func synchronize() {
        userDefaults.synchronize()
    }
}
