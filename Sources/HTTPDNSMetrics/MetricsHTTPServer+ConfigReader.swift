import Configuration
import HTTPDNSCore

extension MetricsHTTPServer.Configuration {
    /// The metrics server's settings from a swift-configuration reader. A key that is not set keeps its default.
    ///
    /// Keys: `host` (string), `port` (int), `maxConnections` (int), `idleTimeoutSeconds` (int).
    /// - Parameter configReader: where the values are read.
    /// - Throws: `ConfigurationError` naming the key whose value cannot be read.
    public init(configReader: ConfigReader) async throws(ConfigurationError) {
        self.init()
        if let value = try await configReader.checkedString("host") { host = value }
        if let value = try await configReader.checkedInt("port") { port = value }
        if let value = try await configReader.checkedInt("maxConnections") { maxConnections = value }
        if let value = try await configReader.checkedSeconds("idleTimeoutSeconds") { idleTimeout = value }
    }
}
