import Defaults

extension Defaults {
    /// Calls `handler` with the old and new value each time `key` changes.
    ///
    /// For a write in this process, the handler runs synchronously on the thread that wrote, after
    /// the write is committed and outside every lock, before the write returns; it may read and
    /// write the store. A change made by another process or by editing the file is delivered on a
    /// serial queue of the file's own, once it has been read and applied, in the order such changes
    /// were read (see "Sharing settings between processes" in the `Defaults` documentation). A
    /// write that leaves the stored value as it was is not a change, and writes made inside
    /// ``Defaults/withoutPropagation(_:)-(()->Result)`` are not delivered.
    ///
    /// ```swift
    /// let observation = Defaults.observe(.quality) { change in
    ///     print(change.oldValue, "→", change.newValue)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key to watch.
    ///   - options: `[.initial]` (the default) calls `handler` once with the current value before
    ///     this method returns; `[]` waits for the first change.
    ///   - handler: Called with each change.
    /// - Returns: The observation; delivery stops when it is invalidated or released.
    @inlinable
    public static func observe<Value: Serializable>(
        _ key: Key<Value>,
        options: ObservationOptions = [.initial],
        handler: @escaping @Sendable (KeyChange<Value>) -> Void
    ) -> Observation {
        // NB: inlinable, so this is specialized for the key's type where `observe` is called: in
        // unspecialized code, making each `KeyChange<Value>` is a runtime metadata lookup
        // (`defaults-profile write-1`). Called with the parts of each change of the key, so a
        // write of it makes no event. Both handlers capture one object holding the key and the
        // handler, which is then their context: each capturing both made one context apiece.
        let observed = ObservedKey(key, handler)
        let keyHandler: Subscriber.KeyHandler = { old, new, oldDecoded, newDecoded in
            let key = observed.key
            observed.handler(
                Defaults.KeyChange(
                    oldValue: key.value(from: old, decoded: oldDecoded),
                    newValue: key.value(from: new, decoded: newDecoded),
                    // Also a key of another declaration under a secret's name, which reads it.
                    isSecret: key.isSecret || key.suite.isSecret(named: key.name)
                )
            )
        }
        // A value with no references is also taken as bytes, when a write of it stays in place.
        var valueHandler: Subscriber.ValueHandler?
        if _isPOD(Value.self) {
            valueHandler = { old, new in
                observed.handler(
                    Defaults.KeyChange(
                        oldValue: old.load(as: Value.self),
                        newValue: new.load(as: Value.self),
                        // A write under a secret's name never stays in place (it is refused), so
                        // only the key's own declaration can say so here.
                        isSecret: observed.key.isSecret
                    )
                )
            }
        }
        let subscriber = Subscriber(
            key: key,
            keyHandler: keyHandler,
            valueType: ObjectIdentifier(Value.self),
            valueHandler: valueHandler
        )
        let observation = Observation(subscriber: subscriber)
        if options.contains(.initial) {
            let current = key.suite[key]
            handler(
                KeyChange(
                    oldValue: current,
                    newValue: current,
                    isSecret: key.isSecret || key.suite.isSecret(named: key.name)
                )
            )
        }
        return observation
    }

    /// Calls `handler` once for each committed write or transaction that changes any of `keys`.
    ///
    /// A transaction that changes three of the keys is one call. Delivery follows the same rules as
    /// ``observe(_:options:handler:)``.
    ///
    /// - Parameters:
    ///   - keys: The keys to watch; they may belong to different suites.
    ///   - options: `[.initial]` (the default) calls `handler` once before this method returns.
    ///   - handler: Called after each change.
    /// - Returns: The observation; delivery stops when it is invalidated or released.
    public static func observe(
        keys: _AnyKey...,
        options: ObservationOptions = [.initial],
        handler: @escaping @Sendable () -> Void
    ) -> Observation {
        observe(keys: keys, options: options, handler: handler)
    }

    /// Calls `handler` once for each committed write or transaction that changes any of `keys`.
    ///
    /// - Parameters:
    ///   - keys: The keys to watch; they may belong to different suites.
    ///   - options: `[.initial]` (the default) calls `handler` once before this method returns.
    ///   - handler: Called after each change.
    /// - Returns: The observation; delivery stops when it is invalidated or released.
    public static func observe(
        keys: [_AnyKey],
        options: ObservationOptions = [.initial],
        handler: @escaping @Sendable () -> Void
    ) -> Observation {
        let observation = Observation(subscriber: Subscriber(keys: keys) { _ in handler() })
        if options.contains(.initial) { handler() }
        return observation
    }
}

/// A key and the handler of one observation of it, which the observation's handlers share.
@usableFromInline
final class ObservedKey<Value: Defaults.Serializable>: Sendable {
    @usableFromInline let key: Defaults.Key<Value>
    @usableFromInline let handler: @Sendable (Defaults.KeyChange<Value>) -> Void

    @usableFromInline
    init(_ key: Defaults.Key<Value>, _ handler: @escaping @Sendable (Defaults.KeyChange<Value>) -> Void) {
        self.key = key
        self.handler = handler
    }
}
