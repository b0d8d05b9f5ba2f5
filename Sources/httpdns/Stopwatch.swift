/// Wall time on `ContinuousClock`: how long `resolve` took. (`httpdns-bench` has its own copy.)
struct Stopwatch {
    private let start = ContinuousClock.now

    var elapsedNanoseconds: UInt64 {
        let elapsed = start.duration(to: .now).components
        return UInt64(elapsed.seconds) * 1_000_000_000 + UInt64(elapsed.attoseconds / 1_000_000_000)
    }
}
