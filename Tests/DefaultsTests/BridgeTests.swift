import Defaults
import Foundation
import Testing

@Suite struct BridgeTests {
    private static let ann = User(name: "Ann", age: 30)
    private static let bob = User(name: "Bøb \u{0}", age: -1)

    @Test func aCustomBridgeStoresWhatItsSerializableTypeStores() throws {
        let result = try serializationRoundTrip(Self.ann, default: User(name: "", age: 0))
        #expect(result.value == Self.ann)
        #expect(result.writerValue == Self.ann)
        #expect(result.stored == .object(["name": .string("Ann"), "age": .string("30")]))
        #expect(result.errors.isEmpty)
    }

    @Test func bridgedValuesSurviveInsideCollectionsAndOptionals() async throws {
        var batch = SerializationBatch()
        batch.expectLossless(
            [Self.ann, Self.bob],
            default: [],
            storedAs: .array([
                .object(["name": .string("Ann"), "age": .string("30")]),
                .object(["name": .string("Bøb \u{0}"), "age": .string("-1")]),
            ])
        )
        batch.expectLossless(["first": Self.ann, "second": Self.bob], default: [:])
        batch.expectLossless(Optional(Self.bob), default: nil)
        batch.expectLossless([Self.ann, nil] as [User?], default: [])
        batch.expectLossless([["team": [Self.ann, Self.bob]]], default: [])
        try await batch.run()
    }

    @Test func bridgesComposeThroughARawRepresentableEnum() async throws {
        var batch = SerializationBatch()
        batch.expectLossless(Temperature(celsius: 20), default: Temperature(celsius: 0), storedAs: .number("20"))
        batch.expectLossless(
            [Temperature(celsius: 100), Temperature(celsius: 0)],
            default: [],
            storedAs: .array([.number("100"), .number("0")])
        )
        batch.expectLossless(
            ["kitchen": Temperature(celsius: 20)],
            default: [:],
            storedAs: .object(["kitchen": .number("20")])
        )
        try await batch.run()
    }

    @Test func bridgesComposeThroughAnotherBridgedType() async throws {
        let account = Account(owner: Self.ann, plan: "pro")
        var batch = SerializationBatch()
        batch.expectLossless(
            account,
            default: Account(owner: Self.bob, plan: "free"),
            storedAs: .object(["name": .string("Ann"), "age": .string("30"), "plan": .string("pro")])
        )
        batch.expectLossless([account, Account(owner: Self.bob, plan: "")], default: [])
        batch.expectLossless(["main": account], default: [:])
        batch.expectLossless(
            Member(user: Self.bob),
            default: Member(user: Self.ann),
            storedAs: .object(["name": .string("Bøb \u{0}"), "age": .string("-1")])
        )
        batch.expectLossless([Member(user: Self.ann)], default: [])
        try await batch.run()
    }

    @Test func aValueTheBridgeDeclinesIsNotStoredAndIsReported() throws {
        try withSerializationFile { file in
            let suite = file.makeSuite()
            let key = Defaults.Key<Temperature>("temperature", default: Temperature(celsius: 0), suite: suite)
            suite[key] = Temperature(celsius: 100)
            suite[key] = Temperature(celsius: 37)  // no `Celsius` case for it
            #expect(suite[key] == Temperature(celsius: 100))
            #expect(file.errors.keysThatFailedToSerialize == ["temperature"])
            try suite.synchronize()
            #expect(try file.members()["temperature"] == .number("100"))
        }
    }

    @Test func aCollectionWithAnElementTheBridgeDeclinesIsNotStoredAndIsReported() throws {
        try withSerializationFile { file in
            let suite = file.makeSuite()
            let key = Defaults.Key<[Temperature]>("temperatures", default: [], suite: suite)
            suite[key] = [Temperature(celsius: 0)]
            suite[key] = [Temperature(celsius: 20), Temperature(celsius: 37)]
            #expect(suite[key] == [Temperature(celsius: 0)])
            #expect(file.errors.keysThatFailedToSerialize == ["temperatures"])
            try suite.synchronize()
            let stored = try file.members()["temperatures"]
            #expect(stored == .array([.number("0")]))
        }
    }

