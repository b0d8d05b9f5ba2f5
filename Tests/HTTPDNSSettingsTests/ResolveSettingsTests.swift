import HTTPDNSCore
import HTTPDNSSettings
import Testing

/// `httpdns resolve`'s settings: one table, three places, and the rules on which keys go with which source.
@Suite struct ResolveSettingsTests {
    func settings(environment: [String: String] = [:], flags: [String: [String]] = [:]) async throws -> ResolveSettings {
        try await ResolveSettings(reading: SettingsReader(settings: ResolveSettings.table, file: nil, environment: environment, flags: flags))
    }

    func error(environment: [String: String] = [:], flags: [String: [String]] = [:]) async -> String {
        do {
            _ = try await settings(environment: environment, flags: flags)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func theCommandLineDocumentationListsEveryKeyAndNoOther() throws {
        try ServeSettingsTests.expectDocumented(ResolveSettings.table, in: "docs/CLI.md", section: "## `httpdns resolve`")
    }

    @Test func theDefaultsAreCAresForBothFamilies() async throws {
        let settings = try await settings()
        #expect(settings.source == .cares && settings.service == nil && settings.families == .all && !settings.json)
        #expect(settings.fallbacks == ["cares", "system"])
    }

    @Test func aServiceIsMadeFromItsKeysAndVariablesListWithCommas() async throws {
        let settings = try await settings(
            environment: [
                "HTTPDNS_SOURCE": "auto", "HTTPDNS_SERVERS": "https://127.0.0.1:8443, https://[::1]:8443/base",
                "HTTPDNS_PINS": "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "HTTPDNS_FALLBACKS": "cares",
            ],
            flags: ["serverName": ["dns.example"], "budgetMs": ["500"], "type": ["AAAA"]]
        )
        let service = try #require(settings.service)
        #expect(service.servers.map(\.description) == ["https://127.0.0.1:8443", "https://[::1]:8443/base"])
        #expect(service.serverName == "dns.example" && service.pins.count == 1)
        #expect(service.budget == .milliseconds(500) && service.attemptTimeout == .milliseconds(500), "an attempt never outlasts the budget")
        #expect(settings.fallbacks == ["cares"] && settings.families == .ipv6)
    }

    /// An attempt may be given any time up to the budget, the default one or the one set; past it is refused.
    @Test func anAttemptTimeoutIsAtMostTheBudget() async throws {
        let service = ["source": ["doh"], "servers": ["https://127.0.0.1"]]
        let longer = try #require(try await settings(flags: service.merging(["attemptTimeoutMs": ["1500"]]) { $1 }).service)
        #expect(longer.attemptTimeout == .milliseconds(1500) && longer.budget == .milliseconds(2000))
        let both = try #require(
            try await settings(environment: ["HTTPDNS_BUDGET_MS": "10000", "HTTPDNS_ATTEMPT_TIMEOUT_MS": "10000"], flags: service).service
        )
        #expect(both.attemptTimeout == .seconds(10) && both.budget == .seconds(10))
        let past = await error(flags: service.merging(["attemptTimeoutMs": ["2500"]]) { $1 })
        let expected = "--attempt-timeout-ms (attemptTimeoutMs, HTTPDNS_ATTEMPT_TIMEOUT_MS) must be at most the budget, --budget-ms (2000 ms), not 2500"
        #expect(past.contains(expected), "\(past)")
        #expect(await error(flags: ["attemptTimeoutMs": ["500"]]).contains("--attempt-timeout-ms"), "refused for c-ares, which it does not set")
    }

    /// A repeated flag of a list keeps every value, in order: two addresses, the current pin and the next.
    @Test func repeatedFlagsKeepEveryValue() async throws {
        let current = "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        let next = "sha256//" + String(repeating: "A", count: 43) + "="
        let settings = try await settings(flags: [
            "source": ["auto"], "servers": ["https://127.0.0.1:8443", "https://127.0.0.2:8443"], "pins": [current, next],
            "fallbacks": ["system", "cares"], "dns": ["127.0.0.1:53", "127.0.0.2:53"],
        ])
        let service = try #require(settings.service)
        #expect(service.servers.map(\.description) == ["https://127.0.0.1:8443", "https://127.0.0.2:8443"])
        #expect(service.pins.map(\.description) == [current, next])
        #expect(settings.fallbacks == ["system", "cares"])
        #expect(settings.cares.servers.map(\.description) == ["127.0.0.1:53", "127.0.0.2:53"])
    }

    @Test func keysThatDoNotFitTheSourceAreRefused() async {
        #expect(await error(flags: ["source": ["httpdns"]]).contains("--source httpdns asks an HTTPDNS service"))
        #expect(await error(flags: ["cacert": ["/tmp/ca.pem"]]).contains("apply to --source auto, httpdns, doh or dot, not cares"))
        #expect(await error(flags: ["source": ["system"], "dns": ["127.0.0.1"]]).contains("--dns (dns, HTTPDNS_DNS) applies to --source cares or auto"))
        #expect(await error(flags: ["fallbacks": ["system"]]).contains("--fallback applies to --source auto"))
        #expect(await error(flags: ["tries": ["0"]]).contains("--tries must be"))
        #expect(await error(environment: ["HTTPDNS_TYPE": "MX"]).contains("HTTPDNS_TYPE must be A, AAAA or ANY, not 'MX'"))
        let caresForDoH = await error(environment: ["HTTPDNS_TRIES": "3"], flags: ["source": ["doh"], "servers": ["https://127.0.0.1"]])
        #expect(caresForDoH.contains("--tries (tries, HTTPDNS_TRIES) set c-ares, which --source doh does not ask"), "\(caresForDoH)")
        let caresForSystemOnly = await error(flags: ["source": ["auto"], "servers": ["https://127.0.0.1"], "fallbacks": ["system"], "dns": ["127.0.0.1"]])
        #expect(caresForSystemOnly.contains("--dns (dns, HTTPDNS_DNS) set c-ares, which --source auto with --fallback system does not ask"), "\(caresForSystemOnly)")
    }

    // MARK: DNS over TLS

    /// `--source dot` with `tls://` servers: the same keys as the service's, read by `DoTSource.Configuration`, with
    /// the same rule for the attempt and the budget; no HTTPDNS service is made.
    @Test func dotReadsTheServiceKeysForTLSServers() async throws {
        let pin = "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        let settings = try await settings(flags: [
            "source": ["dot"], "servers": ["tls://127.0.0.1:8853", "tls://[::1]", " tls://127.0.0.2:853 "], "serverName": ["dns.example"],
            "cacert": ["/tmp/ca.pem"], "pins": [pin], "budgetMs": ["500"],
        ])
        #expect(settings.source == .dot && settings.service == nil)
        let dot = try #require(settings.dot)
        #expect(dot.servers.map(\.description) == ["tls://127.0.0.1:8853", "tls://[::1]", "tls://127.0.0.2"], "port 853 by default")
        #expect(dot.servers.map(\.port) == [8853, 853, 853])
        #expect(dot.serverName == "dns.example" && dot.extraTrustRootsPEMFile == "/tmp/ca.pem" && dot.pins.map(\.description) == [pin])
        #expect(dot.budget == .milliseconds(500) && dot.attemptTimeout == .milliseconds(500), "an attempt never outlasts the budget")
        let past = await error(flags: ["source": ["dot"], "servers": ["tls://127.0.0.1"], "attemptTimeoutMs": ["2500"]])
        #expect(past.contains("--attempt-timeout-ms (attemptTimeoutMs, HTTPDNS_ATTEMPT_TIMEOUT_MS) must be at most the budget, --budget-ms (2000 ms), not 2500"), "\(past)")
    }

    /// `auto` with `tls://` servers asks them first, with today's fallbacks; with `https://` ones, the service.
    @Test func autoAsksTheTLSServersWhenThoseAreTheServers() async throws {
        let dot = try await settings(flags: ["source": ["auto"], "servers": ["tls://127.0.0.1:8853"], "fallbacks": ["cares"], "dns": ["127.0.0.1:53"]])
        #expect(dot.dot?.servers.map(\.description) == ["tls://127.0.0.1:8853"] && dot.service == nil)
        #expect(dot.fallbacks == ["cares"] && dot.cares.servers.map(\.description) == ["127.0.0.1:53"])
        let https = try await settings(flags: ["source": ["auto"], "servers": ["https://127.0.0.1:8443"]])
        #expect(https.dot == nil && https.service?.servers.map(\.description) == ["https://127.0.0.1:8443"])
        #expect(https.fallbacks == ["cares", "system"])
    }

    /// `HTTPDNS_SERVERS` takes `tls://` servers as it takes service URLs, comma-separated, and from the file too.
    @Test func theServersVariableTakesTLSServers() async throws {
        let variables = try await settings(environment: [
            "HTTPDNS_SOURCE": "auto", "HTTPDNS_SERVERS": "tls://127.0.0.1:8853, tls://[::1]:853", "HTTPDNS_SERVER_NAME": "dns.example",
            "HTTPDNS_BUDGET_MS": "3000", "HTTPDNS_ATTEMPT_TIMEOUT_MS": "1500",
        ])
        let dot = try #require(variables.dot)
        #expect(dot.servers.map(\.description) == ["tls://127.0.0.1:8853", "tls://[::1]"])
        #expect(dot.serverName == "dns.example" && dot.budget == .seconds(3) && dot.attemptTimeout == .milliseconds(1500))
        #expect(variables.service == nil)
        let flagOverVariable = try await settings(environment: ["HTTPDNS_SERVERS": "tls://127.0.0.1"], flags: ["source": ["doh"], "servers": ["https://127.0.0.1"]])
        #expect(flagOverVariable.dot == nil && flagOverVariable.service != nil, "a flag replaces the variable's whole list")
    }

    /// What cannot go together is refused, saying which kind of server each source asks.
    @Test func sourcesAndServersOfTheOtherKindAreRefused() async {
        let mixed = await error(flags: ["source": ["auto"], "servers": ["tls://127.0.0.1", "https://127.0.0.1:8443"]])
        #expect(mixed.contains("--server mixes DNS-over-TLS servers (tls://127.0.0.1) and HTTPDNS services (https://127.0.0.1:8443)"), "\(mixed)")
        #expect(mixed.contains("not both"), "\(mixed)")
        let mixedVariable = await error(environment: ["HTTPDNS_SOURCE": "auto", "HTTPDNS_SERVERS": "https://127.0.0.1,tls://127.0.0.2"])
        #expect(mixedVariable.contains("environment variable HTTPDNS_SERVERS mixes DNS-over-TLS servers"), "\(mixedVariable)")
        for source in ["httpdns", "doh"] {
            let tls = await error(flags: ["source": [source], "servers": ["tls://127.0.0.1:8853"]])
            #expect(tls.contains("--source \(source) asks an HTTPDNS service, https://IP[:PORT][/PATH]"), "\(tls)")
            #expect(tls.contains("names a DNS-over-TLS server, tls://127.0.0.1:8853: ask it with --source dot or auto"), "\(tls)")
        }
        let https = await error(flags: ["source": ["dot"], "servers": ["https://127.0.0.1:8443"]])
        #expect(https.contains("--source dot asks DNS-over-TLS servers, tls://IP[:PORT]"), "\(https)")
        #expect(https.contains("names an HTTPDNS service, https://127.0.0.1:8443: ask it with --source httpdns, doh or auto"), "\(https)")
        let none = await error(flags: ["source": ["dot"]])
        #expect(none.contains("--source dot asks DNS-over-TLS servers: name one with --server tls://IP[:PORT]"), "\(none)")
        let forCAres = await error(flags: ["servers": ["tls://127.0.0.1"]])
        #expect(forCAres.contains("apply to --source auto, httpdns, doh or dot, not cares"), "\(forCAres)")
    }

    /// A bad `tls://` server is refused as precisely as a bad service URL, and another scheme names both.
    @Test func aBadTLSServerSaysWhatIsWrong() async {
        let cases: [(String, String)] = [
            ("tls://dns.example", "--server holds a DNS-over-TLS server that cannot be used: invalid service URL 'tls://dns.example': 'dns.example' is not an IP address"),
            ("tls://127.0.0.1:0", "'0' is not a port (1 to 65535)"),
            ("tls://127.0.0.1/dns-query", "DNS over TLS has no path"),
            ("tls://[::1", "an IPv6 address needs its closing ]"),
            ("dns://127.0.0.1", "must start with https:// (an HTTPDNS service; http:// only written out) or tls:// (a DNS-over-TLS server)"),
        ]
        for (server, expected) in cases {
            let message = await error(flags: ["source": ["dot"], "servers": [server]])
            #expect(message.contains(expected), "\(server): \(message)")
        }
        let https = await error(flags: ["source": ["doh"], "servers": ["https://dns.example"]])
        #expect(https.contains("--server holds a service URL that cannot be used: invalid service URL 'https://dns.example'"), "\(https)")
    }
}
