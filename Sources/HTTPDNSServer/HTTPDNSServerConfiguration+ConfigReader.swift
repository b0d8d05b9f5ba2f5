import Configuration
import HTTPDNSCore

extension HTTPDNSServerConfiguration {
    /// The service's settings from a swift-configuration reader, usually one scoped to the service's section. A key
    /// that is not set keeps its default.
    ///
    /// Keys (durations are whole numbers in the unit the key ends with):
    /// - `host` (string), `port` (int): where the service listens.
    /// - `tlsCertificatePath`, `tlsKeyPath` (string): PEM files; with both, the service speaks TLS.
    /// - `maxHostsPerBatch`, `maxURLLength`, `maxDNSMessageBytes`, `maxConnections`, `maxRequestBodyBytesHeld`,
    ///   `maxOpenStreams` (int).
    /// - `rateLimitPerSecond`, `rateLimitBurst` (double).
    /// - `idleTimeoutSeconds`, `headerTimeoutSeconds`, `upstreamRetryAfterSeconds`, `signatureMaxValiditySeconds`
    ///   (int).
    /// - `readinessProbeName` (string).
    ///
    /// Accounts hold secrets and are not read here: set ``accounts`` in code, or use the command line's accounts
    /// file. Each value is checked as it is read; ``validate()`` checks the whole, and `HTTPDNSService` runs it.
    /// - Parameter configReader: where the values are read.
    /// - Throws: `ConfigurationError` naming the key whose value cannot be read.
    public init(configReader: ConfigReader) async throws(ConfigurationError) {
        self.init()
        if let value = try await configReader.checkedString("host") { host = value }
        if let value = try await configReader.checkedInt("port") { port = value }
        if let value = try await configReader.checkedString("tlsCertificatePath") { tlsCertificatePath = value }
        if let value = try await configReader.checkedString("tlsKeyPath") { tlsKeyPath = value }
        if let value = try await configReader.checkedInt("maxHostsPerBatch") { maxHostsPerBatch = value }
        if let value = try await configReader.checkedInt("maxURLLength") { maxURLLength = value }
        if let value = try await configReader.checkedInt("maxDNSMessageBytes") { maxDNSMessageBytes = value }
        if let value = try await configReader.checkedInt("maxConnections") { maxConnections = value }
        if let value = try await configReader.checkedInt("maxRequestBodyBytesHeld") { maxRequestBodyBytesHeld = value }
        if let value = try await configReader.checkedInt("maxOpenStreams") { maxOpenStreams = value }
        if let value = try await configReader.checkedDouble("rateLimitPerSecond") { rateLimitPerSecond = value }
        if let value = try await configReader.checkedDouble("rateLimitBurst") { rateLimitBurst = value }
        if let value = try await configReader.checkedSeconds("idleTimeoutSeconds") { idleTimeout = value }
        if let value = try await configReader.checkedSeconds("headerTimeoutSeconds") { headerTimeout = value }
        if let value = try await configReader.checkedSeconds("upstreamRetryAfterSeconds") { upstreamRetryAfter = value }
        if let value = try await configReader.checkedSeconds("signatureMaxValiditySeconds") { signatureMaxValidity = value }
        if let value = try await configReader.checkedString("readinessProbeName") { readinessProbeName = value }
    }
}
