import Defaults
import Foundation
import Observation
import Synchronization

/// A property of an `@Observable` class that reads and writes a key, and that Observation sees
/// change whoever changes the key.
///
/// ```swift
/// @Observable final class SettingsViewModel {
///     @ObservationIgnored @ObservableDefault(.quality) var quality: Double
/// }
/// ```
///
/// `withObservationTracking { model.quality }` fires, and `Observations { model.quality }` yields,
/// for every change to the key: through this model, through another model, through
/// `Defaults[.quality]`. A transaction is one change. Writes made inside
/// ``Defaults/withoutPropagation(_:)-(()->Result)`` are not reported.
///
/// `@ObservationIgnored` is required: the `@Observable` macro turns every stored property into a
/// computed one backed by its own storage, and a property wrapper cannot sit on a computed property.
/// `@ObservationIgnored` keeps the macro's hands off, and this wrapper reports to Observation itself.
///
/// The model is not kept alive by its subscription, and when it goes away its subscription leaves
/// the store's registry.
///
/// Writes on several threads at once are reported one at a time, so a `withObservationTracking`
/// round is told once however many threads write (Observation cancels a round only after its
/// `onChange` returns, and calls it for every report that arrives before). A write's report is
/// made on the writing thread before the write returns; while `onChange` runs, a write of the key
/// on another thread waits for it. So `onChange` must not wait for another thread that may be
/// writing the key (hop with `async`, never `sync`). A change from outside the process never
/// waits: when a report is under way, the thread making it reports once more when it is done.
@propertyWrapper
public final class ObservableDefault<Value: Defaults.Serializable>: Sendable {
    /// The key this property reads and writes.
    public let key: Defaults.Key<Value>
    private let registrar = ObservationRegistrar()
    private let subscription = Lock<Defaults.Observation?>(nil)

    /// Creates the property for `key`.
    public init(_ key: Defaults.Key<Value>) {
        self.key = key
    }

    /// Not available: `@ObservableDefault` works only on properties of classes.
    @available(*, unavailable, message: "@ObservableDefault can only be used on properties of @Observable classes")
    public var wrappedValue: Value {
        get { fatalError("@ObservableDefault can only be used on properties of @Observable classes") }
        // swift-format-ignore: NoEmptyAccessor
        set { fatalError("@ObservableDefault can only be used on properties of @Observable classes") }
    }

    /// Reads and writes the key for the enclosing instance, reporting to Observation.
    public static subscript<Enclosing: AnyObject & Observable>(
        _enclosingInstance instance: Enclosing,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Enclosing, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Enclosing, ObservableDefault<Value>>
    ) -> Value {
        get {
            let wrapper = instance[keyPath: storageKeyPath]
            wrapper.subscribe(instance, keyPath: wrappedKeyPath)
            wrapper.registrar.access(instance, keyPath: wrappedKeyPath)
            return wrapper.key.suite[wrapper.key]
        }
        set {
            let wrapper = instance[keyPath: storageKeyPath]
            wrapper.subscribe(instance, keyPath: wrappedKeyPath)
            // No `withMutation` here: the store's change event reports it, exactly once.
            wrapper.key.suite[wrapper.key] = newValue
        }
    }

    /// Subscribes to the key on first use, holding `instance` weakly.
    private func subscribe<Enclosing: AnyObject & Observable>(
        _ instance: Enclosing,
        keyPath: ReferenceWritableKeyPath<Enclosing, Value>
    ) {
        subscription.withLock { subscription in
            guard subscription == nil else { return }
            let registrar = registrar
            let reporter = MutationReporter { [weak instance] in
                guard let instance else { return }
                registrar.withMutation(of: instance, keyPath: keyPath) {}
            }
            subscription = Defaults.observe(key, options: []) { _ in reporter.report() }
        }
    }
}

/// Reports a mutation of the enclosing instance's property, which it holds weakly, one report at a
/// time.
///
/// Observation's `withObservationTracking` cancels a round after its `onChange` returns, and calls
/// `onChange` from every report that arrives before: reports from writes on several threads at
/// once told one round several times, and a model that re-arms from `onChange` doubled its rounds
/// again and again (the soak saw gigabytes within a minute).
///
/// So reports go through one at a time. A write's report waits for one under way on another thread
/// and is then made on the writing thread, so its observers have run when the write returns. A
/// report on the thread already reporting (an `onChange` that writes the key) is made at once, as
/// Observation makes it for any property. A report of a change from outside the process, which
/// nothing waits for, never waits: it leaves a mark, and the thread reporting reports once more.
/// (It must not wait: an `onChange` that opens an exclusive transaction waits for the outside
/// changes queued before it to be delivered.)
private final class MutationReporter: @unchecked Sendable {  // state under `condition`; see `body`
    // Sendable in effect: it only hands a weakly held instance to ObservationRegistrar, which is thread-safe.
    private let body: () -> Void
    private let condition = NSCondition()
    /// The thread reporting now; guarded by `condition`.
    private var reporter: pthread_t?
    /// Whether a report of an outside change arrived while one was under way; guarded by `condition`.
    private var pending = false

    init(_ report: @escaping () -> Void) {
        self.body = report
    }

    /// Reports the mutation: on this thread, once no other thread is reporting, or, for a change
    /// from outside the process while another thread reports, through that thread.
    func report() {
        let thread = pthread_self()
        condition.lock()
        if let reporter {
            if pthread_equal(reporter, thread) != 0 {
                condition.unlock()
                body()
                return
            }
            if Defaults.isDeliveringOutsideChanges {
                pending = true
                condition.unlock()
                return
            }
            while self.reporter != nil { condition.wait() }
        }
        reporter = thread
        repeat {
            pending = false
            condition.unlock()
            body()
            condition.lock()
        } while pending
        reporter = nil
        condition.broadcast()
        condition.unlock()
    }
}
