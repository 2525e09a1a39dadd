import Defaults
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
            // NB: no `withMutation` here: the store's change event reports it, exactly once.
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
/// Writes on several threads used to report at the same moment, and Observation's
/// `withObservationTracking` calls `onChange` from each report that arrives before its first one
/// cancels the round: one round got several calls, and a model that re-arms from `onChange` doubled
/// its rounds again and again (the soak saw gigabytes within a minute). Now a report that finds
/// another in progress leaves a mark and returns; the thread reporting reports once more when it
/// is done. No lock is held while reporting: `onChange` is user code, and may write the key again.
private final class MutationReporter: @unchecked Sendable {  // see `report`: a weak instance, a thread-safe registrar
    // The closure only hands a weakly held instance to ObservationRegistrar, which is thread-safe.
    private let body: () -> Void
    /// Whether a thread is reporting now, and whether another report arrived meanwhile.
    private let state = Lock<(reporting: Bool, pending: Bool)>((false, false))

    init(_ report: @escaping () -> Void) {
        self.body = report
    }

    /// Reports the mutation now, or has the thread reporting now report it once more.
    func report() {
        let reports = state.withLock { state -> Bool in
            guard !state.reporting else {
                state.pending = true
                return false
            }
            state.reporting = true
            return true
        }
        guard reports else { return }
        while true {
            body()
            let again = state.withLock { state -> Bool in
                guard state.pending else {
                    state.reporting = false
                    return false
                }
                state.pending = false
                return true
            }
            guard again else { return }
        }
    }
}
