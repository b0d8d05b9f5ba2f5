// ThreadSanitizer on Linux reports a race in this program, which has none. It is the pattern of a ByteBuffer that an
// event loop reuses: the owner hands a copy of a copy-on-write value to another thread (under a pthread mutex, which
// TSan sees), that thread reads it and drops its copy, and the owner, once `isKnownUniquelyReferenced` says it holds
// the only reference, writes the storage in place (ByteBuffer grows it with `reallocStorage`). The reader's release
// and the owner's uniqueness check order the read before the write, but both are atomics inside the Swift runtime,
// which is not instrumented, so TSan does not see them. scripts/sanitizers/tsan-suppressions.txt cites this.
//
//   swiftc -sanitize=thread -parse-as-library -g scripts/sanitizers/unique-reference-handoff.swift -o /tmp/unique
//   /tmp/unique        # "WARNING: ThreadSanitizer: Swift access race": Buffer.grow against the reader's read
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

final class Storage {
    var capacity: Int
    init(capacity: Int) { self.capacity = capacity }
}

/// A copy-on-write value, as ByteBuffer is: a copy shares the storage until one of them writes.
struct Buffer: @unchecked Sendable {
    var storage = Storage(capacity: 1)

    var capacity: Int { storage.capacity }

    /// Grows in place when this is the only reference, as ByteBuffer's `reallocStorage` does; otherwise copies.
    mutating func grow() {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(capacity: storage.capacity) }
        storage.capacity *= 2
    }
}

@main struct UniqueReferenceHandoff {
    static func main() {
        var owner = Buffer()
        var total = 0
        for _ in 0..<1_000 {
            let slot = LockedSlot<Buffer?>(owner)
            var thread = pthread_t()
            let argument = Unmanaged.passRetained(slot).toOpaque()
            pthread_create(&thread, nil, { argument in
                let slot = Unmanaged<LockedSlot<Buffer?>>.fromOpaque(argument!).takeRetainedValue()
                let copy = slot.withLock { value -> Buffer? in
                    defer { value = nil }
                    return value
                }
                // The reader's access; its copy is released when the thread returns.
                _ = copy?.capacity
                return nil
            }, argument)
            pthread_detach(thread)
            while !isKnownUniquelyReferenced(&owner.storage) { sched_yield() }
            owner.grow()
            total &+= owner.capacity & 1
        }
        print(total)
    }
}
