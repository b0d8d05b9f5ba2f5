// ThreadSanitizer on Linux reports a race in this program, which has none. It is the pattern of a ByteBuffer that an
// event loop reuses: the owner hands a copy of a copy-on-write value to another thread (under a pthread mutex, which
// TSan sees), that thread reads it and drops its copy, and the owner, once `isKnownUniquelyReferenced` says it holds
// the only reference, grows the storage in place (as ByteBuffer's `_Storage.reallocStorage` does). The reader's
// release and the owner's uniqueness check order the read before the write, but both are atomics inside the Swift
// runtime, which is not instrumented, so TSan does not see them.
//
// Built as module NIOCore, its `ByteBuffer._Storage.reallocStorage(capacity:)` has the mangled name of SwiftNIO's, so
// the same binary also shows that scripts/sanitizers/tsan-suppressions.txt hides this report and nothing else here:
//
//   swiftc -sanitize=thread -parse-as-library -module-name NIOCore -g \
//     scripts/sanitizers/unique-reference-handoff.swift -o /tmp/unique
//   /tmp/unique      # "WARNING: ThreadSanitizer: data race": reallocStorage against the reader's read
//   TSAN_OPTIONS=suppressions=$PWD/scripts/sanitizers/tsan-suppressions.txt /tmp/unique      # no report
import Glibc

final class LockedSlot<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(lock, nil)
    }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body(&value)
    }
}

/// A copy-on-write value, as SwiftNIO's is: a copy shares the storage until one of them writes.
struct ByteBuffer: @unchecked Sendable {
    final class _Storage {
        var capacity: UInt32 = 1

        @inline(never)
        func reallocStorage(capacity: UInt32) { self.capacity = capacity }
    }

    var _storage = _Storage()

    var capacity: UInt32 { _storage.capacity }

    /// Grows in place when this is the only reference, as SwiftNIO does; otherwise copies first.
    mutating func grow() {
        if !isKnownUniquelyReferenced(&_storage) { _storage = _Storage() }
        _storage.reallocStorage(capacity: _storage.capacity &* 2)
    }
}

@main struct UniqueReferenceHandoff {
    static func main() {
        var owner = ByteBuffer()
        var total: UInt32 = 0
        for _ in 0..<1_000 {
            var slot = LockedSlot<ByteBuffer?>(owner)
            var thread = pthread_t()
            let argument = Unmanaged.passRetained(slot).toOpaque()
            pthread_create(&thread, nil, { argument in
                let slot = Unmanaged<LockedSlot<ByteBuffer?>>.fromOpaque(argument!).takeRetainedValue()
                let copy = slot.withLock { value -> ByteBuffer? in
                    defer { value = nil }
                    return value
                }
                // The reader's access; its copy is released when the thread returns.
                _ = copy?.capacity
                return nil
            }, argument)
            pthread_detach(thread)
            // The reader has dropped its copy: seen only through the reference count.
            while !isKnownUniquelyReferenced(&owner._storage) { sched_yield() }
            // The slot is not what this shows: this thread frees it, after the reader's last use of it, which the
            // lock orders.
            while !isKnownUniquelyReferenced(&slot) { sched_yield() }
            slot.withLock { _ in }
            owner.grow()
            total &+= owner.capacity & 1
        }
        print(total)
    }
}
