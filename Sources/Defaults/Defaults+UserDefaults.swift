import Foundation

extension Defaults {
    /// Removes the values stored under the given names in a Foundation `UserDefaults`, as one change.
    ///
    /// `UserDefaults.standard` means ``Defaults/Suite/standard``, the JSON file; any other instance
    /// means the adapter over it that keys made with it use.
    @_disfavoredOverload
    public static func reset(_ names: String..., suite: UserDefaults) {
        reset(names, suite: Suite.resolving(suite))
    }

    /// Removes the values stored under the given names in a Foundation `UserDefaults`, as one change.
    ///
    /// `UserDefaults.standard` means ``Defaults/Suite/standard``, the JSON file; any other instance
    /// means the adapter over it that keys made with it use.
    @_disfavoredOverload
    public static func reset(_ names: [String], suite: UserDefaults) {
        reset(names, suite: Suite.resolving(suite))
    }

    /// Removes every value in a Foundation `UserDefaults`, as one change.
    ///
    /// `UserDefaults.standard` means ``Defaults/Suite/standard``: every value in its JSON file goes.
    /// Any other instance means the adapter over it that keys made with it use; then every key in
    /// the instance's own domain is removed.
    @_disfavoredOverload
    public static func removeAll(suite: UserDefaults) {
        removeAll(suite: Suite.resolving(suite))
    }
}
