/// `Duration`, the public API's one type for time, in the integers the code and its dependencies count in:
/// SwiftNIO's nanoseconds, c-ares's milliseconds, the whole seconds of HTTP's `Retry-After` and of DNS TTLs.
/// Each setting is converted once, where it is taken, never per lookup.
extension Duration {
    /// Whole nanoseconds, a fraction dropped, clamped to `Int64` (about 292 years either way): SwiftNIO's unit.
    package var clampedNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (nanoseconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, sumOverflow) = nanoseconds.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !overflow, !sumOverflow else { return seconds < 0 ? .min : .max }
        return sum
    }

    /// Whole milliseconds, a fraction dropped, clamped to `Int`.
    package var clampedMilliseconds: Int {
        let (seconds, attoseconds) = components
        let (milliseconds, overflow) = Int(clamping: seconds).multipliedReportingOverflow(by: 1000)
        let (sum, sumOverflow) = milliseconds.addingReportingOverflow(Int(attoseconds / 1_000_000_000_000_000))
        guard !overflow, !sumOverflow else { return seconds < 0 ? .min : .max }
        return sum
    }

    /// Whole milliseconds, a fraction rounded up (so a short but non-zero duration stays non-zero); 0 for a
    /// negative duration.
    package var roundedUpMilliseconds: Int {
        guard self > .zero else { return 0 }
        let whole = clampedMilliseconds
        return self > .milliseconds(whole) && whole < .max ? whole + 1 : whole
    }

    /// Whole seconds, a fraction rounded up, within `UInt32`; 0 for a negative duration.
    package var roundedUpSeconds: UInt32 {
        guard self > .zero else { return 0 }
        let (seconds, attoseconds) = components
        guard seconds < Int64(UInt32.max) else { return .max }
        return UInt32(seconds) + (attoseconds > 0 ? 1 : 0)
    }
}
