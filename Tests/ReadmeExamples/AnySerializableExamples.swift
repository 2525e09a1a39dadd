// README, "Dynamic value": `Defaults.AnySerializable` for a primitive, with `get` and `set`, and
// in a dictionary; and "Serialization for ambiguous `Codable` type".
import Defaults
import Foundation  // Adapted: written out; the README takes it for granted.

func anySerializablePrimitive() {
    let any = Defaults.Key<Defaults.AnySerializable>("anyKey", default: 1)
    Defaults[any] = "🦄"
    print(Defaults[any].get(String.self) as Any)  // Adapted: printed.
}

// Adapted: `private`, as two other examples declare another `mime`.
private enum mime: String, Defaults.Serializable {
    case JSON = "application/json"
    case STREAM = "application/octet-stream"
}

func anySerializableGetAndSet() {
    let any = Defaults.Key<Defaults.AnySerializable>("anyKey", default: [Defaults.AnySerializable(mime.JSON)])

    if let mimeType: mime = Defaults[any].get() {
        print(mimeType.rawValue)
        //=> "application/json"
    }

    Defaults[any].set(mime.STREAM)

    if let mimeType: mime = Defaults[any].get() {
        print(mimeType.rawValue)
        //=> "application/octet-stream"
    }
}
