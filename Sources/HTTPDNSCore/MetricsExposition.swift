/// Help texts for every metric the project reports, and a way to put them into a Prometheus text exposition.
///
/// The libraries record through swift-metrics only, whose API has no help text; swift-prometheus's factory
/// registers metrics without one, and `promtool check metrics` wants one. The names are ours, so the texts live
/// here, one place for all of them, for whichever backend an executable bootstraps.
public enum MetricsExposition {
    /// One sentence per metric family, by its name.
    public static let help: [String: String] = [
        "http_server_request_duration_seconds": "Time to answer an HTTP request, by route template, method and status.",
        "httpdns_server_rejected_total": "Requests refused before resolution, by reason.",
        "httpdns_server_connections": "Connections to the service open now.",
        "httpdns_server_connection_limit_reached_total": "Times the service reached maxConnections and stopped accepting until a connection closed.",
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
        "httpdns_relayed_lookups_total": "DoH lookups of types other than A and AAAA, relayed upstream, by result: hit, miss, stale, failed.",
        "httpdns_interceptor_requests_total": "Requests through the interceptor by outcome: ok, passed, or the error's code.",
        "httpdns_connect_failovers_total": "Connections the interceptor failed to make to one address before trying the next.",
        "httpdns_interceptor_retries_total": "Idempotent requests the interceptor sent again after their HTTP/2 stream ended unanswered.",
    ]

    /// `text` with `# HELP` inserted before each `# TYPE` line of a metric that has help text.
    public static func withHelp(_ text: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(text.count + help.count * 80)
        let typePrefix = Array("# TYPE ".utf8)
        for line in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            if line.starts(with: typePrefix) {
                let name = String(decoding: line.dropFirst(typePrefix.count).prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
                if let help = help[name] {
                    output.append(contentsOf: Array("# HELP \(name) \(help)\n".utf8))
                }
            }
            output.append(contentsOf: line)
            output.append(UInt8(ascii: "\n"))
        }
        // split kept the text's final newline as an empty last line; do not double it.
        if text.last == UInt8(ascii: "\n") { output.removeLast() }
        return output
    }
}
