import Defaults

extension Defaults {
    /// The values of `key` as they change, as an async sequence.
    ///
    /// The stream keeps only the newest value for a consumer that falls behind. When the consuming
    /// task ends or is cancelled, the subscription is removed.
    ///
    /// ```swift
    /// for await quality in Defaults.updates(.quality) {
    ///     print(quality)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key to watch.
    ///   - initial: Whether the stream starts with the current value (the default).
    /// - Returns: A stream of the key's values.
    public static func updates<Value: Serializable>(
        _ key: Key<Value>,
        initial: Bool = true
    ) -> AsyncStream<Value> {
        // Each element is read when the change is delivered rather than taken from the
        // event: events of concurrent writers may arrive out of order, the stored value may not.
        stream(watching: [key], initial: initial, current: { key.suite[key] }, element: { _ in key.suite[key] })
    }

    /// Fresh values of several keys, as a tuple, each time any of them changes.
    ///
    /// A transaction changing several of the keys yields one tuple.
    ///
    /// ```swift
    /// for await (quality, name) in Defaults.updates(.quality, .name) { … }
    /// ```
    ///
    /// - Parameters:
    ///   - keys: The keys to watch.
    ///   - initial: Whether the stream starts with one tuple of the current values (the default).
    /// - Returns: A stream of tuples of the keys' values.
    public static func updates<each Value: Serializable>(
        _ keys: repeat Key<each Value>,
        initial: Bool = true
    ) -> AsyncStream<(repeat each Value)> {
        var list: [_AnyKey] = []
        for key in repeat each keys { list.append(key) }
        let read: @Sendable () -> (repeat each Value) = { (repeat (each keys).suite[each keys]) }
        return stream(watching: list, initial: initial, current: read, element: { _ in read() })
    }

    /// An event each time any of `keys` changes.
    ///
    /// A transaction changing several of the keys is one event.
    ///
    /// - Parameters:
    ///   - keys: The keys to watch.
    ///   - initial: Whether the stream starts with one event (the default).
    /// - Returns: A stream of events.
    public static func updates(_ keys: [_AnyKey], initial: Bool = true) -> AsyncStream<Void> {
        stream(watching: keys, initial: initial, current: {}, element: { _ in () })
    }

    private static func stream<Element: Sendable>(
        watching keys: [_AnyKey],
        initial: Bool,
        current: @escaping @Sendable () -> Element,
        element: @escaping @Sendable (SuiteChange) -> Element
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(1))
        let observation = Observation(
            subscriber: Subscriber(keys: keys) { change in
                continuation.yield(element(change))
            }
        )
        if initial { continuation.yield(current()) }
        continuation.onTermination = { _ in observation.invalidate() }
        return stream
    }
}
