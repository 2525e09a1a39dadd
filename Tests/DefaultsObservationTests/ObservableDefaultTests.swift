import DefaultsObservation
import DefaultsTestSupport
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

/// Writes on several threads at once, and reports made while `onChange` runs.
@Suite struct ObservableDefaultConcurrentWriteTests {
    @Test func aRoundOfTrackingIsToldOnceWhenSeveralThreadsWriteAtOnce() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Double>("quality", default: 0, suite: suite)
        let model = SettingsViewModel(key: key)
        _ = model.quality
        var extraCalls = 0
        for round in 0..<50 {
            let calls = Atomic<Int>(0)
            withObservationTracking {
                _ = model.quality
            } onChange: {
                calls.add(1, ordering: .relaxed)
                // NB: a slow onChange, so the other writers' reports arrive while it runs, as they
                // do on a loaded machine; it waits for nothing.
                usleep(2_000)
            }
            // Four writers at the same moment, each a change, each reported from its own thread.
            DispatchQueue.concurrentPerform(iterations: 4) { writer in
                suite[key] = Double(round * 4 + writer + 1)
            }
            let told = calls.load(ordering: .relaxed)
            #expect(told >= 1, "round \(round): onChange was not called")
            extraCalls += max(0, told - 1)
        }
        #expect(extraCalls == 0, "onChange was called \(extraCalls) extra times in 50 rounds")
    }

    @Test func anOnChangeThatWritesTheKeyDoesNotWaitForItself() {
        let suite = Defaults.Suite.inMemory()
        let key = Defaults.Key<Int>("fontSize", default: 0, suite: suite)
        let model = EditorSettingsModel(key: key)
        let calls = Atomic<Int>(0)
        withObservationTracking {
            _ = model.fontSize
        } onChange: {
            // The first call writes the key again, on this thread, inside the report; Observation
            // tells the round of it once more, as it would for any property.
            if calls.add(1, ordering: .relaxed).newValue == 1 { model.fontSize = 2 }
        }
        model.fontSize = 1
        #expect(calls.load(ordering: .relaxed) == 2)
        #expect(model.fontSize == 2)
    }

    /// An `onChange` that opens an exclusive transaction waits for the outside changes queued before
    /// it to be delivered; their report must not wait for the `onChange`.
    @Test func anOutsideChangeReportedWhileOnChangeRunsIsReportedAfterItWithoutWaiting() throws {
        try withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("settings.json")
            try Data(#"{"fontSize": 0}"#.utf8).write(to: file)
            let suite = Defaults.Suite(fileURL: file)
            let key = Defaults.Key<Int>("fontSize", default: 0, suite: suite)
            let secondRound = Atomic<Int>(0)
            let finalValue = Atomic<Int>(0)
            let finished = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                let model = EditorSettingsModel(key: key)
                withObservationTracking {
                    _ = model.fontSize
                } onChange: {
                    withObservationTracking {
                        _ = model.fontSize
                    } onChange: {
                        secondRound.add(1, ordering: .relaxed)
                    }
                    // This write reaches the file; someone then edits the file, and the exclusive
                    // transaction takes the edit in and waits until it has been delivered, which
                    // reports to the model.
                    try? suite.synchronize()
                    try? Data(#"{"fontSize": 7}"#.utf8).write(to: file, options: .atomic)
                    _ = try? suite.exclusiveTransaction {}
                }
                model.fontSize = 1
                finalValue.store(model.fontSize, ordering: .relaxed)
                finished.signal()
            }
            // NB: a deadline only so a regression fails instead of hanging the run.
            let result = finished.wait(timeout: .now() + 120)
            #expect(result == .success, "the write through the model did not return")
            guard result == .success else { return }
            // The outside change, reported while the first round's onChange ran, reached the round
            // armed there, once, before the write returned.
            #expect(secondRound.load(ordering: .relaxed) == 1)
            #expect(finalValue.load(ordering: .relaxed) == 7)
        }
    }
}
