// README, "Custom `SetAlgebra` type", steps 1 to 3.
import Defaults

struct SetBag<Element: Defaults.Serializable & Hashable>: SetAlgebra {
    var store = Set<Element>()

    init() {}

    init(_ store: Set<Element>) {
        self.store = store
    }

    func contains(_ member: Element) -> Bool {
        store.contains(member)
    }

    func union(_ other: SetBag) -> SetBag {
        SetBag(store.union(other.store))
    }

    func intersection(_ other: SetBag) -> SetBag {
        var setBag = SetBag()
        setBag.store = store.intersection(other.store)
        return setBag
    }

    func symmetricDifference(_ other: SetBag) -> SetBag {
        var setBag = SetBag()
        setBag.store = store.symmetricDifference(other.store)
        return setBag
    }

    @discardableResult
    mutating func insert(_ newMember: Element) -> (inserted: Bool, memberAfterInsert: Element) {
        store.insert(newMember)
    }

    mutating func remove(_ member: Element) -> Element? {
        store.remove(member)
    }

    mutating func update(with newMember: Element) -> Element? {
        store.update(with: newMember)
    }

    mutating func formUnion(_ other: SetBag) {
        store.formUnion(other.store)
    }

    mutating func formSymmetricDifference(_ other: SetBag) {
        store.formSymmetricDifference(other.store)
    }

    mutating func formIntersection(_ other: SetBag) {
        store.formIntersection(other.store)
    }
}

extension SetBag: Defaults.SetAlgebraSerializable {
    func toArray() -> [Element] {
        Array(store)
    }
}

extension Defaults.Keys {
    static let stringSet = Key<SetBag<String>>("stringSet", default: SetBag(["Hello", "World!"]))
}

func customSetAlgebra() {
    // Adapted: printed.
    print(Defaults[.stringSet].contains("Hello"))  //=> true
    print(Defaults[.stringSet].contains("World!"))  //=> true
}
