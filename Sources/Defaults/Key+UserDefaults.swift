import Foundation

extension Defaults.Key {
    /// Creates a key with a fixed default value, stored in a Foundation `UserDefaults`.
    ///
    /// For code written for sindresorhus/Defaults: `UserDefaults.standard` means
    /// ``Defaults/Suite/standard``, the JSON file, and any other instance means one adapter over it
    /// (``Defaults/Suite/init(userDefaults:)``), shared by every key made with that instance, so
    /// keys made with equal arguments are equal.
    ///
    /// ```swift
    /// let extensionDefaults = UserDefaults(suiteName: "com.unicorn.app")!
    /// let isUnicorn = Defaults.Key<Bool>("isUnicorn", default: true, suite: extensionDefaults)
    /// ```
    ///
    /// - Parameters:
    ///   - name: The name in the suite; any non-empty string. An empty name stops the program.
    ///   - defaultValue: The value read while nothing is stored.
    ///   - suite: Where the value is stored.
    @_disfavoredOverload
    public convenience init(_ name: String, default defaultValue: Value, suite: UserDefaults) {
        self.init(name, default: defaultValue, suite: Defaults.Suite.resolving(suite))
    }

    /// Creates a key whose default is computed on every read while nothing is stored, stored in a
    /// Foundation `UserDefaults`.
    ///
    /// The closure is not called when the key is created. The suite follows the rule of
    /// ``init(_:default:suite:)-(_,_,UserDefaults)``.
    ///
    /// - Parameters:
    ///   - name: The name in the suite; any non-empty string. An empty name stops the program.
    ///   - suite: Where the value is stored.
    ///   - defaultValue: Computes the default.
    @_disfavoredOverload
    public convenience init(
        _ name: String,
        suite: UserDefaults,
        default defaultValue: @escaping @Sendable () -> Value
    ) {
        self.init(name, suite: Defaults.Suite.resolving(suite), default: defaultValue)
    }

    /// Creates an optional key, whose default is `nil`, stored in a Foundation `UserDefaults`.
    ///
    /// The suite follows the rule of ``init(_:default:suite:)-(_,_,UserDefaults)``.
    ///
    /// - Parameters:
    ///   - name: The name in the suite; any non-empty string. An empty name stops the program.
    ///   - suite: Where the value is stored.
    @_disfavoredOverload
    public convenience init<Wrapped>(_ name: String, suite: UserDefaults) where Value == Wrapped? {
        self.init(name, default: nil, suite: Defaults.Suite.resolving(suite))
    }
}
