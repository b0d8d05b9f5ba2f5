/// How a source reaches its HTTPDNS service: the addresses, TLS, and the timing of failover. Every source of this
/// module takes one (``NativeServiceSource``, ``DoHSource``, ``JSONDNSSource``).
public struct ServiceConnection: Sendable, Hashable {
    /// The service's addresses, `https://IP[:PORT][/PATH]` each; tried in order of health.
    public var servers: [ServiceEndpoint]
    /// The name the service's certificate holds, when it is not the addresses' (it is then also the SNI).
    /// Default none: the certificate must hold an IP SAN for each address.
    public var serverName: String?
    /// A PEM file of certificates to trust besides the system's (a private CA). Default none.
    public var extraTrustRootsPEMFile: String?
    /// SPKI SHA-256 pins: when any are given, the service's public key must be one of them, besides the certificate
    /// verifying as usual. Default none. Needs `https` addresses.
    public var pins: [SPKIPin] = []
    /// How long one lookup may take, over every address tried. Default 2,000 ms.
    public var budget: Duration = .milliseconds(2000)
    /// How long one address is given. Default 1,000 ms.
    public var attemptTimeout: Duration = .milliseconds(1000)
    /// How long a failed address is left alone, doubled for each failure in a row. Default 1,000 ms.
    public var coolDown: Duration = .milliseconds(1000)
    /// The longest cool-down, at most a day. Default 60 s.
    public var maxCoolDown: Duration = .seconds(60)

    public init(servers: [ServiceEndpoint]) {
        self.servers = servers
    }

    /// The same, with every server that names no path at `path` (`/dns-query` for DoH and JSON DNS).
    func withDefaultPath(_ path: String) -> ServiceConnection {
        var connection = self
        connection.servers = servers.map { $0.path.isEmpty ? $0.withPath(path) : $0 }
        return connection
    }
}
