// README, "Wrapped in `Array`, `Set`, or `Dictionary`".
import Defaults

extension Defaults.Keys {
    // Adapted: `fileprivate`, as "Serialization for ambiguous `Codable` type" declares it too.
    fileprivate static let magic = Key<[String: Defaults.AnySerializable]>("magic", default: [:])
}

// Adapted: `private`, as two other examples declare another `mime`.
private enum mime: String, Defaults.Serializable {
    case JSON = "application/json"
}

func anySerializableInADictionary() {
    // …
    Defaults[.magic]["unicorn"] = "🦄"

    if let value: String = Defaults[.magic]["unicorn"]?.get() {
        print(value)
        //=> "🦄"
    }

    Defaults[.magic]["number"] = 3
    Defaults[.magic]["boolean"] = true
    Defaults[.magic]["enum"] = Defaults.AnySerializable(mime.JSON)

    if let mimeType: mime = Defaults[.magic]["enum"]?.get() {
        print(mimeType.rawValue)
        //=> "application/json"
    }
}
