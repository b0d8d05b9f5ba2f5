/// The metric families this module records (the resolver cache, the sources' queries, the policy), each with a
/// sentence of help.
///
/// The libraries record through swift-metrics, whose API has no help text; an exposition that wants one
/// (`PrometheusExposition` in `HTTPDNSMetrics`, which `promtool check metrics` reads) takes these tables. Each module
/// declares its own families: `InterceptorMetricFamilies`, `ServerMetricFamilies`.
public enum ResolverMetricFamilies {
    /// One sentence per metric family, by its name.
    public static let help: [String: String] = [
        "httpdns_cache_lookups_total": "Resolver cache lookups by result: hit, stale, miss, negative.",
        "httpdns_cache_entries": "Names in the resolver cache, stale ones included.",
        "httpdns_cache_evictions_total": "Names evicted to keep the resolver cache within its bound.",
        "httpdns_cache_rejected_lookups_total": "Lookups refused because too many upstream queries were pending.",
        "httpdns_coalesced_lookups_total": "Cache misses that joined an upstream query already in flight.",
        "httpdns_resolutions_total": "Upstream queries by source and outcome.",
        "httpdns_resolution_duration_seconds": "Time an upstream query took, by source.",
        "httpdns_fallbacks_total": "Lookups the trusted source failed and a fallback source was asked, by from and to.",
        "httpdns_hijack_suspected_total": "Local resolver answers the hijack guard did not call ok, by reason.",
        "httpdns_network_changes_total": "Network changes reported to the resolver, each emptying its caches.",
    ]
}
