import Configuration
import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSMetrics
import HTTPDNSServer
import HTTPDNSSettings
import Testing

/// Each library reads its own settings from any swift-configuration reader (`init(configReader:)`), under keys of its
/// own, and a value that is there but cannot be used is an error naming the key, never a silent default.
@Suite struct LibraryConfigReaderTests {
    func reader(_ values: [String: ConfigValue]) -> ConfigReader {
        ConfigReader(provider: InMemoryProvider(values: Dictionary(uniqueKeysWithValues: values.map { (AbsoluteConfigKey($0.key.split(separator: ".").map(String.init)), $0.value) })))
    }

    func environment(_ variables: [String: String]) -> ConfigReader {
        ConfigReader(provider: EnvironmentVariablesProvider(environmentVariables: variables))
    }

    @Test func eachLibraryReadsItsOwnSectionWithUnitsInTheKeys() async throws {
        let config = reader([
            "cache.maxEntries": 500, "cache.minTTLSeconds": 7, "cache.staleAnswerClientTimeoutMs": 250, "cache.refreshAheadFraction": 0.2,
            "resolver.strictHosts": .init(.stringArray(["bank.example", ".pay.example"]), isSecret: false),
            "resolver.cache.maxTTLSeconds": 90,
            "cares.servers": .init(.stringArray(["127.0.0.53:5353"]), isSecret: false), "cares.transport": "tcp", "cares.timeoutMs": 1500,
            "service.servers": .init(.stringArray(["https://127.0.0.1:8443"]), isSecret: false), "service.serverName": "dns.example",
            "service.budgetMs": 600,
            "server.port": 9053, "server.idleTimeoutSeconds": 20, "server.rateLimitPerSecond": 50.5,
            "interceptor.connectTimeoutMs": 750, "interceptor.addressOrder": "ipv6First", "interceptor.families": "ipv4",
            "metrics.port": 9100, "metrics.idleTimeoutSeconds": 5,
        ])
        let cache = try await ResolverCache.Configuration(configReader: config.scoped(to: "cache"))
        #expect(cache.maxEntries == 500 && cache.minTTL == .seconds(7) && cache.staleAnswerClientTimeout == .milliseconds(250))
        #expect(cache.refreshAheadFraction == 0.2 && cache.maxTTL == ResolverCache.Configuration().maxTTL, "an unset key keeps its default")
        let resolver = try await HostResolver.Configuration(configReader: config.scoped(to: "resolver"))
        let (bank, pay) = (try HostName("bank.example"), try HostName("a.pay.example"))
        #expect(resolver.strictHosts.matches(bank) && resolver.strictHosts.matches(pay))
        #expect(resolver.cache.maxTTL == .seconds(90))
        let cares = try await CAresSource.Configuration(configReader: config.scoped(to: "cares"))
        let server53 = try DNSServerAddress(parsing: "127.0.0.53:5353")
        #expect(cares.servers == [server53] && cares.transport == .tcp && cares.timeout == .milliseconds(1500))
        let service = try await ServiceConnection(configReader: config.scoped(to: "service"))
        #expect(service.servers.map(\.description) == ["https://127.0.0.1:8443"] && service.serverName == "dns.example")
        #expect(service.budget == .milliseconds(600) && service.attemptTimeout == .milliseconds(600), "an attempt never outlasts the budget")
        let server = try await HTTPDNSServerConfiguration(configReader: config.scoped(to: "server"))
        #expect(server.port == 9053 && server.idleTimeout == .seconds(20) && server.rateLimitPerSecond == 50.5)
        let interceptor = try await InterceptingHTTPClient.Configuration(configReader: config.scoped(to: "interceptor"))
        #expect(interceptor.connectTimeout == .milliseconds(750) && interceptor.addressOrder == .ipv6First && interceptor.families == .ipv4)
        let metrics = try await MetricsHTTPServer.Configuration(configReader: config.scoped(to: "metrics"))
        #expect(metrics.port == 9100 && metrics.idleTimeout == .seconds(5))
    }

    /// A value the provider holds but cannot give as a number is refused with the key, not replaced by the default,
    /// which swift-configuration's plain getters would do.
    @Test func aValueThatCannotBeReadIsAnErrorNotTheDefault() async throws {
        let config = environment(["CACHE_MAX_ENTRIES": "lots", "CARES_TRANSPORT": "quic", "SERVICE_SERVERS": "https://127.0.0.1,ftp://x"])
        let cacheError = await #expect(throws: ConfigurationError.self) {
            try await ResolverCache.Configuration(configReader: config.scoped(to: "cache"))
        }
        #expect(cacheError?.key == "maxEntries" && cacheError?.cause != nil, "\(String(describing: cacheError))")
        let caresError = await #expect(throws: ConfigurationError.self) {
            try await CAresSource.Configuration(configReader: config.scoped(to: "cares"))
        }
        #expect(caresError?.key == "transport" && caresError?.reason.contains("'quic'") == true, "\(String(describing: caresError))")
        let serviceError = await #expect(throws: ConfigurationError.self) {
            try await ServiceConnection(configReader: config.scoped(to: "service"))
        }
        #expect(serviceError?.key == "servers" && serviceError?.reason.contains("ftp://x") == true, "\(String(describing: serviceError))")
        let negative = environment(["SERVER_IDLE_TIMEOUT_SECONDS": "-1"])
        let serverError = await #expect(throws: ConfigurationError.self) {
            try await HTTPDNSServerConfiguration(configReader: negative.scoped(to: "server"))
        }
        #expect(serverError?.key == "idleTimeoutSeconds", "\(String(describing: serverError))")
    }

    @Test func aServiceConnectionNeedsServersAndAnAttemptWithinTheBudget() async throws {
        let none = await #expect(throws: ConfigurationError.self) { try await ServiceConnection(configReader: reader([:])) }
        #expect(none?.key == "servers")
        let past = await #expect(throws: ConfigurationError.self) {
            try await ServiceConnection(
                configReader: reader([
                    "servers": .init(.stringArray(["https://127.0.0.1"]), isSecret: false), "budgetMs": 100, "attemptTimeoutMs": 200,
                ])
            )
        }
        #expect(past?.key == "attemptTimeoutMs" && past?.code == .inconsistent, "\(String(describing: past))")
    }

    /// The command line gives each library its section: a key a user writes (`cacheMinTTLSeconds`, its variable, its
    /// flag) reaches the library under the library's key (`cache.minTTLSeconds`).
    @Test func theCommandLineComposesTheLibrariesReaders() async throws {
        let reader = try SettingsReader(
            settings: ServeSettings.table,
            file: nil,
            environment: ["HTTPDNS_CACHE_MIN_TTL_SECONDS": "9", "HTTPDNS_UPSTREAM_TIMEOUT_MS": "1200"],
            flags: ["maxOpenStreams": ["77"]]
        )
        let settings = try await ServeSettings(reading: reader)
        #expect(settings.cache.minTTL == .seconds(9) && settings.upstream.timeout == .milliseconds(1200) && settings.server.maxOpenStreams == 77)
    }
}
