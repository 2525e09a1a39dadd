import Dispatch
import Foundation

extension Store {
    /// Makes memory hold `values` (`nil`: removed) from outside, and reports the keys that changed.
    ///
    /// Keys changed here and not committed yet keep their values; the others that changed for
    /// reads make one external change (those someone can be told of: see ``take(_:into:dropping:)``).
    /// With `isWhole`, `values` is everything stored, and keys it lacks are removed (but for those
    /// in `kept`), and its `revision` is taken whatever it is; a report of some keys at a
    /// `revision` no newer than the one memory holds is dropped. The caller keeps reports in order
    /// (``receive(_:)``), so events leave in the order they were applied.
    func absorbOutside(
        _ values: [String: JSONValue?],
        isWhole: Bool,
        revision: UInt64?,
        leaving kept: Set<String> = []
    ) {
        // Everything taken out of memory leaves the lock in `dropped`, and is released after it:
        // an old decoded value may be an instance of a class of the user's, whose `deinit` is user
        // code, and a change nobody is told of is not in the event that would carry it out.
        // Checked before the lock: decoding runs the types' bridges, user code. What was
        // decoded becomes a key's decoded value, or leaves with what is dropped.
        var found = refusedChanges(in: values)
        // Out here, not in the closure: each change in it holds its key's observers, and the last
        // reference to an observer that stopped meanwhile may be here. Its release can release a
        // suite, which commits (taking the gate the caller holds), so it happens on the delivery
        // queue with what is dropped.
        var absorbed = State.Absorbed(dropped: Array(found.decoded.values) + Array(found.lastGood.values))
        let (changes, suiteObservers) = state.withLock { state in
            state.absorb(values, isWhole: isWhole, revision: revision, leaving: kept, found: found, into: &absorbed)
        }
        // Sent now, not when found: memory holds the refused value, so a handler that reads the
        // stored value finds the one it is told of (a CI run under ASan saw the old one).
        for report in found.reports { reportInBackground(report) }
        let observed = absorbed.listed.compactMap(\.change)
        let seen = absorbed.listed.reduce(absorbed.plainChanges) { $0 + ($1.isSeen ? 1 : 0) }
        // Taken out, so nothing here keeps what leaves memory alive (see below).
        let dropped = absorbed.dropped
        absorbed = State.Absorbed(dropped: [])
        if seen > 0 { noteActivity(.changedElsewhere(keys: seen)) }
        // What was decoded is released with `dropped`, on the delivery queue, not here.
        found = RefusedChanges()
        // Released on the delivery queue, before the event: the caller holds the store's gate
        // (and may hold its commit lock), and a `deinit` of the user's may synchronize.
        // Moved, not copied: a copy left here would keep the values alive until this returns,
        // on this thread, racing the delivery.
        deliverExternally(
            consume changes,
            suiteObservers: consume suiteObservers,
            releasing: consume dropped,
            and: consume observed
        )
        // A former name changed: the keys read through it follow (a rolling upgrade).
        if hasMigrationLayer.load(ordering: .acquiring), changesMigrationSources(values.keys, isWhole: isWhole) {
            refreshMigrationLayer()
        }
    }

    /// Makes the system file at `index` bring `layer` now, and tells the keys whose reads change
    /// as one external change (``SystemFiles`` calls it).
    func replaceSystemLayer(_ index: Int, with layer: SystemLayers.Layer) {
        tell(state.withLock { $0.replaceSystemLayer(index, with: layer) })
    }
}
