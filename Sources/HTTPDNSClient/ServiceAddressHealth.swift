import HTTPDNSCore

/// Which of a service's addresses to try, and in what order: the healthy ones first, fastest first; an address
/// that failed is left alone for a cool-down that doubles with each failure in a row, then tried again as a probe.
/// When every address is cooling down, they are still tried, soonest-due first: a request is never refused here.
///
/// A value, driven by the time it is given, so every rule is testable without a clock or a network.
struct ServiceAddressHealth: Sendable {
    struct Entry: Sendable {
        var failuresInARow = 0
        /// Until when the address is left alone.
        var coolingUntil: MonotonicInstant?
        /// A moving average of its answers' latency, in nanoseconds.
        var latencyNanoseconds: Double?
    }

    private(set) var entries: [Entry]
    /// Raised by ``reset()``: the outcome of an attempt started before it says nothing of the new network.
    private(set) var generation: UInt64 = 0
    let coolDownSeconds: Double
    let maxCoolDownSeconds: Double

    init(count: Int, coolDown: Duration, maxCoolDown: Duration) {
        entries = Array(repeating: Entry(), count: count)
        self.coolDownSeconds = coolDown / .seconds(1)
        self.maxCoolDownSeconds = maxCoolDown / .seconds(1)
    }

    /// The addresses to try for a request made `now`, in order.
    func order(now: MonotonicInstant) -> [Int] {
        let ready = entries.indices.filter { index in
            guard let until = entries[index].coolingUntil else { return true }
            return until <= now
        }
        let sortedReady = ready.sorted(by: goesBefore)
        let cooling = entries.indices.filter { !ready.contains($0) }.sorted(by: dueBefore)
        return sortedReady + cooling
    }

    /// The first of ``order(now:)``, found in one pass that allocates nothing: what a lookup that asks one address
    /// first needs.
    func first(now: MonotonicInstant) -> Int? {
        var firstReady: Int?
        var soonestDue: Int?
        for index in entries.indices {
            if let until = entries[index].coolingUntil, until > now {
                if soonestDue.map({ dueBefore(index, $0) }) ?? true { soonestDue = index }
            } else if firstReady.map({ goesBefore(index, $0) }) ?? true {
                firstReady = index
            }
        }
        return firstReady ?? soonestDue
    }

    /// Whether ready address `a` is tried before ready address `b`: healthy first (a probe after a cool-down comes
    /// after them), then by latency, then as configured.
    private func goesBefore(_ a: Int, _ b: Int) -> Bool {
        let (ea, eb) = (entries[a], entries[b])
        if (ea.failuresInARow == 0) != (eb.failuresInARow == 0) { return ea.failuresInARow == 0 }
        let (la, lb) = (ea.latencyNanoseconds ?? 0, eb.latencyNanoseconds ?? 0)
        return la != lb ? la < lb : a < b
    }

    /// Whether cooling address `a` is tried before cooling address `b`: soonest due first, then as configured.
    private func dueBefore(_ a: Int, _ b: Int) -> Bool {
        let (ua, ub) = (entries[a].coolingUntil!, entries[b].coolingUntil!)
        return ua != ub ? ua < ub : a < b
    }

    mutating func succeeded(_ index: Int, latencyNanoseconds: UInt64) {
        entries[index].failuresInARow = 0
        entries[index].coolingUntil = nil
        let sample = Double(latencyNanoseconds)
        entries[index].latencyNanoseconds = entries[index].latencyNanoseconds.map { $0 * 0.8 + sample * 0.2 } ?? sample
    }

    mutating func failed(_ index: Int, now: MonotonicInstant) {
        entries[index].failuresInARow += 1
        let exponent = Double(min(entries[index].failuresInARow - 1, 30))
        let seconds = min(coolDownSeconds * pow2(exponent), maxCoolDownSeconds)
        entries[index].coolingUntil = MonotonicInstant(nanoseconds: now.nanoseconds &+ UInt64(seconds * 1_000_000_000))
    }

    /// Forgets every failure and latency: after a network change, what held on the old network may not.
    mutating func reset() {
        entries = Array(repeating: Entry(), count: entries.count)
        generation += 1
    }

    private func pow2(_ exponent: Double) -> Double {
        var value = 1.0
        for _ in 0..<Int(exponent) { value *= 2 }
        return value
    }
}
