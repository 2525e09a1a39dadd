// The settings the soak works on, and the model classes that hold some of them as an app would.
import DefaultsObservation
import Foundation
import Observation

/// A `Codable` value stored as JSON, for the soak's one key of a user's own type.
struct Profile: Codable, Hashable, Sendable, Defaults.Serializable {
    var name: String
    var level: Int
    var tags: [String]
}

/// The soak's keys, bound to one suite.
///
/// - `hot.*`: one key of each kind of value; every thread of every process and the third actor
///   write them, and every long-lived observer watches some of them.
/// - `pair.a` and `pair.b`: only ever written together (a transaction, an exclusive transaction, or
///   one edit of the whole file), always to the same new text, so seeing them differ is seeing half
///   of a transaction.
/// - `counter`: only ever increased by one, in an exclusive transaction or by the third actor under
///   the file's lock.
/// - `sync.p<process>.t<thread>`: written by that one thread only, with increasing numbers.
/// - `quiet.p<process>.t<thread>`: written by that one thread only, negative inside
///   `withoutPropagation` and positive outside it.
struct SoakKeys: Sendable {
    /// The names of the `hot.*` keys, sorted.
    static let hotNames = [
        "hot.bool", "hot.double", "hot.int", "hot.list", "hot.optional", "hot.profile", "hot.string",
    ]

    let suite: Defaults.Suite
    let int: Defaults.Key<Int>
    let string: Defaults.Key<String>
    let bool: Defaults.Key<Bool>
    let double: Defaults.Key<Double>
    let list: Defaults.Key<[String]>
    let profile: Defaults.Key<Profile>
    let optional: Defaults.Key<String?>
    let pairA: Defaults.Key<String>
    let pairB: Defaults.Key<String>
    let counter: Defaults.Key<Int>

    init(suite: Defaults.Suite) {
        self.suite = suite
        int = .init("hot.int", default: 0, suite: suite)
        string = .init("hot.string", default: "", suite: suite)
        bool = .init("hot.bool", default: false, suite: suite)
        double = .init("hot.double", default: 0.5, suite: suite)
        list = .init("hot.list", default: [], suite: suite)
        profile = .init("hot.profile", default: Profile(name: "default", level: 0, tags: []), suite: suite)
        optional = .init("hot.optional", suite: suite)
        pairA = .init("pair.a", default: "", suite: suite)
        pairB = .init("pair.b", default: "", suite: suite)
        counter = .init("counter", default: 0, suite: suite)
    }

    /// The key thread `thread` of process `process` synchronizes.
    func syncKey(process: Int, thread: Int) -> Defaults.Key<Int> {
        .init("sync.p\(process).t\(thread)", default: 0, suite: suite)
    }

    /// The key thread `thread` of process `process` writes with and without propagation.
    func quietKey(process: Int, thread: Int) -> Defaults.Key<Int> {
        .init("quiet.p\(process).t\(thread)", default: 0, suite: suite)
    }

    var hotKeys: [Defaults._AnyKey] { [int, string, bool, double, list, profile, optional] }

    /// The canonical text of hot key `name` as this suite reads it now.
    func canonicalValue(of name: String) -> String {
        switch name {
        case "hot.int": canonical(suite[int])
        case "hot.string": canonical(suite[string])
        case "hot.bool": canonical(suite[bool])
        case "hot.double": canonical(suite[double])
        case "hot.list": canonical(suite[list])
        case "hot.profile": canonical(suite[profile])
        case "hot.optional": canonical(suite[optional])
        default: "unknown key \(name)"
        }
    }

    /// The canonical texts of hot keys `names` as this suite reads them now.
    func canonicalValues(of names: [String]) -> [String: String] {
        Dictionary(uniqueKeysWithValues: names.map { ($0, canonicalValue(of: $0)) })
    }

    /// Writes a new value to hot key `name`, made from `tag`.
    func write(_ name: String, tag: Int) {
        switch name {
        case "hot.int": suite[int] = tag
        case "hot.string": suite[string] = "s\(tag)"
        case "hot.bool": suite[bool] = tag % 2 == 0
        case "hot.double": suite[double] = Double(tag) / 8
        case "hot.list": suite[list] = (0..<(tag % 4)).map { "l\(tag)-\($0)" }
        case "hot.profile": suite[profile] = Profile(name: "p\(tag)", level: tag % 100, tags: ["t\(tag % 7)"])
        case "hot.optional": suite[optional] = tag % 3 == 0 ? nil : "o\(tag)"
        default: break
        }
    }
}

/// A model class as an app writes one: a property backed by a key, through `@Default`.
final class DefaultModel {
    @Default var double: Double
    @Default var optional: String?

    init(keys: SoakKeys) {
        _double = Default(keys.double)
        _optional = Default(keys.optional)
    }
}

/// A view-model on the main actor, as a GUI holds one: `withObservationTracking` and `Observations`
/// watch it.
@MainActor @Observable
final class SoakViewModel {
    @ObservationIgnored @ObservableDefault<String> var string: String
    @ObservationIgnored @ObservableDefault<Int> var int: Int
    @ObservationIgnored @ObservableDefault<Bool> var bool: Bool

    init(keys: SoakKeys) {
        _string = ObservableDefault(keys.string)
        _int = ObservableDefault(keys.int)
        _bool = ObservableDefault(keys.bool)
    }
}

/// A short-lived view-model that worker threads make, watch once and drop.
@Observable
final class ChurnViewModel {
    @ObservationIgnored @ObservableDefault<Int> var int: Int

    init(key: Defaults.Key<Int>) {
        _int = ObservableDefault(key)
    }
}

/// An object whose lifetime bounds observations tied to it.
final class Owner: Sendable {}
