import Metrics

/// The swift-metrics objects of one cache, made once. No dimension ever holds a host name.
struct ResolverMetrics: Sendable {
    let hits: Counter
    let staleHits: Counter
    let misses: Counter
    let negativeHits: Counter
    let evictions: Counter
    let coalesced: Counter
    let rejected: Counter
    let entries: Gauge
    /// One counter per outcome of the source's queries, made up front: the outcomes are a fixed set, and the
    /// completion of a query may run on a thread (c-ares's) where no task-local metrics factory applies.
    private let resolutions: [String: Counter]
    private let duration: Metrics.Timer

    init(sourceName: String) {
        func lookups(_ result: String) -> Counter {
            Counter(label: "httpdns_cache_lookups_total", dimensions: [("result", result)])
        }
        hits = lookups("hit")
        staleHits = lookups("stale")
        misses = lookups("miss")
        negativeHits = lookups("negative")
        evictions = Counter(label: "httpdns_cache_evictions_total")
        coalesced = Counter(label: "httpdns_coalesced_lookups_total")
        rejected = Counter(label: "httpdns_cache_rejected_lookups_total", dimensions: [("reason", "too_many_pending")])
        entries = Gauge(label: "httpdns_cache_entries")
        // A query for no family never reaches a source from the cache, so it has no counter of its own.
        // `batch`: one request that answered many names (``BatchResolutionSource``).
        let outcomes = ["success", "batch"] + ResolutionError.Code.all.filter { $0 != .noFamilies }.map(\.description)
        resolutions = Dictionary(
            uniqueKeysWithValues: outcomes.map { outcome in
                (outcome, Counter(label: "httpdns_resolutions_total", dimensions: [("source", sourceName), ("outcome", outcome)]))
            }
        )
        duration = Metrics.Timer(
            label: "httpdns_resolution_duration_seconds",
            dimensions: [("source", sourceName)],
            preferredDisplayUnit: .seconds
        )
    }

    /// Counts and times one upstream query of the cache's source.
    func recordUpstream(outcome: String, duration elapsed: Duration) {
        resolutions[outcome]?.increment()
        duration.recordNanoseconds(elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
    }
}
