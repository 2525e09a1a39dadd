import Foundation

/// Keeps a suite's values in a Foundation `UserDefaults`, as property-list values other code can read.
///
/// Strings, booleans, numbers, arrays and dictionaries are stored as themselves, so
/// `userDefaults.integer(forKey:)` sees an `Int` key. A value containing `nil` (which property lists
/// cannot hold) is stored as its JSON text in a `Data`.
final class UserDefaultsStorage: @unchecked Sendable {  // UserDefaults locks its own state internally
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
            if let integer = Int(text) { return integer }
            // NB: property lists hold unsigned 64-bit integers too; a Double would lose digits.
            if let unsigned = UInt64(text) { return unsigned }
            return Double(text)
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
            if type(of: object) == Double.self || type(of: object) == Float.self {
                return .number(number.doubleValue.description)
            }
            if let integer = object as? Int, type(of: object) == Int.self { return .number(String(integer)) }
            if let unsigned = object as? UInt64, type(of: object) == UInt64.self { return .number(String(unsigned)) }
            let double = number.doubleValue
            if double.rounded(.towardZero) == double, let integer = Int(exactly: double) {
                return .number(String(integer))
            }
            return .number(double.description)
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
            store: Store(backend: .userDefaults(UserDefaultsStorage(userDefaults))),
            location: nil,
            errorHandler: nil
        )
    }
}
