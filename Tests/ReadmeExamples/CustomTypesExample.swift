// README, "Custom types", steps 1 to 4.
import Defaults

// Adapted: `private` (and so `UserBridge` too), as "Codable example" declares another `User`.
private struct User {
    let name: String
    let age: String
}

private struct UserBridge: Defaults.Bridge {
    typealias Value = User
    typealias Serializable = [String: String]

    /// The user as a dictionary. (Adapted: the lint asks every public declaration for a doc comment.)
    public func serialize(_ value: Value?) -> Serializable? {
        guard let value else {
            return nil
        }

        return [
            "name": value.name,
            "age": value.age,
        ]
    }

    /// The user from a dictionary. (Adapted: as above.)
    public func deserialize(_ object: Serializable?) -> Value? {
        guard
            let object,
            let name = object["name"],
            let age = object["age"]
        else {
            return nil
        }

        return User(
            name: name,
            age: age
        )
    }
}

extension User: Defaults.Serializable {
    static let bridge = UserBridge()
}

extension Defaults.Keys {
    // Adapted: `user` is `fileprivate`, as "Codable example" declares another; so are the others,
    // whose type is the file's `User`.
    fileprivate static let user = Defaults.Key<User>("user", default: User(name: "Hello", age: "24"))
    fileprivate static let arrayUser = Defaults.Key<[User]>("arrayUser", default: [User(name: "Hello", age: "24")])
    fileprivate static let setUser = Defaults.Key<Set<User>>("user", default: Set([User(name: "Hello", age: "24")]))
    fileprivate static let dictionaryUser = Defaults.Key<[String: User]>(
        "dictionaryUser",
        default: ["user": User(name: "Hello", age: "24")]
    )
}

// Adapted: `Set<User>` needs `User: Hashable`, which the README's step 1 leaves out.
extension User: Hashable {}

func customTypes() {
    // Adapted: printed.
    print(Defaults[.user].name)  //=> "Hello"
    print(Defaults[.arrayUser][0].name)  //=> "Hello"
    print(Defaults[.setUser].first?.name as Any)  //=> "Hello"
    print(Defaults[.dictionaryUser]["user"]?.name as Any)  //=> "Hello"
}
