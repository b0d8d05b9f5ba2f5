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
        #expect(await error(flags: ["cacert": ["/tmp/ca.pem"]]).contains("apply to --source auto, httpdns or doh, not cares"))
        #expect(await error(flags: ["source": ["system"], "dns": ["127.0.0.1"]]).contains("--dns (dns, HTTPDNS_DNS) applies to --source cares or auto"))
        #expect(await error(flags: ["fallbacks": ["system"]]).contains("--fallback applies to --source auto"))
        #expect(await error(flags: ["tries": ["0"]]).contains("--tries must be"))
        #expect(await error(environment: ["HTTPDNS_TYPE": "MX"]).contains("HTTPDNS_TYPE must be A, AAAA or ANY, not 'MX'"))
        let caresForDoH = await error(environment: ["HTTPDNS_TRIES": "3"], flags: ["source": ["doh"], "servers": ["https://127.0.0.1"]])
        #expect(caresForDoH.contains("--tries (tries, HTTPDNS_TRIES) set c-ares, which --source doh does not ask"), "\(caresForDoH)")
        let caresForSystemOnly = await error(flags: ["source": ["auto"], "servers": ["https://127.0.0.1"], "fallbacks": ["system"], "dns": ["127.0.0.1"]])
        #expect(caresForSystemOnly.contains("--dns (dns, HTTPDNS_DNS) set c-ares, which --source auto with --fallback system does not ask"), "\(caresForSystemOnly)")
    }
}
