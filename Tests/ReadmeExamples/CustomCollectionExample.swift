// README, "Custom `Collection` type", steps 1 to 3.
import Defaults

struct Bag<Element: Defaults.Serializable>: Collection {
    var items: [Element]

    var startIndex: Int { items.startIndex }
    var endIndex: Int { items.endIndex }

    mutating func insert(element: Element, at: Int) {
        items.insert(element, at: at)
    }

    func index(after index: Int) -> Int {
        items.index(after: index)
    }

    subscript(position: Int) -> Element {
        items[position]
    }
}

extension Bag: Defaults.CollectionSerializable {
    init(_ elements: [Element]) {
        self.items = elements
    }
}

extension Defaults.Keys {
    static let stringBag = Key<Bag<String>>("stringBag", default: Bag(["Hello", "World!"]))
}

func customCollection() {
    // Adapted: printed.
    print(Defaults[.stringBag][0])  //=> "Hello"
    print(Defaults[.stringBag][1])  //=> "World!"
}
