import Defaults

extension Defaults {
    /// A live subscription made by `Defaults.observe`; it stops when invalidated or released.
    ///
    /// Keep a reference for as long as you want callbacks, or tie it to an owner's lifetime:
    ///
    /// ```swift
    /// Defaults.observe(.quality, options: []) { [weak self] change in
    ///     self?.quality = change.newValue
    /// }.tieToLifetime(of: self)
    /// ```
    public final class Observation: Sendable {
        let subscriber: Subscriber

        @usableFromInline
        init(subscriber: Subscriber) {
            self.subscriber = subscriber
            ObserverRegistry.shared.add(subscriber)
        }

        deinit {
            invalidate()
        }

        /// Stops delivery at once; calling it again, from any thread, does nothing.
        ///
        /// A callback already running on another thread finishes; no new one starts.
        public func invalidate() {
            stop(isInTiedTable: true)
        }

        /// Whether it still delivers: false once invalidated, released, or its tied owner is gone
        /// (the tie is looked at when one of its keys changes, or at a sweep).
        ///
        /// For code that hands changes on to be run later (on a GUI toolkit's main loop, say):
        /// what it handed on before the observation stopped can check this and be dropped.
        public var isActive: Bool { subscriber.isActive }

        /// Stops delivery; `isInTiedTable` false when the registry's table of tied subscribers is
        /// known not to hold the subscriber (a sweep took it out), so it is not searched again.
        func stop(isInTiedTable: Bool) {
            guard subscriber.deactivate() else { return }
            ObserverRegistry.shared.remove(subscriber, isInTiedTable: isInTiedTable)
            // Held in a local so the tie's reference to `self` is dropped after the lock.
            let tie = subscriber.setTie(nil)
            _ = tie
        }

        /// Keeps this observation alive exactly as long as `owner` lives.
        ///
        /// `owner` is held weakly. Once it is gone, no callback is made, and the observation is
        /// removed from the store, with what its handler captured, the next time one of its keys
        /// is written or at the latest at the next sweep: a tie that makes the store hold more than
        /// 1,024 tied observations (more while more are alive) sweeps away those whose owner is
        /// gone, so they never pile up, even for keys that are never written. See
        /// <doc:SubscriptionLifetimes> for the exact bound.
        ///
        /// - Parameter owner: The object whose lifetime bounds the observation.
        /// - Returns: This observation.
        @discardableResult
        public func tieToLifetime(of owner: AnyObject) -> Self {
            let old = subscriber.setTie(Subscriber.LifetimeTie(owner: owner, observation: self))
            _ = old
            ObserverRegistry.shared.noteTie(of: subscriber)
            // An observation already stopped (or stopping on another thread) keeps no tie: the
            // tie would hold it, and it its subscriber, for good. Looked at after the tie is set, so
            // a stop either sees the tie and drops it, or is seen here.
            if !subscriber.isActive {
                let dropped = subscriber.setTie(nil)
                _ = dropped
            }
            return self
        }

        /// Removes the tie made by ``tieToLifetime(of:)`` without stopping the observation.
        ///
        /// From then on the observation lives as long as someone holds a reference to it.
        public func removeLifetimeTie() {
            let old = subscriber.setTie(nil)
            _ = old
        }
    }

    /// What an observation can be asked to do besides reporting changes.
    public enum ObservationOption: Hashable, Sendable {
        /// Call the handler once with the current value before `observe` returns.
        case initial
    }

    /// A set of ``ObservationOption`` values; `[.initial]` is the default of `observe`.
    public typealias ObservationOptions = Set<ObservationOption>
}
