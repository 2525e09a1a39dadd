import Defaults

/// The subscribers of one key of a suite's state, or of all its keys, when there are two or more.
///
/// It hangs on the key (or the state) as its observer slot, so a write of the key calls it
/// directly. Its members change under the lock of the state it hangs on (and its own); a delivery
/// takes its own alone.
final class Bucket: Defaults.ObserverSlot {
    private let members: Lock<Members>

    /// The subscribers by identity, and the array of them a delivery reads.
    private struct Members {
        var byIdentity: [ObjectIdentifier: Subscriber]
        /// The subscribers in an array, made again by the first delivery after they changed.
        ///
        /// Kept apart from the table, so an observer that comes and goes costs one insert
        /// and one removal, and a key written often reads a ready array.
        var list: [Subscriber]?

        /// The subscribers in an array.
        mutating func array() -> [Subscriber] {
            if let list { return list }
            let made = Array(byIdentity.values)
            list = made
            return made
        }
    }

    /// What hangs on the key after a removal.
    enum AfterRemoval {
        /// The bucket stays.
        case unchanged
        /// One subscriber is left: it hangs on the key alone, for a delivery that takes no lock.
        case hang(Subscriber)
        /// No subscriber is left: nothing hangs on the key.
        case empty
    }

    /// A bucket of two subscribers.
    init(_ first: Subscriber, _ second: Subscriber) {
        members = Lock(
            Members(byIdentity: [ObjectIdentifier(first): first, ObjectIdentifier(second): second], list: nil)
        )
    }

    /// The number of subscribers.
    var count: Int { members.withLock { $0.byIdentity.count } }

    func insert(_ subscriber: Subscriber) {
        members.withLock { members in
            guard members.byIdentity.updateValue(subscriber, forKey: ObjectIdentifier(subscriber)) == nil else {
                return
            }
            members.list = nil
        }
    }

    /// Removes `subscriber` when more than `minimum` subscribers stay; whether it did.
    func remove(_ subscriber: Subscriber, keepingMoreThan minimum: Int) -> Bool {
        members.withLock { members in
            guard members.byIdentity.count > minimum + 1,
                members.byIdentity.removeValue(forKey: ObjectIdentifier(subscriber)) != nil
            else { return false }
            members.list = nil
            return true
        }
    }

    /// Removes `subscriber`; returns what is to hang on the key after it.
    func remove(_ subscriber: Subscriber) -> AfterRemoval {
        members.withLock { members in
            guard members.byIdentity.removeValue(forKey: ObjectIdentifier(subscriber)) != nil else {
                return .unchanged
            }
            members.list = nil
            switch members.byIdentity.count {
            case 0: return .empty
            case 1: return .hang(members.byIdentity.first!.value)
            default: return .unchanged
            }
        }
    }

    /// Calls `body` with each subscriber, under the bucket's lock.
    func forEachMember(_ body: (Subscriber) -> Void) {
        members.withLock { members in
            for subscriber in members.byIdentity.values { body(subscriber) }
        }
    }

    func deliverChange(
        in suite: Defaults.Suite,
        named name: String,
        old: JSONValue?,
        new: JSONValue?,
        oldDecoded: Defaults.Suite.CacheEntry?,
        newDecoded: Defaults.Suite.CacheEntry?,
        isPropagationSuppressed: Bool
    ) {
        let list = members.withLock { $0.array() }
        // Made once, for the subscribers that need the event; most take the change's parts.
        var event: Defaults.SuiteChange?
        for subscriber in list {
            subscriber.deliverChange(
                in: suite,
                named: name,
                old: old,
                new: new,
                oldDecoded: oldDecoded,
                newDecoded: newDecoded,
                isPropagationSuppressed: isPropagationSuppressed,
                event: &event
            )
        }
    }

    static func deliver(_ change: Defaults.SuiteChange) {
        ObserverRegistry.shared.deliver(change)
    }
}
