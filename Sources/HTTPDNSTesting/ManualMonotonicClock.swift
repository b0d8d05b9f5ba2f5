import HTTPDNSCore
import HTTPDNSSynchronization

/// A clock that moves only when told to: for tests of everything that depends on time.
public final class ManualMonotonicClock: MonotonicClock {
    private let current: Mutex<UInt64>

    public init(nanoseconds: UInt64 = 1_000_000_000) {
        current = Mutex(nanoseconds)
    }

    public func now() -> MonotonicInstant {
        MonotonicInstant(nanoseconds: current.withLock { $0 })
    }

    /// Moves the clock forward by `seconds`; a negative amount leaves it where it is, since a monotonic clock
    /// does not go backwards.
    public func advance(seconds: Double) {
        guard seconds > 0 else { return }
        current.withLock { $0 += UInt64(seconds * 1_000_000_000) }
    }
}
