import DefaultsObservation
import Foundation
import Observation
import Synchronization
import Testing

@Observable
final class SettingsViewModel {
    @ObservationIgnored @ObservableDefault<Double> var quality: Double
    var unrelated = 0

    init(key: Defaults.Key<Double>) {
        _quality = ObservableDefault(key)
    }
}

@MainActor @Observable
final class MainActorViewModel {
    @ObservationIgnored @ObservableDefault<Double> var quality: Double

    init(key: Defaults.Key<Double>) {
        _quality = ObservableDefault(key)
    }
}

/// Counts the deinit of the models it is handed, to prove they are not kept alive.
final class DeinitCounter: Sendable {
    let count = Atomic<Int>(0)
}

@Observable
final class CountedViewModel {
    @ObservationIgnored @ObservableDefault<Double> var quality: Double
    @ObservationIgnored let counter: DeinitCounter

    init(key: Defaults.Key<Double>, counter: DeinitCounter) {
        _quality = ObservableDefault(key)
        self.counter = counter
    }

    deinit { counter.count.add(1, ordering: .relaxed) }
}

/// Arms one `withObservationTracking` round on `model.quality`; the counter counts `onChange` calls.
private func trackQuality(of model: SettingsViewModel) -> Recorder<Void> {
    let fired = Recorder<Void>()
    withObservationTracking {
        _ = model.quality
    } onChange: {
        fired.append(())
    }
    return fired
}

@Suite struct ObservableDefaultTests {
    let suite = Defaults.Suite.inMemory()
    var key: Defaults.Key<Double> { Defaults.Key<Double>("quality", default: 0.8, suite: suite) }

    @Test func readsAndWritesTheKey() {
        let model = SettingsViewModel(key: key)
        #expect(model.quality == 0.8)
        model.quality = 0.5
        #expect(Defaults[key] == 0.5)
        Defaults[key] = 0.25
        #expect(model.quality == 0.25)
    }

    @Test func trackingFiresForAWriteThroughTheModel() {
        let model = SettingsViewModel(key: key)
        let fired = trackQuality(of: model)
        model.quality = 0.1
        #expect(fired.count == 1)
    }

    @Test func trackingFiresForAWriteThroughDefaults() {
        let model = SettingsViewModel(key: key)
        let fired = trackQuality(of: model)
        Defaults[key] = 0.3
        #expect(fired.count == 1)
    }

    @Test func trackingFiresForAWriteThroughAnotherModel() {
        let model = SettingsViewModel(key: key)
        let other = SettingsViewModel(key: key)
        let fired = trackQuality(of: model)
        other.quality = 0.9
        #expect(fired.count == 1)
        #expect(model.quality == 0.9)
    }

    @Test func trackingDoesNotFireForAnUnchangedValueOrAnotherKey() {
        let model = SettingsViewModel(key: key)
        Defaults[key] = 0.4
        _ = model.quality
        let fired = trackQuality(of: model)
        Defaults[key] = 0.4
        Defaults[Defaults.Key<Int>("other", default: 0, suite: suite)] = 1
        #expect(fired.count == 0)
    }

    @Test func aWriteInsideWithoutPropagationIsNotReported() {
        let model = SettingsViewModel(key: key)
        let fired = trackQuality(of: model)
        Defaults.withoutPropagation { model.quality = 0.2 }
        #expect(fired.count == 0)
        #expect(Defaults[key] == 0.2)
    }

    @MainActor @Test func observationsYieldsTheNewValueAfterEachChangeIncludingATransaction() async {
        let model = MainActorViewModel(key: key)
        let width = Defaults.Key<Int>("width", default: 0, suite: suite)
        let values = Observations { model.quality }
        var iterator = values.makeAsyncIterator()
        #expect(await iterator.next() == 0.8)
        suite.transaction {
            Defaults[key] = 0.1
            Defaults[width] = 10
            Defaults[key] = 0.2
        }
        #expect(await iterator.next() == 0.2)
        Defaults[key] = 0.3
        #expect(await iterator.next() == 0.3)
    }

    @Test func aModelIsNotKeptAliveAndLeavesNothingInTheRegistry() {
        let counter = DeinitCounter()
        do {
            let model = CountedViewModel(key: key, counter: counter)
            _ = model.quality
            #expect(Defaults.observerEntryCount(for: suite) == 1)
        }
        #expect(counter.count.load(ordering: .relaxed) == 1)
        #expect(Defaults.observerEntryCount(for: suite) == 0)
        Defaults[key] = 0.6
        #expect(Defaults.observerEntryCount(for: suite) == 0)
    }
}
