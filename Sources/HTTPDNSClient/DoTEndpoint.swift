import HTTPDNSCore

/// Where a DNS-over-TLS resolver (RFC 7858) is reached: `tls://IP[:PORT]`, port 853 by default, the host an IP
/// literal so that reaching it needs no DNS: `tls://192.0.2.53`, `tls://[2001:db8::53]:8853`.
///
/// There is no plaintext form: a DoT endpoint is TLS or nothing.
public struct DoTEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The port of RFC 7858.
    public static let defaultPort = 853

    public let address: IPAddress
    public let port: Int

    /// - Parameters:
    ///   - address: the resolver's address.
    ///   - port: its port, 1 to 65,535.
    /// - Throws: ``ServiceEndpointError`` (`invalidPort`) for a port outside 1 to 65,535.
    public init(address: IPAddress, port: Int = DoTEndpoint.defaultPort) throws(ServiceEndpointError) {
        guard (1...65_535).contains(port) else {
            throw ServiceEndpointError(.invalidPort, text: "\(address)", reason: "\(port) is not a port (1 to 65535)")
        }
        self.address = address
        self.port = port
    }

    /// Parses `tls://IP[:PORT]` (IPv6 in brackets).
    /// - Throws: ``ServiceEndpointError`` saying what is wrong: another scheme, a name instead of an IP, a bad port, a
    ///   path, query or fragment (DoT has none).
    public init(parsing text: String) throws(ServiceEndpointError) {
        guard text.hasPrefix("tls://") else {
            throw ServiceEndpointError(.invalidScheme, text: text, reason: "must start with tls:// (DNS over TLS)")
        }
        // Parsed as an `https://` URL of the same address and port (one parser for both), then checked for the
        // parts DoT has no use for.
        let rest = text.dropFirst("tls://".count)
        let parsed: ServiceEndpoint
        do {
            parsed = try ServiceEndpoint(parsing: "https://" + rest)
        } catch {
            // The reasons speak of the URL parsed: said of this one, with its own scheme.
            throw ServiceEndpointError(error.code, text: text, reason: error.reason.replacing("https://", with: "tls://"))
        }
        guard parsed.path.isEmpty, !rest.hasSuffix("/") else {
            throw ServiceEndpointError(.invalidPath, text: text, reason: "DNS over TLS has no path")
        }
        let hasPort = rest.hasPrefix("[") ? rest.contains("]:") : rest.contains(":")
        address = parsed.address
        port = hasPort ? parsed.port : Self.defaultPort
    }

    /// The address as a URL host: IPv6 in brackets.
    public var urlHost: String {
        switch address {
        case .v4(let v4): v4.description
        case .v6(let v6): "[\(v6)]"
        }
    }

    public var description: String { "tls://\(urlHost)\(port == Self.defaultPort ? "" : ":\(port)")" }
}
