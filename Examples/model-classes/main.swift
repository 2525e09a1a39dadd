// model-classes: plain model classes with @Default reacting to each other's writes,
// withoutPropagation breaking a feedback loop, and subscriptions that go away with their owner.
//
//     swift run model-classes
import DefaultsObservation
import Foundation
import Synchronization

enum Example {
    static let suite = try! Defaults.Suite(name: "model-classes")
    /// A suite of its own for part 3, so its subscription count is only those.
    static let lifetimes = Defaults.Suite.inMemory()
}

extension Defaults.Keys {
    static let fontSize = Key<Int>("fontSize", default: 12, suite: Example.suite)
    static let zoom = Key<Int>("zoom", default: 100, suite: Example.suite)
    static let ticks = Key<Int>("ticks", default: 0, suite: Example.lifetimes)
    static let accent = Key<String>("accent", default: "blue", suite: Example.lifetimes)
}

/// An editor window's model: its font size is a setting shared by every window.
final class EditorModel {
    let name: String
    @Default(.fontSize) var fontSize
    private var observation: Defaults.Observation?

    init(name: String) {
        self.name = name
        observation = $fontSize.observe(options: []) { [name] change in
            print("  \(name) sees fontSize \(change.oldValue) -> \(change.newValue)")
        }
    }
}

Defaults.removeAll(suite: Example.suite)

print("1. Two model instances share a setting and react to each other's writes")
let left = EditorModel(name: "left")
let right = EditorModel(name: "right")
print("left writes fontSize = 14")
left.fontSize = 14
print("right writes fontSize = 16")
right.fontSize = 16
print("left reads \(left.fontSize), right reads \(right.fontSize)")

print("\n2. A feedback loop: an observer of zoom that writes zoom")
// Each call writes zoom again, which calls the observer again; the depth guard bounds it.
let depth = ManagedDepth()
var loop = Defaults.observe(.zoom, options: []) { change in
    guard depth.enter() < 5 else { return }
    print("  observer called with \(change.newValue), writes \(change.newValue + 10)")
    Defaults[.zoom] = change.newValue + 10
}
Defaults[.zoom] = 110
print("without withoutPropagation: \(depth.calls) calls (cut off by a guard), zoom = \(Defaults[.zoom])")
loop.invalidate()

depth.reset()
loop = Defaults.observe(.zoom, options: []) { change in
    depth.enter()
    print("  observer called with \(change.newValue), writes \(change.newValue + 10) without propagation")
    Defaults.withoutPropagation { Defaults[.zoom] = change.newValue + 10 }
}
Defaults[.zoom] = 200
print("with withoutPropagation: \(depth.calls) call, zoom = \(Defaults[.zoom])")
loop.invalidate()

print("\n3. Subscriptions tied to an owner go away with it")
final class Owner {}
do {
    var owners: [Owner] = []
    for _ in 0..<1000 {
        let owner = Owner()
        owners.append(owner)
        Defaults.observe(.ticks, options: []) { _ in }.tieToLifetime(of: owner)
    }
    print("subscriptions on ticks with 1000 live owners: \(Defaults.observerEntryCount(for: Example.lifetimes))")
}
Defaults[.ticks] += 1  // the next write to their key clears them out
print("after the owners are released and ticks is written: \(Defaults.observerEntryCount(for: Example.lifetimes))")

// A key that is never written: released owners' subscriptions are swept, never more than 1,024 left.
for _ in 0..<100_000 {
    let owner = Owner()
    Defaults.observe(.accent, options: []) { _ in }.tieToLifetime(of: owner)
}
print(
    "100000 owners of accent made and released, accent never written: \(Defaults.observerEntryCount(for: Example.lifetimes)) left"
)

/// Counts observer calls, from whichever thread they run on.
final class ManagedDepth: Sendable {
    private let count = Mutex(0)
    @discardableResult func enter() -> Int {
        count.withLock {
            $0 += 1
            return $0 - 1
        }
    }
    var calls: Int { count.withLock { $0 } }
    func reset() { count.withLock { $0 = 0 } }
}
