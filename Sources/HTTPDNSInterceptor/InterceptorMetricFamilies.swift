/// The metric families the interceptor records, each with a sentence of help, for an exposition that writes help
/// texts (`PrometheusExposition` in `HTTPDNSMetrics`).
public enum InterceptorMetricFamilies {
    /// One sentence per metric family, by its name.
    public static let help: [String: String] = [
        "httpdns_interceptor_requests_total": "Requests through the interceptor by outcome: ok, passed, or the error's code.",
        "httpdns_connect_failovers_total": "Connections the interceptor failed to make to one address before trying the next.",
        "httpdns_interceptor_connection_races_total":
            "Happy Eyeballs races before a request, by result: the first address connected first, another did, or none did.",
        "httpdns_interceptor_retries_total": "Idempotent requests the interceptor sent again after their HTTP/2 stream ended unanswered.",
    ]
}
