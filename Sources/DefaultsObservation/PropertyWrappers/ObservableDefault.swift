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

/// Reports a mutation of the enclosing instance's property, which it holds weakly.
private final class MutationReporter: @unchecked Sendable {  // see `report`: a weak instance, a thread-safe registrar
    // The closure only hands a weakly held instance to ObservationRegistrar, which is thread-safe.
    let report: () -> Void

    init(_ report: @escaping () -> Void) {
        self.report = report
    }
}
