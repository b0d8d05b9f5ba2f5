import HTTPDNSCore
import HTTPDNSSettings
import Testing

@Suite struct HealthSettingsTests {
    func settings(environment: [String: String] = [:], flags: [String: [String]] = [:]) async throws -> HealthSettings {
        try await HealthSettings(reading: SettingsReader(settings: HealthSettings.table, file: nil, environment: environment, flags: flags))
    }

    func error(environment: [String: String] = [:], flags: [String: [String]] = [:]) async -> String? {
        do {
            _ = try await settings(environment: environment, flags: flags)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func theCommandLineDocumentationListsEveryKeyAndNoOther() throws {
        try ServeSettingsTests.expectDocumented(HealthSettings.table, in: "docs/CLI.md", section: "## `httpdns health`")
    }

    /// docs/CONFIGURATION.md lists every command's keys, each under its command.
    @Test func theConfigurationReferenceListsEveryCommandsKeys() throws {
        try ServeSettingsTests.expectDocumented(ServeSettings.table, in: "docs/CONFIGURATION.md", section: "## `httpdns serve`")
        try ServeSettingsTests.expectDocumented(ResolveSettings.table, in: "docs/CONFIGURATION.md", section: "## `httpdns resolve`")
        try ServeSettingsTests.expectDocumented(HealthSettings.table, in: "docs/CONFIGURATION.md", section: "## `httpdns health`")
    }

    @Test func theDefaults() async throws {
        let settings = try await settings()
        #expect(settings.service == nil && settings.dot == nil)
        #expect(settings.dnsServers.isEmpty, "the system's, read by the command")
        #expect(settings.hosts == [try HostName("example.com")])
        #expect(settings.timeout == .milliseconds(2000))
        #expect(settings.cares.timeout == .milliseconds(2000) / 3 && settings.cares.tries == 2, "two tries, the second twice the first, fit in a probe's time")
        #expect(settings.expiryWarningDays == 14)
        #expect(settings.watch == nil)
        #expect(!settings.json)
    }

    @Test func anEmptyListOfProbeNamesIsRefused() async {
        let error = await error(environment: ["HTTPDNS_HOSTS": ","])
        #expect(error?.contains("at least one probe name") == true, "\(error ?? "no error")")
    }

    @Test func listsComeFromTheEnvironmentCommaSeparated() async throws {
        let settings = try await settings(environment: [
            "HTTPDNS_HOSTS": "A.example, b.example.", "HTTPDNS_DNS": "127.0.0.1:5353,[::1]:53",
            "HTTPDNS_ALLOW_PRIVATE": ".corp.example", "HTTPDNS_SERVERS": "https://127.0.0.1:8443",
        ])
        #expect(settings.hosts == [try HostName("a.example"), try HostName("b.example")])
        #expect(settings.dnsServers.map(\.description) == ["127.0.0.1:5353", "[::1]:53"])
        #expect(settings.allowPrivate.matches(try HostName("db.corp.example")))
        #expect(settings.service?.servers.map(\.description) == ["https://127.0.0.1:8443"])
        #expect(settings.service?.budget == .milliseconds(2000))
    }

    @Test(arguments: [
        (["hosts": ["a_b.example"]], "host name"),
        (["allowPrivate": ["*.example"]], "host pattern"),
        (["cacert": ["/ca.pem"]], "describe a service"),
        (["expiryWarningDays": ["0"]], "positive"),
        (["dns": ["resolver.example"]], "server"),
        (["watchSeconds": ["86401"]], "at most 86400"),
        (["timeoutMs": ["60001"]], "at most 60000"),
    ])
    func badSettingsSayWhatIsWrong(_ flags: [String: [String]], _ expected: String) async {
        let error = await error(flags: flags)
        #expect(error?.contains(expected) == true, "\(error ?? "no error")")
    }

    /// `tls://` servers are DNS-over-TLS servers to check, with the service's keys for their certificate and the probe's
    /// time for each lookup; from a flag or `HTTPDNS_SERVERS` alike.
    @Test func tlsServersAreCheckedOverDNSOverTLS() async throws {
        let flags = try await settings(flags: [
            "servers": ["tls://127.0.0.1:8853", "tls://[::1]"], "serverName": ["dns.example"], "cacert": ["/tmp/ca.pem"], "timeoutMs": ["700"],
        ])
        #expect(flags.service == nil)
        let dot = try #require(flags.dot)
        #expect(dot.servers.map(\.description) == ["tls://127.0.0.1:8853", "tls://[::1]"])
        #expect(dot.serverName == "dns.example" && dot.extraTrustRootsPEMFile == "/tmp/ca.pem")
        #expect(dot.budget == .milliseconds(700) && dot.attemptTimeout == .milliseconds(700))
        let environment = try await settings(environment: ["HTTPDNS_SERVERS": "tls://127.0.0.1:8853", "HTTPDNS_PINS": "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="])
        #expect(environment.dot?.servers.map(\.port) == [8853] && environment.dot?.pins.count == 1 && environment.service == nil)
    }

    @Test func tlsServersAndServicesAreNotMixed() async {
        let mixed = await error(flags: ["servers": ["https://127.0.0.1:8443", "tls://127.0.0.1:8853"]])
        #expect(mixed?.contains("--server mixes DNS-over-TLS servers (tls://127.0.0.1:8853) and HTTPDNS services (https://127.0.0.1:8443)") == true, "\(mixed ?? "no error")")
        let name = await error(environment: ["HTTPDNS_SERVERS": "tls://dns.example"])
        #expect(name?.contains("HTTPDNS_SERVERS holds a DNS-over-TLS server that cannot be used") == true, "\(name ?? "no error")")
    }
}
