// README, "Enum example", "Codable example" and "Use keys directly".
import Defaults

enum DurationKeys: String, Defaults.Serializable {
    case tenMinutes = "10 Minutes"
    case halfHour = "30 Minutes"
    case oneHour = "1 Hour"
}

extension Defaults.Keys {
    static let defaultDuration = Key<DurationKeys>("defaultDuration", default: .oneHour)
}

func enumExample() {
    print(Defaults[.defaultDuration].rawValue)  // Adapted: printed.
    //=> "1 Hour"
}

// Adapted: `private`, as "Custom types" declares another `User` and `user`.
private struct User: Codable, Defaults.Serializable {
    let name: String
    let age: String
}

extension Defaults.Keys {
    fileprivate static let user = Key<User>("user", default: .init(name: "Hello", age: "24"))
}

func codableExample() {
    print(Defaults[.user].name)  // Adapted: printed.
    //=> "Hello"
}

func useKeysDirectly() {
    let isUnicorn = Defaults.Key<Bool>("isUnicorn", default: true)

    print(Defaults[isUnicorn])  // Adapted: printed.
    //=> true
}
