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

    init() {
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
    }

    /// Counts one upstream query; the dimensions are the source's configured name and a bounded outcome.
    func recordUpstream(source: String, outcome: String, duration: Duration) {
        Counter(label: "httpdns_resolutions_total", dimensions: [("source", source), ("outcome", outcome)]).increment()
        Metrics.Timer(label: "httpdns_resolution_duration_seconds", dimensions: [("source", source)], preferredDisplayUnit: .seconds)
            .recordNanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }
}
