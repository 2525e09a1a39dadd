import CGtk
import DefaultsObservation
import Dispatch
import Foundation
import Synchronization

/// GLib's main loop as the place where a GTK program hears of its settings.
///
/// GTK's widgets belong to the thread that runs GLib's main loop, but a suite tells its observers
/// on the thread that wrote (any thread of the program) or, for a change made elsewhere (another
/// process, a hand edit, another machine), on a thread of its own. Call ``driveMainActor()`` once,
/// on the main thread, before the loop runs: from then on GLib's main loop runs the main actor's
/// work and `DispatchQueue.main`'s, so `@MainActor` code, `Task { @MainActor in … }` and the
/// observers this package adds (`observeOnMainLoop`) run on the loop's thread, in the order their
/// changes happened.
///
/// ```swift
/// gtk_init()
/// GLibMainLoop.driveMainActor()
/// let observation = Defaults.observeOnMainLoop(.fontSize) { change in
///     gtk_spin_button_set_value(spinButton, Double(change.newValue))     // on GTK's thread
/// }
/// ```
public enum GLibMainLoop {
    private static let attached = Atomic<Bool>(false)

    /// Makes GLib's default main context run the main actor's work (and `DispatchQueue.main`'s)
    /// each time it is iterated: by `g_application_run`, `g_main_loop_run` or
    /// `g_main_context_iteration` on the main thread.
    ///
    /// The Swift runtime puts the main actor's work on libdispatch's main queue, which on Linux
    /// runs only where something drives it: `dispatchMain()`, Foundation's `RunLoop`, or, after
    /// this call, GLib. It watches the queue's wake-up descriptor with a GLib source, as
    /// Foundation's run loop does, so the loop sleeps until there is work. Calling it again does
    /// nothing.
    ///
    /// Call it on the main thread, the one that runs GLib's main loop. A program whose `main` is
    /// `async` runs `dispatchMain()` instead of GLib's loop; a GTK program's `main` is synchronous
    /// and ends in `g_application_run` or a loop of `g_main_context_iteration`.
    public static func driveMainActor() {
        precondition(Thread.isMainThread, "GLibMainLoop.driveMainActor() must be called on the main thread")
        guard !attached.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = cgtk_attach_main_queue()
    }

    /// Whether ``driveMainActor()`` was called.
    public static var drivesMainActor: Bool { attached.load(ordering: .acquiring) }

    /// Runs `body` on the main loop's thread, after everything handed over before it.
    ///
    /// From any thread, the main loop's too: `body` never runs before this returns.
    public static func deliver(_ body: @escaping @MainActor @Sendable () -> Void) {
        DispatchQueue.main.async { MainActor.assumeIsolated { body() } }
    }
}

extension Defaults {
    /// Observes `key`, calling `handler` on GLib's main loop with each change, in order.
    ///
    /// As `Defaults.observe(_:options:handler:)`, but `handler` runs on the main loop's thread
    /// (see ``GLibMainLoop``), for a write on any thread and a change made elsewhere alike, after
    /// the write that made the change has returned. Writes kept from observers with
    /// `withoutPropagation` are not delivered. With `.initial`, the first call is also on the loop,
    /// and comes first.
    ///
    /// - Parameters:
    ///   - key: The key to observe.
    ///   - options: `[.initial]` (the default) also delivers the current value once.
    ///   - handler: Called on the main loop with each change.
    /// - Returns: The observation; nothing more is delivered once it is invalidated or released,
    ///   even a change already on its way.
    public static func observeOnMainLoop<Value: Serializable>(
        _ key: Key<Value>,
        options: ObservationOptions = [.initial],
        handler: @escaping @MainActor @Sendable (KeyChange<Value>) -> Void
    ) -> Observation {
        let current = CurrentObservation()
        let observation = observe(
            key,
            options: options,
            handler: { change in
                GLibMainLoop.deliver { if current.isActive { handler(change) } }
            }
        )
        return current.set(observation)
    }

    /// Observes `keys`, calling `handler` on GLib's main loop once per change of any of them, in
    /// order.
    ///
    /// As `Defaults.observe(keys:options:handler:)`, on the main loop's thread;
    /// see ``observeOnMainLoop(_:options:handler:)``.
    ///
    /// - Parameters:
    ///   - keys: The keys to observe.
    ///   - options: `[.initial]` (the default) also calls `handler` once at the start.
    ///   - handler: Called on the main loop after each change.
    /// - Returns: The observation.
    public static func observeOnMainLoop(
        keys: [_AnyKey],
        options: ObservationOptions = [.initial],
        handler: @escaping @MainActor @Sendable () -> Void
    ) -> Observation {
        let current = CurrentObservation()
        let observation = observe(
            keys: keys,
            options: options,
            handler: {
                GLibMainLoop.deliver { if current.isActive { handler() } }
            }
        )
        return current.set(observation)
    }

    /// Observes `keys`, calling `handler` on GLib's main loop once a burst of their changes has
    /// been quiet for `quietPeriod`, with the keys that changed.
    ///
    /// As `Defaults.observe(keys:debounce:clock:handler:)`, on the main loop's
    /// thread.
    ///
    /// - Parameters:
    ///   - keys: The keys to observe.
    ///   - quietPeriod: How long the keys must stay unchanged before `handler` runs.
    ///   - clock: The clock that measures it.
    ///   - handler: Called on the main loop with the keys that changed during the burst.
    /// - Returns: The observation.
    public static func observeOnMainLoop(
        keys: [_AnyKey],
        debounce quietPeriod: Duration,
        clock: any Clock<Duration> = ContinuousClock(),
        handler: @escaping @MainActor @Sendable (Set<_AnyKey>) -> Void
    ) -> Observation {
        let current = CurrentObservation()
        let observation = observe(
            keys: keys,
            debounce: quietPeriod,
            clock: clock,
            handler: { changed in
                GLibMainLoop.deliver { if current.isActive { handler(changed) } }
            }
        )
        return current.set(observation)
    }
}

/// The observation whose changes are on their way to the main loop, held weakly: a change handed
/// over before the observation stopped (invalidated, released, its owner gone) is dropped there.
private final class CurrentObservation: Sendable {
    private let observation = Mutex<WeakObservation>(WeakObservation())

    private struct WeakObservation {
        weak var value: Defaults.Observation?
    }

    var isActive: Bool { observation.withLock { $0.value?.isActive ?? false } }

    func set(_ value: Defaults.Observation) -> Defaults.Observation {
        observation.withLock { $0.value = value }
        return value
    }
}
