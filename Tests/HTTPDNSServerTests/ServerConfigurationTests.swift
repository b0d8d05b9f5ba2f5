import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTesting
import Testing

/// The service's settings are checked when it is made: an embedding backend gets an error naming the setting.
@Suite struct ServerConfigurationTests {
    @Test(arguments: [
        ("port", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.port = 70_000 }),
        ("tlsKeyPath", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.tlsCertificatePath = "/x.pem" }),
        ("tlsCertificatePath", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.tlsKeyPath = "/x.pem" }),
        ("maxHostsPerBatch", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.maxHostsPerBatch = 0 }),
        ("maxDNSMessageBytes", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.maxDNSMessageBytes = -1 }),
        ("rateLimitPerSecond", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.rateLimitPerSecond = -1 }),
        ("rateLimitBurst", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.rateLimitBurst = 0.5 }),
        ("idleTimeout", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.idleTimeout = .zero }),
        ("headerTimeout", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.headerTimeout = .seconds(-1) }),
        ("upstreamRetryAfter", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.upstreamRetryAfter = .milliseconds(-1) }),
        ("signatureMaxValidity", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.signatureMaxValidity = .milliseconds(500) }),
        ("accounts", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.accounts = ["a": .init(secret: "")] }),
        ("accounts", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.accounts = ["a/b": .init(secret: "x")] }),
        ("readinessProbeName", { @Sendable (c: inout HTTPDNSServerConfiguration) in c.readinessProbeName = "not a name" }),
    ] as [(String, @Sendable (inout HTTPDNSServerConfiguration) -> Void)])
    func anUnworkableSettingIsReportedByName(key: String, change: @Sendable (inout HTTPDNSServerConfiguration) -> Void) throws {
        var configuration = HTTPDNSServerConfiguration()
        change(&configuration)
        let cache = try ResolverCache(source: StaticSource())
        let error = #expect(throws: ConfigurationError.self) {
            try HTTPDNSService(configuration: configuration, resolver: cache, metrics: nil)
        }
        #expect(error?.key == key)
    }

    @Test func aBurstBelowOneIsFineWithoutARateLimit() throws {
        var configuration = HTTPDNSServerConfiguration()
        configuration.rateLimitPerSecond = 0
        configuration.rateLimitBurst = 0
        try configuration.validate()
    }
}
