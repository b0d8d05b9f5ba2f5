import HTTPDNSCAres
import HTTPDNSCore
import Testing

/// c-ares's settings are checked before a channel is made.
extension CAresSourceTests {
    @Suite struct Configuration {
        @Test(arguments: [("timeout", 0, 2), ("tries", 1000, 0), ("timeout", -5, 1)])
        func unworkableSettingsThrowNamingTheSetting(key: String, timeoutMs: Int, tries: Int) {
            var configuration = CAresSource.Configuration(servers: [DNSServerAddress(ip: .v4(IPv4Address("127.0.0.1")!), port: 9)])
            configuration.timeout = .milliseconds(timeoutMs)
            configuration.tries = tries
            let error = #expect(throws: ConfigurationError.self) { try CAresSource(configuration: configuration) }
            #expect(error?.key == key)
        }

        @Test func aLookupOfNoFamilyFailsWithoutAQuery() async throws {
            try await CAresSourceTests.withSource([DNSServerAddress(ip: .v4(IPv4Address("127.0.0.1")!), port: 9)]) { source in
                let error = await #expect(throws: ResolutionError.self) { try await source.query(try HostName("a.example"), families: []) }
                #expect(error?.code == .noFamilies)
            }
        }
    }
}
