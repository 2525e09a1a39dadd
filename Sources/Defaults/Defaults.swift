/// Typed, observable settings: keys with default values, stored in a suite.
///
/// `Defaults` is a namespace. Declare keys as static members of ``Defaults/Keys`` and read or write
/// them through the static subscript:
///
/// ```swift
/// extension Defaults.Keys {
///     static let quality = Key<Double>("quality", default: 0.8)
/// }
///
/// Defaults[.quality] += 0.1
/// Defaults.reset(.quality)
/// ```
public enum Defaults {}
