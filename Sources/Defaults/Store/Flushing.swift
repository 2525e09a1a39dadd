extension Store {
    /// The part of a store's state that decides when what was written here is committed: whether
    /// anything waits (keys changed, a `removeAll()`), the ``FlushMachine`` that times commits, and
    /// the first write refused since the last `synchronize()`.
    ///
    /// The marks of the keys changed live in the key table, beside each key's value; this part
    /// counts them (``Store/State/markChanged(_:)`` and ``Store/State/takeChanged()`` keep the
    /// count).
    struct Flushing {
        /// When the changes are committed.
        var machine = FlushMachine()
        /// How many keys of the key table are marked changed since the last commit.
        var changedCount = 0
        /// File stores: set by `removeAll()` until the next successful write, which then keeps
        /// none of the keys the file holds (but those a system file locks), seen here or not.
        private(set) var removesEverything = false
        /// The first write refused since the last ``Defaults/Suite/synchronize()`` (a read-only
        /// file, a locked key), which the next one throws: a refused write is never silent.
        private var refusal: Defaults.StorageError?

        /// Whether keys were changed (or all removed) here since the last successful commit.
        var isDirty: Bool { changedCount > 0 || removesEverything }

        /// Whether a commit would find anything to do: changes wait, or one is under way.
        var commitNeeded: Bool { machine.commitNeeded(isDirty: isDirty) }

        /// Changes may wait that nothing armed the timer for: arms it when they do.
        mutating func pending() -> FlushMachine.Action { machine.pending(isDirty: isDirty) }

        /// The timer fired: commit, or wait again.
        mutating func timerFired() -> FlushMachine.Action { machine.timerFired(isDirty: isDirty) }

        /// A test holds the timer's commits back, or lets them go.
        mutating func hold(_ held: Bool) -> FlushMachine.Action { machine.hold(held, isDirty: isDirty) }

        /// A `removeAll()` waits for the next commit.
        mutating func removeAll() { removesEverything = true }

        /// Notes that a commit takes what waits: returns whether it clears everything first, and
        /// whether it is a retry of one that failed.
        mutating func commitStarted() -> (clears: Bool, isRetry: Bool) {
            defer {
                removesEverything = false
                machine.commitStarted()
            }
            return (removesEverything, machine.lastCommitFailed)
        }

        /// A commit failed: what it took waits again (`clears`: its `removeAll()`); says when to retry.
        mutating func commitFailed(clears: Bool) -> FlushMachine.Action {
            if clears { removesEverything = true }
            return machine.failed()
        }

        /// A commit was refused: nothing is retried, and the next `synchronize()` throws `error`.
        mutating func commitRefused(_ error: Defaults.StorageError) {
            machine.refused()
            rememberRefusal(error)
        }

        /// Keeps `refused`, a write refused now, for the next `synchronize()` to throw, unless one
        /// is kept already.
        mutating func rememberRefusal(_ refused: Defaults.StorageError?) {
            if refusal == nil { refusal = refused }
        }

        /// The first write refused since the last `synchronize()`, forgotten as it is taken.
        mutating func takeRefusal() -> Defaults.StorageError? {
            defer { refusal = nil }
            return refusal
        }
    }
}
