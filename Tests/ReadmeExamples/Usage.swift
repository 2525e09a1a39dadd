// README, "Usage": declaring a key, the subscript, optional keys.
import Defaults

extension Defaults.Keys {
    static let quality = Key<Double>("quality", default: 0.8)
    //            ^            ^         ^                ^
    //           Key          Type   UserDefaults name   Default value
}

func usage() {
    // Adapted: each value the README shows with `//=>` is printed.
    print(Defaults[.quality])
    //=> 0.8

    Defaults[.quality] = 0.5
    print(Defaults[.quality])
    //=> 0.5

    Defaults[.quality] += 0.1
    print(Defaults[.quality])
    //=> 0.6
}

extension Defaults.Keys {
    // Adapted: `fileprivate`: elsewhere in this module, `Defaults.Keys.isUnicornMode.name` would
    // find this static `name` instead of the key's own `name`.
    fileprivate static let name = Key<String?>("name")
}

func optionalKeys() {
    if let name = Defaults[.name] {
        print(name)
    }
    print(Defaults[.name] as Any)  // Adapted: shows that the default is nil.
}
