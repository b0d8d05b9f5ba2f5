import Configuration
import HTTPDNSClient
import HTTPDNSCore
import Testing

/// `DoTSource.Configuration(configReader:)`: the service's keys, read by the same rules, and the connections' own.
@Suite struct DoTConfigReaderTests {
    func reader(_ values: [String: ConfigValue]) -> ConfigReader {
        ConfigReader(provider: InMemoryProvider(values: Dictionary(uniqueKeysWithValues: values.map { (AbsoluteConfigKey($0.key.split(separator: ".").map(String.init)), $0.value) })))
    }

    @Test func readsEveryKeyOfItsSection() async throws {
        let config = reader([
            "dot.servers": .init(.stringArray(["tls://127.0.0.1:8853", "tls://[::1]"]), isSecret: false), "dot.serverName": "dns.example",
            "dot.extraTrustRootsPEMFile": "/tmp/ca.pem",
            "dot.pins": .init(.stringArray(["sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="]), isSecret: false),
            "dot.budgetMs": 600, "dot.coolDownMs": 250, "dot.maxCoolDownMs": 5000, "dot.idleTimeoutMs": 9000, "dot.maxQueriesInFlight": 16,
            "dot.maxQueriesWaiting": 32, "dot.name": "resolver",
        ])
        let dot = try await DoTSource.Configuration(configReader: config.scoped(to: "dot"))
        #expect(dot.servers.map(\.description) == ["tls://127.0.0.1:8853", "tls://[::1]"])
        #expect(dot.serverName == "dns.example" && dot.extraTrustRootsPEMFile == "/tmp/ca.pem" && dot.pins.count == 1)
        #expect(dot.budget == .milliseconds(600) && dot.attemptTimeout == .milliseconds(600), "an attempt never outlasts the budget")
        #expect(dot.coolDown == .milliseconds(250) && dot.maxCoolDown == .seconds(5) && dot.idleTimeout == .seconds(9))
        #expect(dot.maxQueriesInFlight == 16 && dot.maxQueriesWaiting == 32 && dot.name == "resolver")
        try dot.validate()
        let defaults = try await DoTSource.Configuration(configReader: reader(["servers": .init(.stringArray(["tls://127.0.0.1"]), isSecret: false)]))
        #expect(defaults == DoTSource.Configuration(servers: [try DoTEndpoint(parsing: "tls://127.0.0.1")]), "an unset key keeps its default")
    }

    @Test func serversAreRequiredAndMustBeTLSServers() async throws {
        let none = await #expect(throws: ConfigurationError.self) { try await DoTSource.Configuration(configReader: reader([:])) }
        #expect(none?.key == "servers" && none?.reason.contains("tls://IP[:PORT]") == true, "\(String(describing: none))")
        let https = await #expect(throws: ConfigurationError.self) {
            try await DoTSource.Configuration(configReader: reader(["servers": .init(.stringArray(["https://127.0.0.1"]), isSecret: false)]))
        }
        #expect(https?.key == "servers" && https?.reason.contains("'https://127.0.0.1'") == true && https?.cause != nil, "\(String(describing: https))")
    }

    @Test func anAttemptLongerThanTheBudgetIsRefused() async throws {
        let servers = ConfigValue(.stringArray(["tls://127.0.0.1"]), isSecret: false)
        let error = await #expect(throws: ConfigurationError.self) {
            try await DoTSource.Configuration(configReader: reader(["servers": servers, "budgetMs": 500, "attemptTimeoutMs": 800]))
        }
        #expect(error?.key == "attemptTimeoutMs" && error?.code == .inconsistent, "\(String(describing: error))")
        let within = try await DoTSource.Configuration(configReader: reader(["servers": servers, "budgetMs": 5000, "attemptTimeoutMs": 3000]))
        #expect(within.budget == .seconds(5) && within.attemptTimeout == .seconds(3))
        let negative = await #expect(throws: ConfigurationError.self) {
            try await DoTSource.Configuration(configReader: reader(["servers": servers, "idleTimeoutMs": -1]))
        }
        #expect(negative?.key == "idleTimeoutMs", "\(String(describing: negative))")
    }
}
