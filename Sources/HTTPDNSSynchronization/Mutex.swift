// The lock every module of the package uses: `Synchronization.Mutex`, except in a ThreadSanitizer build.
//
// On Linux, `Synchronization.Mutex` waits on a futex directly, which ThreadSanitizer does not see, so every state
// guarded by one is reported as a race. `scripts/sanitize.sh thread` builds with `-DHTTPDNS_THREAD_SANITIZER`, and
// then `Mutex` is a class around a `pthread_mutex_t`, which TSan understands. Every other build gets the standard
// library's `Mutex` itself, through this module's re-export: no wrapper, no cost.
//
// Modules import this one instead of `Synchronization`. In a TSan build it re-exports `Atomic` and its orderings
// alone, so that the name `Mutex` means one type only.

#if HTTPDNS_THREAD_SANITIZER
import Glibc
import Synchronization
@_exported import struct Synchronization.Atomic
@_exported import struct Synchronization.AtomicLoadOrdering
@_exported import protocol Synchronization.AtomicRepresentable
@_exported import struct Synchronization.AtomicStoreOrdering
@_exported import struct Synchronization.AtomicUpdateOrdering

/// A `pthread_mutex_t` with the interface of `Synchronization.Mutex`, for ThreadSanitizer builds only.
public final class Mutex<Value: ~Copyable>: @unchecked Sendable {
    private var value: Value
    private let lock: UnsafeMutablePointer<pthread_mutex_t>

    public init(_ initialValue: consuming sending Value) {
        value = initialValue
        lock = .allocate(capacity: 1)
        // Cannot fail for a default-attribute mutex in memory of its own (pthread_mutex_init(3)).
        pthread_mutex_init(lock, nil)
    }

    deinit {
        pthread_mutex_destroy(lock)
        lock.deallocate()
    }

    public func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return try body(&value)
    }
}
#else
@_exported import Synchronization
#endif
