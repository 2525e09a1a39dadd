import Foundation

// MARK: - Scalars

extension Bool: Defaults.Serializable, ScalarRepresentable, LosslessStorable {
    /// Booleans are stored as JSON `true` and `false`.
    public static let bridge = Defaults.NativeBridge<Bool>()
    var jsonValue: JSONValue? { .bool(self) }
    static func make(from json: JSONValue) -> Bool? {
        guard case .bool(let value) = json else { return nil }
        return value
    }
    static var storedSchema: [String: JSONValue] { ["type": .string("boolean")] }
    static var propertyListShape: PropertyListShape { .plain }
    static var codableMember: (value: Bool, schema: [String: JSONValue]) { (false, storedSchema) }
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension String: Defaults.Serializable, ScalarRepresentable, LosslessStorable {
    /// Strings are stored as JSON strings, non-ASCII text as UTF-8.
    public static let bridge = Defaults.NativeBridge<String>()
    var jsonValue: JSONValue? { .string(self) }
    static func make(from json: JSONValue) -> String? {
        guard case .string(let value) = json else { return nil }
        return value
    }
    static var storedSchema: [String: JSONValue] { ["type": .string("string")] }
    static var propertyListShape: PropertyListShape { .plain }
    static var codableMember: (value: String, schema: [String: JSONValue]) { ("", storedSchema) }
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

// MARK: - Foundation values

extension Data: Defaults.Serializable, ScalarRepresentable, LosslessStorable {
    /// Stored as a base64 string.
    public static let bridge = Defaults.NativeBridge<Data>()
    var jsonValue: JSONValue? { .string(base64EncodedString()) }
    static func make(from json: JSONValue) -> Data? {
        guard case .string(let text) = json else { return nil }
        return Data(base64Encoded: text)
    }
    /// Base64 text.
    static var storedSchema: [String: JSONValue] {
        [
            "type": .string("string"), "contentEncoding": .string("base64"),
            "pattern": .string("^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"),
        ]
    }
    static var propertyListShape: PropertyListShape { .data }
    static var codableMember: (value: Data, schema: [String: JSONValue]) { (Data(), storedSchema) }
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension Date: Defaults.Serializable, ScalarRepresentable, LosslessStorable {
    /// Stored as an ISO 8601 string in UTC with milliseconds when that string reads back to the
    /// same date bit for bit; otherwise as a JSON number of seconds since 2001-01-01 00:00:00 UTC
    /// (`timeIntervalSinceReferenceDate`), which is exact.
    public static let bridge = Defaults.NativeBridge<Date>()

    private static let iso8601 = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let iso8601Whole = Date.ISO8601FormatStyle()

    var jsonValue: JSONValue? {
        let seconds = timeIntervalSinceReferenceDate
        if seconds.isFinite {
            let text = formatted(Self.iso8601)
            if let back = try? Self.iso8601.parse(text),
                back.timeIntervalSinceReferenceDate.bitPattern == seconds.bitPattern
            {
                return .string(text)
            }
        }
        return seconds.jsonValue
    }

    static func make(from json: JSONValue) -> Date? {
        if case .string(let text) = json {
            if let date = try? iso8601.parse(text) { return date }
            if let date = try? iso8601Whole.parse(text) { return date }
        }
        return Double.make(from: json).map(Date.init(timeIntervalSinceReferenceDate:))
    }
    /// An ISO 8601 date and time, or seconds since 2001-01-01 00:00:00 UTC.
    static var storedSchema: [String: JSONValue] {
        [
            "anyOf": .array([
                .object(["type": .string("string"), "format": .string("date-time")]),
                .object(["type": .string("number")]),
            ])
        ]
    }
    static var propertyListShape: PropertyListShape { .date }
    /// `JSONEncoder`'s default: seconds since 2001.
    static var codableMember: (value: Date, schema: [String: JSONValue]) {
        (Date(timeIntervalSinceReferenceDate: 0), ["type": .string("number")])
    }
    /// `true`: a `UserDefaults` holds it as itself.
    public static var isNativelySupportedType: Bool { true }
}

extension URL: Defaults.Serializable, ScalarRepresentable {
    /// Stored as its absolute string.
    public static let bridge = Defaults.NativeBridge<URL>()
    var jsonValue: JSONValue? { .string(absoluteString) }
    static func make(from json: JSONValue) -> URL? {
        guard case .string(let text) = json else { return nil }
        return URL(string: text)
    }
    static var storedSchema: [String: JSONValue] { ["type": .string("string"), "format": .string("uri-reference")] }
    /// Sindresorhus/Defaults stores a URL through its Codable bridge: the JSON text of the string.
    static var propertyListShape: PropertyListShape { .jsonText }
    static var codableMember: (value: URL, schema: [String: JSONValue]) { (URL(fileURLWithPath: "/"), storedSchema) }
}

extension UUID: Defaults.Serializable, ScalarRepresentable {
    /// Stored as its canonical uppercase string.
    public static let bridge = Defaults.NativeBridge<UUID>()
    var jsonValue: JSONValue? { .string(uuidString) }
    static func make(from json: JSONValue) -> UUID? {
        guard case .string(let text) = json else { return nil }
        return UUID(uuidString: text)
    }
    static var storedSchema: [String: JSONValue] {
        [
            "type": .string("string"), "format": .string("uuid"),
            "pattern": .string("^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"),
        ]
    }
    static var propertyListShape: PropertyListShape { .plain }
    static var codableMember: (value: UUID, schema: [String: JSONValue]) { (UUID(), storedSchema) }
}
