import HTTPDNSClient
import HTTPDNSCore
import Testing

/// Service URLs: an IP, HTTPS unless written otherwise, nothing a resolver would be needed for.
@Suite struct ServiceEndpointTests {
    @Test(arguments: [
        ("https://127.0.0.1", "https://127.0.0.1", 443, ""),
        ("https://127.0.0.1:8443", "https://127.0.0.1:8443", 8443, ""),
        ("https://[::1]:8443/dns-query/", "https://[::1]:8443/dns-query", 8443, "/dns-query"),
        ("http://127.0.0.1", "http://127.0.0.1", 80, ""),
        ("https://192.0.2.1:443/", "https://192.0.2.1", 443, ""),
    ])
    func parses(text: String, description: String, port: Int, path: String) throws {
        let endpoint = try ServiceEndpoint(parsing: text)
        #expect(endpoint.description == description)
        #expect(endpoint.port == port)
        #expect(endpoint.path == path)
    }

    @Test(arguments: [
        ("https://dns.example", "not an IP address"),
        ("ftp://127.0.0.1", "must start with https://"),
        ("127.0.0.1:443", "must start with https://"),
        ("https://127.0.0.1:0", "is not a port"),
        ("https://127.0.0.1:99999", "is not a port"),
        ("https://::1", "an IPv6 address goes in brackets: https://[::1]"),
        ("https://2001:db8::1", "an IPv6 address goes in brackets: https://[2001:db8::1]"),
        ("https://[::1", "closing ]"),
        ("https://127.0.0.1/?x=1", "query or a fragment"),
        ("https://127.0.0.1/dns query", "must escape"),
        ("https://127.0.0.1/a%20b", "must escape"),
    ])
    func rejects(text: String, reason: String) {
        let error = #expect(throws: ServiceEndpointError.self) { try ServiceEndpoint(parsing: text) }
        #expect(error?.reason.contains(reason) == true, "\(error?.description ?? "no error")")
    }

    @Test func aSourceNeedsAService() {
        let error = #expect(throws: ConfigurationError.self) { try NativeServiceSource(configuration: .init(servers: [])) }
        #expect(error?.key == "servers")
        var configuration = NativeServiceSource.Configuration(servers: [try! ServiceEndpoint(parsing: "https://127.0.0.1")])
        configuration.connection.budget = .zero
        #expect(throws: ConfigurationError.self) { try NativeServiceSource(configuration: configuration) }
        configuration.connection.budget = .milliseconds(100)
        configuration.connection.extraTrustRootsPEMFile = "/nonexistent/ca.pem"
        let cacert = #expect(throws: ConfigurationError.self) { try NativeServiceSource(configuration: configuration) }
        #expect(cacert?.key == "cacert")
    }
}
