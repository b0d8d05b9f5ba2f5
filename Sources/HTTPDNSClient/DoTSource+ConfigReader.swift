import Configuration
import HTTPDNSCore

extension DoTSource.Configuration {
    /// The DNS-over-TLS source's settings from a swift-configuration reader, usually one scoped to the source's
    /// section (`config.scoped(to: "service")`): the keys of ``ServiceConnection/init(configReader:)``, read by the
    /// same rules, and the connections' own. A key that is not set keeps its default.
    ///
    /// Keys:
    /// - `servers` (string array, required): `tls://IP[:PORT]` each (port 853 by default).
    /// - `serverName` (string): the name the resolvers' certificate holds as a DNS name, and the SNI.
    /// - `extraTrustRootsPEMFile` (string): a PEM file of certificates to trust besides the system's.
    /// - `pins` (string array): SPKI SHA-256 pins, `sha256//BASE64` each.
    /// - `budgetMs`, `attemptTimeoutMs`, `coolDownMs`, `maxCoolDownMs` (int, milliseconds). A budget shorter than the
    ///   default attempt timeout shortens the attempt timeout to the budget, unless `attemptTimeoutMs` is set too;
    ///   an attempt timeout longer than the budget is refused.
    /// - `idleTimeoutMs` (int, milliseconds): how long a connection with no query in flight stays open.
    /// - `maxQueriesInFlight`, `maxQueriesWaiting` (int): the queries in flight on one connection, and those waiting
    ///   for room.
    /// - `name` (string): the source's name in stats, logs and metrics.
    ///
    /// ``validate()`` checks the rest, and `DoTSource` runs it.
    /// - Parameter configReader: where the values are read.
    /// - Throws: `ConfigurationError` naming the key whose value cannot be read or used, or `servers` when it is
    ///   missing or empty.
    public init(configReader: ConfigReader) async throws(ConfigurationError) {
        let servers = try await configReader.checkedList("servers", "a DNS-over-TLS server", parse: DoTEndpoint.init(parsing:)) ?? []
        guard !servers.isEmpty else {
            throw ConfigurationError(.invalidValue, key: "servers", reason: "must name at least one DNS-over-TLS server, tls://IP[:PORT]")
        }
        self.init(servers: servers)
        var shared = connection
        try await shared.readSharedKeys(configReader)
        adopt(shared)
        if let value = try await configReader.checkedMilliseconds("idleTimeoutMs") { idleTimeout = value }
        if let value = try await configReader.checkedInt("maxQueriesInFlight") { maxQueriesInFlight = value }
        if let value = try await configReader.checkedInt("maxQueriesWaiting") { maxQueriesWaiting = value }
        if let value = try await configReader.checkedString("name") { name = value }
    }
}
