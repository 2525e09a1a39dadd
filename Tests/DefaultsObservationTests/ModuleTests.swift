import DefaultsObservation
import Foundation
import Testing

@Suite struct ModuleTests {
    @Test func reexportsTheCoreModule() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("count", default: 1, suite: suite)
        Defaults[key] = 2
        #expect(Defaults[key] == 2)
    }
}