    @Test func aStoredValueTheBridgeCannotReadReadsAsTheDefault() throws {
        try withSerializationFile { file in
            try Data(#"{ "user" : { "name" : "Ann", "age" : "thirty" }, "temperature" : 37 }"#.utf8).write(to: file.url)
            let suite = file.makeSuite()
            #expect(suite[Defaults.Key<User>("user", default: Self.bob, suite: suite)] == Self.bob)
            let temperature = Defaults.Key<Temperature>("temperature", default: Temperature(celsius: 0), suite: suite)
            #expect(suite[temperature] == Temperature(celsius: 0))
            #expect(
                suite[Defaults.Key<[String: String]>("user", default: [:], suite: suite)]
                    == ["name": "Ann", "age": "thirty"]
            )
        }
    }
}

extension BridgeTests {
    fileprivate struct User: Equatable, Hashable {
        var name: String
        var age: Int
    }

    /// Stores a `User` as a dictionary of strings.
    fileprivate struct UserBridge: Defaults.Bridge {
        func serialize(_ value: User?) -> [String: String]? {
            value.map { ["name": $0.name, "age": String($0.age)] }
        }

        func deserialize(_ object: [String: String]?) -> User? {
            guard let object, let name = object["name"], let age = object["age"].flatMap(Int.init) else { return nil }
            return User(name: name, age: age)
        }
    }

    /// The temperatures a `Celsius` case names.
    fileprivate enum Celsius: Int, Defaults.Serializable {
        case freezing = 0
        case room = 20
        case boiling = 100
    }

    fileprivate struct Temperature: Equatable {
        var celsius: Int
    }

    /// Stores a `Temperature` as a `Celsius` case, which stores its raw value: two bridges deep.
    fileprivate struct TemperatureBridge: Defaults.Bridge {
        func serialize(_ value: Temperature?) -> Celsius? {
            value.flatMap { Celsius(rawValue: $0.celsius) }
        }

        func deserialize(_ object: Celsius?) -> Temperature? {
            object.map { Temperature(celsius: $0.rawValue) }
        }
    }

    fileprivate struct Member: Equatable {
        var user: User
    }

    /// Stores a `Member` as the `User` it wraps, which its own bridge stores as a dictionary.
    fileprivate struct MemberBridge: Defaults.Bridge {
        func serialize(_ value: Member?) -> User? { value?.user }

        func deserialize(_ object: User?) -> Member? { object.map(Member.init) }
    }

    fileprivate struct Account: Equatable {
        var owner: User
        var plan: String
    }

    /// Stores an `Account` as a `User` whose dictionary gains a plan: a bridge onto a bridged type.
    fileprivate struct AccountBridge: Defaults.Bridge {
        func serialize(_ value: Account?) -> AccountUser? {
            value.map { AccountUser(user: $0.owner, plan: $0.plan) }
        }

        func deserialize(_ object: AccountUser?) -> Account? {
            object.map { Account(owner: $0.user, plan: $0.plan) }
        }
    }

    /// A user with a plan, bridged to `[String: String]` like `User`.
    fileprivate struct AccountUser {
        var user: User
        var plan: String
    }

    fileprivate struct AccountUserBridge: Defaults.Bridge {
        func serialize(_ value: AccountUser?) -> [String: String]? {
            guard let value, var fields = UserBridge().serialize(value.user) else { return nil }
            fields["plan"] = value.plan
            return fields
        }

        func deserialize(_ object: [String: String]?) -> AccountUser? {
            guard let user = UserBridge().deserialize(object), let plan = object?["plan"] else { return nil }
            return AccountUser(user: user, plan: plan)
        }
    }
}

extension BridgeTests.User: Defaults.Serializable {
    static let bridge = BridgeTests.UserBridge()
}

extension BridgeTests.Temperature: Defaults.Serializable {
    static let bridge = BridgeTests.TemperatureBridge()
}

extension BridgeTests.Member: Defaults.Serializable {
    static let bridge = BridgeTests.MemberBridge()
}

extension BridgeTests.Account: Defaults.Serializable {
    static let bridge = BridgeTests.AccountBridge()
}

extension BridgeTests.AccountUser: Defaults.Serializable {
    static let bridge = BridgeTests.AccountUserBridge()
}
