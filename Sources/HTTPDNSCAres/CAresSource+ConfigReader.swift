import Configuration
import HTTPDNSCore

extension CAresSource.Configuration {
    /// c-ares's settings from a swift-configuration reader, usually one scoped to the source's section. A key that
    /// is not set keeps its default.
    ///
    /// Keys:
    /// - `servers` (string array): DNS servers, `IP[:PORT]` or `[IPv6]:PORT` each. Default none: the system's, from
    ///   `/etc/resolv.conf`.
    /// - `transport` (string): `udp` (with c-ares's fall back to TCP for a truncated answer) or `tcp`.
    /// - `timeoutMs` (int): the first try's timeout, in milliseconds.
    /// - `tries` (int): how many times each server is asked.
    /// - `name` (string): the source's name in metrics and answers.
    ///
    /// Each value is checked as it is read; ``validate()`` checks the ranges, and `CAresSource` runs it.
    /// - Parameter configReader: where the values are read.
    /// - Throws: `ConfigurationError` naming the key whose value cannot be read or used.
    public init(configReader: ConfigReader) async throws(ConfigurationError) {
        self.init()
        if let servers = try await configReader.checkedList("servers", "a server", parse: DNSServerAddress.init(parsing:)) {
            self.servers = servers
        }
        if let transport = try await configReader.checkedChoice("transport", ["udp": Transport.udp, "tcp": Transport.tcp]) {
            self.transport = transport
        }
        if let value = try await configReader.checkedMilliseconds("timeoutMs") { timeout = value }
        if let value = try await configReader.checkedInt("tries") { tries = value }
        if let value = try await configReader.checkedString("name") { name = value }
    }
}
