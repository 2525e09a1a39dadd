import Foundation

/// The backend of a suite over a Foundation `UserDefaults`: values as property-list values other
/// code can read.
///
/// Strings, booleans, numbers, arrays and dictionaries are stored as themselves, so
/// `userDefaults.integer(forKey:)` sees an `Int` key. A value containing `nil` (which property lists
/// cannot hold) or a number a property list would change (wider than 64 bits, or a double written
/// otherwise than Swift writes it) is stored as its JSON text in a `Data`, so it reads back as it was.
///
/// Other code in the process reads and writes the same `UserDefaults` directly, and Foundation on
/// Linux announces none of it, so two things differ from other backends, and the store asks this
/// one directly for them (``Store/userDefaults``): every read of the suite takes the value the
/// `UserDefaults` holds now, and every write is stored at once, not coalesced, so other code reads it
/// at once. For the same reason it reports no changes made elsewhere, and offers no conditional
/// commit (an `exclusiveTransaction` over it is a plain transaction: nothing could exclude the other
/// code).
final class UserDefaultsBackend: Defaults.Backend, @unchecked Sendable {  // UserDefaults locks its own state internally
    // NB: a `var` only so `holdsTheOnlyReference` can pass it inout; it is never reassigned.
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
    func commit(_ changes: Defaults.BackendChanges) throws(Defaults.StorageError) {
        if changes.removesEverything {
            for name in storedNames where changes.values[name] == nil { set(nil, forKey: name) }
        }
        for (name, value) in changes.values { set(value, forKey: name) }
    }

    func value(forKey name: String) -> JSONValue? {
        userDefaults.object(forKey: name).flatMap(Self.json(from:))
    }

    func set(_ value: JSONValue?, forKey name: String) {
        guard let value else {
            userDefaults.removeObject(forKey: name)
            return
        }
        userDefaults.set(Self.propertyList(from: value) ?? Data(JSONWriter.compactBytes(value)), forKey: name)
    }

    private static func propertyList(from json: JSONValue) -> Any? {
        switch json {
        case .null:
            return nil
        case .bool(let flag):
            return flag
        case .number(let text):
            // NB: as a number only when it reads back as the same text; otherwise (a number too
            // big for 64 bits, a double not written the way Swift writes it) the JSON text keeps it.
            if let integer = Int(text), String(integer) == text { return integer }
            // NB: property lists hold unsigned 64-bit integers too; a Double would lose digits.
            if let unsigned = UInt64(text), String(unsigned) == text { return unsigned }
            if let double = Double(text), double.description == text { return double }
            return nil
        case .string(let text):
            return text
        case .array(let elements):
            var result: [Any] = []
            for element in elements {
                guard let converted = propertyList(from: element) else { return nil }
                result.append(converted)
            }
            return result
        case .object(let members):
            var result: [String: Any] = [:]
            for (name, member) in members {
                guard let converted = propertyList(from: member) else { return nil }
                result[name] = converted
            }
            return result
        }
    }

    private static func json(from object: Any) -> JSONValue? {
        switch object {
        case let flag as Bool where type(of: object) == Bool.self:
            return .bool(flag)
        case let text as String:
            return .string(text)
        case let data as Data:
            if let parsed = try? JSONParser.parse(Array(data)) { return parsed }
            return .string(data.base64EncodedString())
        case let date as Date:
            return date.jsonValue
        case let number as NSNumber:
            // NB: by the number's own type, whatever Swift type it comes back as: Foundation hands an
            // `Int` back as an `Int64` (or an `NSNumber`), and a Double would lose its digits.
            switch String(cString: number.objCType) {
            case "q", "l", "i", "s": return .number(String(number.int64Value))
            case "Q", "L", "I", "S", "C": return .number(String(number.uint64Value))
            case "f": return .number(number.floatValue.description)
            default:
                let double = number.doubleValue
                if double.rounded(.towardZero) == double, let integer = Int(exactly: double) {
                    return .number(String(integer))
                }
                return .number(double.description)
            }
        case let array as [Any]:
            var elements: [JSONValue] = []
            for element in array {
                guard let converted = json(from: element) else { return nil }
                elements.append(converted)
            }
            return .array(elements)
        case let dictionary as [String: Any]:
            var members: [String: JSONValue] = [:]
            for (name, member) in dictionary {
                guard let converted = json(from: member) else { return nil }
                members[name] = converted
            }
            return .object(members)
        default:
            return nil
        }
    }
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
            store: Store(backend: .backend(CustomBackend(UserDefaultsBackend(userDefaults)))),
            location: nil,
            errorHandler: nil
        )
    }
}
