/// The metric families the service's connections record, with their help; `ServerMetricFamilies` in `HTTPDNSServer`
/// publishes them with its own.
package enum TransportMetricFamilies {
    package static let help: [String: String] = [
        "http_server_request_duration_seconds": "Time to answer an HTTP request, by route template, method and status.",
        "httpdns_server_connections": "Connections to the service open now.",
        "httpdns_server_connection_limit_reached_total": "Times the service reached maxConnections and stopped accepting until a connection closed.",
    ]
}
