import HTTPDNSServerTransport

/// The metric families the HTTPDNS service records besides its resolver's (`ResolverMetricFamilies`), each with a
/// sentence of help, for an exposition that writes help texts.
public enum ServerMetricFamilies {
    /// One sentence per metric family, by its name: the routes', the connections' and the relayed answers'.
    public static let help: [String: String] = TransportMetricFamilies.help.merging([
        "httpdns_server_rejected_total": "Requests refused before resolution, by reason.",
        "httpdns_relayed_lookups_total": "DoH lookups of types other than A and AAAA, relayed upstream, by result: hit, miss, stale, failed.",
    ]) { first, _ in first }
}
