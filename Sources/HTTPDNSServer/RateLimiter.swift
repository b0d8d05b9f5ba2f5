import HTTPDNSSynchronization

/// Token buckets per client address: each refills at `ratePerSecond` up to `burst`; a request takes one token.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updatedNanoseconds: UInt64
    }

    private let ratePerSecond: Double
    private let burst: Double
    /// Bounds the memory a flood of distinct addresses can take: past it the table starts afresh, which only
    /// ever lets requests through, never refuses one wrongly.
    private let maxClients: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    init(ratePerSecond: Double, burst: Double, maxClients: Int = 100_000) {
        precondition(ratePerSecond > 0 && burst >= 1, "a rate limiter needs a positive rate and a burst of at least 1")
        self.ratePerSecond = ratePerSecond
        self.burst = burst
        self.maxClients = maxClients
    }

    /// Takes a token for `client`. Returns nil when allowed, else how many seconds until a token is there.
    func admit(_ client: String, nowNanoseconds: UInt64) -> Double? {
        buckets.withLock { buckets in
            if buckets.count >= maxClients, buckets[client] == nil { buckets.removeAll(keepingCapacity: true) }
            var bucket = buckets[client] ?? Bucket(tokens: burst, updatedNanoseconds: nowNanoseconds)
            // Concurrent requests read the clock before taking the lock, so `now` can be a little older than
            // the bucket's time: that is no time passing, never a wrapped-around refill.
            if nowNanoseconds > bucket.updatedNanoseconds {
                let elapsed = Double(nowNanoseconds - bucket.updatedNanoseconds) / 1e9
                bucket.tokens = min(burst, bucket.tokens + elapsed * ratePerSecond)
                bucket.updatedNanoseconds = nowNanoseconds
            }
            defer { buckets[client] = bucket }
            guard bucket.tokens >= 1 else { return (1 - bucket.tokens) / ratePerSecond }
            bucket.tokens -= 1
            return nil
        }
    }
}
