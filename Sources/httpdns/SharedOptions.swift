import ArgumentParser
import HTTPDNSSettings

// The flags `resolve`, `health` and `fetch` share, declared once: one spelling and one help text each, true for
// every command that takes it. Each group puts what was given into a command's flags by setting key; the keys are
// `ResolveSettings`'s, which `HealthSettings` spells alike (a key a command's table lacks would be ignored).

/// How the HTTPDNS service, or the DNS-over-TLS servers, are reached: `--server`, `--server-name`, `--cacert`, `--pin`.
struct ServiceOptions: ParsableArguments {
    @Option(
        name: .customLong("server"),
        help: "An address of the HTTPDNS service, https://IP[:PORT][/PATH], or a DNS-over-TLS server, tls://IP[:PORT]; repeatable."
    )
    var servers: [String] = []

    @Option(
        name: .customLong("server-name"),
        help: "The name the service's certificate holds, also sent as SNI; without it, the certificate must hold the address."
    )
    var serverName: String?

    @Option(help: "A PEM file of certificates to trust besides the system's.")
    var cacert: String?

    @Option(name: .customLong("pin"), help: "An SPKI SHA-256 pin of the service's key, sha256//BASE64; repeatable.")
    var pins: [String] = []

    /// `servers`, `serverName`, `cacert` and `pins`, those given.
    func add(to flags: inout [String: [String]]) {
        flags[ResolveSettings.servers.key] = servers.isEmpty ? nil : servers
        flags[ResolveSettings.serverName.key] = serverName.map { [$0] }
        flags[ResolveSettings.cacert.key] = cacert.map { [$0] }
        flags[ResolveSettings.pins.key] = pins.isEmpty ? nil : pins
    }
}

/// How long the service is given: `--budget-ms`, `--attempt-timeout-ms`.
struct ServiceTimingOptions: ParsableArguments {
    @Option(
        name: .customLong("budget-ms"),
        help: "How long the service may take for a lookup, over all its addresses, in milliseconds (default 2000)."
    )
    var budgetMs: String?

    @Option(
        name: .customLong("attempt-timeout-ms"),
        help: "How long one address of the service may take, in milliseconds, at most the budget (default 1000)."
    )
    var attemptTimeoutMs: String?

    /// `budgetMs` and `attemptTimeoutMs`, those given.
    func add(to flags: inout [String: [String]]) {
        flags[ResolveSettings.budgetMs.key] = budgetMs.map { [$0] }
        flags[ResolveSettings.attemptTimeoutMs.key] = attemptTimeoutMs.map { [$0] }
    }
}

/// The DNS servers c-ares asks: `--dns`, `--tcp`.
struct DNSOptions: ParsableArguments {
    @Option(
        name: .customLong("dns"),
        help: "A DNS server for c-ares, IP[:PORT] ([IPv6]:PORT); repeatable. Default: those of /etc/resolv.conf."
    )
    var dnsServers: [String] = []

    @Flag(help: "Ask the DNS servers over TCP instead of UDP.")
    var tcp = false

    /// `dns` and `tcp`, those given.
    func add(to flags: inout [String: [String]]) {
        flags[ResolveSettings.dns.key] = dnsServers.isEmpty ? nil : dnsServers
        flags[ResolveSettings.tcp.key] = tcp ? ["true"] : nil
    }
}

/// What the policy asks when the service fails: `--fallback`.
struct FallbackOptions: ParsableArguments {
    @Option(
        name: .customLong("fallback"),
        help: "What the policy asks when the service fails: cares, system; repeatable, in order (default both)."
    )
    var fallbacks: [String] = []

    /// `fallbacks`, when given.
    func add(to flags: inout [String: [String]]) {
        flags[ResolveSettings.fallbacks.key] = fallbacks.isEmpty ? nil : fallbacks
    }
}
