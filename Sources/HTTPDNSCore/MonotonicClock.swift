#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A point on a monotonic time line, in nanoseconds from an arbitrary origin.
public struct MonotonicInstant: Sendable, Hashable, Comparable {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// This instant moved `seconds` later.
    public func adding(seconds: UInt32) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: nanoseconds &+ UInt64(seconds) * 1_000_000_000)
    }

    /// Whole seconds from `self` until `later`, rounded up; 0 when `later` is not after `self`.
    public func secondsUntil(_ later: MonotonicInstant) -> UInt32 {
        guard later.nanoseconds > nanoseconds else { return 0 }
        let seconds = (later.nanoseconds - nanoseconds + 999_999_999) / 1_000_000_000
        return UInt32(clamping: seconds)
    }
}

/// Where the cache gets the time. It must never go backwards or jump with the wall clock.
public protocol MonotonicClock: Sendable {
    func now() -> MonotonicInstant
}

/// `CLOCK_MONOTONIC_COARSE`: unaffected by changes to the system's wall clock, and read without a system call.
///
/// Its resolution is the kernel's tick (1–4 ms), ample for TTLs counted in seconds, and reading it costs a few
/// nanoseconds where `CLOCK_MONOTONIC` can cost tens on virtual machines: it is read on every cache lookup.
/// Latencies are measured with `ContinuousClock`, not with this.
public struct SystemMonotonicClock: MonotonicClock {
    public init() {}

    public func now() -> MonotonicInstant {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &spec)
        return MonotonicInstant(nanoseconds: UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec))
    }
}
