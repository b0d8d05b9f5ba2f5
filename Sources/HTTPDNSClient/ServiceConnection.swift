import HTTPDNSCore
import NIOSSL

/// How a source reaches its HTTPDNS service: the addresses, TLS, and the timing of failover. Every source of this
/// module takes one (``NativeServiceSource``, ``DoHSource``, ``JSONDNSSource``).
public struct ServiceConnection: Sendable, Hashable {
    /// The service's addresses, `https://IP[:PORT][/PATH]` each; tried in order of health.
    public var servers: [ServiceEndpoint]
    /// The name the service's certificate must hold as a DNS name, and the SNI: a certificate valid for the address
    /// alone (an IP SAN) is then refused, over HTTP/1.1 and HTTP/2 alike. Default none:
    /// the certificate must hold an IP SAN for each address.
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

extension ServiceConnection {
    /// The server name normalised (so that the URL's host, the `dnsOverride` key and the SNI are one spelling), or nil.
    /// - Throws: `ConfigurationError` (key `serverName`) when it is not a host name.
    func checkedServerName() throws(ConfigurationError) -> String? {
        guard let name = serverName else { return nil }
        guard let hostName = try? HostName(name) else { throw ConfigurationError(key: "serverName", reason: "'\(name)' is not a host name") }
        return hostName.value
    }

    /// How long a query that times out must have been out, with nothing read since, for its connection to be given
    /// up: half the longest an attempt can take (its timeout, or the budget when that is shorter), so that a query sent
    /// at once on an open connection, given a whole attempt, always can, and one sent late in its budget cannot.
    var silenceToGiveUp: Duration { min(attemptTimeout, budget) / 2 }

    /// - Throws: `ConfigurationError` naming the budget, attempt timeout or cool-down that cannot work.
    func validateTiming() throws(ConfigurationError) {
        guard budget > .zero else {
            throw ConfigurationError(.outOfRange, key: "budget", reason: "must be a positive duration, not \(budget)")
        }
        guard attemptTimeout > .zero else {
            throw ConfigurationError(.outOfRange, key: "attemptTimeout", reason: "must be a positive duration, not \(attemptTimeout)")
        }
        guard coolDown >= .zero, maxCoolDown >= coolDown else {
            throw ConfigurationError(
                coolDown < .zero ? .outOfRange : .inconsistent,
                key: "coolDown",
                reason: "must be ≥ 0 and at most maxCoolDown (\(maxCoolDown)), not \(coolDown)"
            )
        }
        guard maxCoolDown <= .seconds(86_400) else {
            throw ConfigurationError(.outOfRange, key: "maxCoolDown", reason: "must be at most a day (86,400 s), not \(maxCoolDown)")
        }
    }

    /// TLS 1.2 or later, the certificate verified in full against the system's roots and ``extraTrustRootsPEMFile``'s.
    /// - Throws: `ConfigurationError` (key `cacert`) when the file cannot be read or holds no certificate.
    func makeTLSConfiguration() throws(ConfigurationError) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let path = extraTrustRootsPEMFile {
            do {
                let certificates = try NIOSSLCertificate.fromPEMFile(path)
                guard !certificates.isEmpty else { throw ConfigurationError(.unreadable, key: "cacert", reason: "\(path) holds no certificate") }
                tls.additionalTrustRoots = [.certificates(certificates)]
            } catch let error as ConfigurationError {
                throw error
            } catch {
                throw ConfigurationError(.unreadable, key: "cacert", reason: "\(path) is not a PEM certificate file: \(error)", cause: error)
            }
        }
        return tls
    }
}
