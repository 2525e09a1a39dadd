import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if DEFAULTS_PTHREAD_LOCKS
/// The lock around the package's shared state, built on a pthread mutex.
///
/// Only in builds with `-DDEFAULTS_PTHREAD_LOCKS` (the ThreadSanitizer run in `.ci/run`):
/// ThreadSanitizer intercepts pthread calls but not the futex calls of `Synchronization.Mutex`, so
/// with `Mutex` it reports every access inside `withLock` as a race.
package final class Lock<Value>: @unchecked Sendable {  // `value` is only touched under `mutex`.
    private var value: Value
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    /// A lock around `initialValue`.
    package init(_ initialValue: consuming sending Value) {
        value = initialValue
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value, as `Mutex.withLock` does.
    package func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

/// Shows nothing of the value, as `Mutex` shows nothing: `dump` of a suite must not print what
/// the lock guards (a secret's text among it), nor read it without the lock.
extension Lock: CustomReflectable {
    package var customMirror: Mirror { Mirror(self, children: []) }
}
#else
/// The lock around the package's shared state: `Synchronization.Mutex`.
///
/// Builds with `-DDEFAULTS_PTHREAD_LOCKS` use a pthread mutex instead, which ThreadSanitizer can see.
package typealias Lock<Value: ~Copyable> = Mutex<Value>
#endif
