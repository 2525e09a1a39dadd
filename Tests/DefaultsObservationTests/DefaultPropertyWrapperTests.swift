import Foundation
import DefaultsObservation
import Synchronization
import Testing

final class PlayerModel {
    @Default<Double> var volume: Double

    init(key: Defaults.Key<Double>) {
        _volume = Default(key)
    }

    func restoreVolume() {
        _volume.reset()
    }

    /// The default, as sindresorhus/Defaults' users read it: on the wrapper itself.
    var volumeDefault: Double { _volume.defaultValue }
}

struct PlayerSettings {
    @Default<Double> var volume: Double
}

@Suite struct DefaultPropertyWrapperTests {
    let suite = Defaults.Suite.inMemory()
    var volume: Defaults.Key<Double> { .init("volume", default: 0.5, suite: suite) }

    @Test func twoInstancesSeeEachOthersWrites() {
        let first = PlayerModel(key: volume)
        let second = PlayerModel(key: volume)
        first.volume = 0.9
        #expect(second.volume == 0.9)
        #expect(Defaults[volume] == 0.9)
    }

    @Test func worksInAStructWithoutMutating() {
        let settings = PlayerSettings(volume: Default(volume))
        settings.volume = 0.1
        #expect(Defaults[volume] == 0.1)
    }

    @Test func theProjectedValueOffersResetIsDefaultValueAndTheKey() {
        let model = PlayerModel(key: volume)
        #expect(model.$volume.isDefaultValue)
        model.volume = 0.7
        #expect(!model.$volume.isDefaultValue)
        model.$volume.reset()
        #expect(model.volume == 0.5)
        model.volume = 0.7
        model.restoreVolume()
        #expect(model.$volume.isDefaultValue)
        #expect(model.$volume.key == volume)
    }

    @Test func theWrapperSaysTheKeysDefaultValueAsSindresorhusDefaultsDoes() {
        let model = PlayerModel(key: volume)
        model.volume = 0.9
        #expect(model.volumeDefault == 0.5)
        #expect(model.$volume.defaultValue == 0.5)
        let counter = Mutex(0)
        let dynamic = Defaults.Key<Int>("dynamic", suite: suite) {
            counter.withLock {
                $0 += 1
                return $0
            }
        }
        let wrapper = Default(dynamic)
        #expect(wrapper.defaultValue == 1)
        #expect(wrapper.defaultValue == 2)  // a computed default runs on each access
    }

    @Test func removeAllOnAUserDefaultsTellsObserversOfItsKeys() throws {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("DefaultsRemoveAll-\(UUID().uuidString)").path
        let userDefaults = try #require(UserDefaults(suiteName: path))
        // NB: written before the file goes: any UserDefaults that synchronizes writes every one.
        defer {
            userDefaults.synchronize()
            try? FileManager.default.removeItem(atPath: path + ".plist")
        }
        let count = Defaults.Key<Int>("count", default: 0, suite: userDefaults)
        Defaults[count] = 3
        let seen = Recorder<Int>()
        let observation = Defaults.observe(count, options: []) { seen.append($0.newValue) }
        userDefaults.removeAll()
        #expect(seen.elements == [0])
        #expect(Defaults[count] == 0)
        observation.invalidate()
    }

    @Test func theProjectedValueObservesAndStreams() async {
        let model = PlayerModel(key: volume)
        let seen = Recorder<Double>()
        let observation = model.$volume.observe { seen.append($0.newValue) }
        var updates = model.$volume.updates(initial: false).makeAsyncIterator()
        let other = PlayerModel(key: volume)
        other.volume = 0.2
        #expect(seen.elements == [0.5, 0.2])
        #expect(await updates.next() == 0.2)
        observation.invalidate()
    }

    @Test func withoutPropagationSilencesItsObservers() {
        let model = PlayerModel(key: volume)
        let calls = Atomic<Int>(0)
        let observation = model.$volume.observe(options: []) { _ in calls.add(1, ordering: .relaxed) }
        Defaults.withoutPropagation { model.volume = 0.3 }
        #expect(calls.load(ordering: .relaxed) == 0)
        #expect(model.volume == 0.3)
        observation.invalidate()
    }
}
