/// Wall time on `ContinuousClock`.
struct Stopwatch {
    private let start = ContinuousClock.now

    var elapsedNanoseconds: UInt64 {
        let elapsed = start.duration(to: .now).components
        return UInt64(elapsed.seconds) * 1_000_000_000 + UInt64(elapsed.attoseconds / 1_000_000_000)
    }
    var elapsedSeconds: Double { Double(elapsedNanoseconds) / 1e9 }
}

extension Array where Element == Double {
    /// The median, for repeated rounds of one measurement.
    var median: Double {
        let sorted = self.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}

/// Formats `value` with `digits` decimals, without Foundation.
func formatted(_ value: Double, digits: Int = 2) -> String {
    guard value.isFinite else { return "n/a" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = Int((value * scale).rounded())
    let whole = scaled / Int(scale)
    let fraction = String(abs(scaled) % Int(scale))
    let sign = scaled < 0 && whole == 0 ? "-" : ""
    guard digits > 0 else { return "\(whole)" }
    return "\(sign)\(whole).\(String(repeating: "0", count: digits - fraction.count))\(fraction)"
}
