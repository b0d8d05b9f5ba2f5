// ThreadSanitizer on Linux reports a race in this program, which has none: an object built on one thread (under a
// pthread mutex, as ResolverCache builds its answers) is handed to a waiting task through
// CheckedContinuation.resume, and read after the await. The resume orders the write before the read; TSan does
// not see that. scripts/sanitizers/tsan-suppressions.txt cites this.
//
//   swiftc -sanitize=thread -parse-as-library -g scripts/sanitizers/continuation-handoff.swift -o /tmp/handoff
//   /tmp/handoff        # "WARNING: ThreadSanitizer: data race": Box.init against the read of box.value
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

final class Box: Sendable {
    let value: Int
    init(_ value: Int) { self.value = value }
}

@main struct ContinuationHandoff {
    static func main() async {
        var total = 0
        for index in 0..<20_000 {
            let slot = LockedSlot<CheckedContinuation<Box, Never>?>(nil)
            let box = await withCheckedContinuation { (continuation: CheckedContinuation<Box, Never>) in
                slot.withLock { $0 = continuation }
                Task.detached {
                    let made = slot.withLock { _ in Box(index) }
                    let waiting = slot.withLock { slot -> CheckedContinuation<Box, Never>? in
                        defer { slot = nil }
                        return slot
                    }
                    waiting?.resume(returning: made)
                }
            }
            total &+= box.value
        }
        print(total)
    }
}
