import Foundation
import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSTesting
import HTTPDNSWire
import Metrics
import MetricsTestKit
import Testing

/// The threat model's scenarios built for real on loopback: a dnsmasq that lies plays the local resolver; our own
/// `httpdns serve` over TLS, with an honest dnsmasq upstream, is the trusted service; 127.0.0.0/8 stands in for
/// public addresses (so the guard's private ranges leave it out).
@Suite("Hijack scenarios against a lying dnsmasq", .serialized, .timeLimit(.minutes(2)))
struct HijackScenarioTests {
    static let honest = [
        "host-record=bank.test,127.0.0.5,300",
        "host-record=shop.test,127.0.0.6,300",
        "local=/invalid/",
    ]
    /// H3: a private address for a public name; H1: an address for a name that does not exist.
    /// news.test: an answer the guard lets through (192.0.2.0/24 is not among the private ranges).
    static let lies = [
        "address=/news.test/192.0.2.81",
        "address=/bank.test/10.0.0.66",
        "address=/shop.test/10.0.0.67",
        "address=/missing.test/127.0.0.88",
    ]

    /// The peers of every scenario: an honest dnsmasq behind `httpdns serve` over TLS (the trusted service), a lying
    /// dnsmasq (the local resolver), and the service's certificate and key, which other TLS peers may present too.
    struct Peers {
        let service: ServiceProcess
        let liar: DNSMasqServer
        let certificate: String
        let key: String
        var serviceURL: String { "https://127.0.0.1:\(service.port)" }
    }

    static func withPeers(_ body: (Peers) async throws -> Void) async throws {
        try await withDNSMasq(records: honest) { upstream in
            try await withDNSMasq(records: lies) { liar in
                try await NativeServiceSourceTests.withCertificate("IP:127.0.0.1") { certificate, key in
                    let service = try await ServiceProcess.start(
                        ["--upstream", upstream.address.description, "--tls-cert", certificate, "--tls-key", key],
                        environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "0"]
                    )
                    defer { service.stop() }
                    try await body(Peers(service: service, liar: liar, certificate: certificate, key: key))
                }
            }
        }
    }

    /// The policy over DoH to `servers` (trusted; the service alone by default) and c-ares to the lying dnsmasq
    /// (fallback), shut down after `body`.
    static func withResolver(
        _ peers: Peers,
        servers: [String]? = nil,
        attemptTimeout: Duration = .seconds(10),
        strict: [String] = [],
        clock: ManualMonotonicClock = ManualMonotonicClock(),
        _ body: (HostResolver) async throws -> Void
    ) async throws {
        var doh = DoHSource.Configuration(servers: try (servers ?? [peers.serviceURL]).map { try ServiceEndpoint(parsing: $0) })
        doh.connection.extraTrustRootsPEMFile = peers.certificate
        // Generous: these tests check which source answers, not how fast, on two shared cores.
        doh.connection.budget = .seconds(20)
        doh.connection.attemptTimeout = attemptTimeout
        let trusted = try DoHSource(configuration: doh)
        let local = try CAresSource(configuration: .init(servers: [peers.liar.address]))
        do {
            var configuration = HostResolver.Configuration()
            configuration.guardConfiguration.privateRanges = IPRange.privateAndReserved.filter { $0.description != "127.0.0.0/8" }
            configuration.strictHosts = try HostPatterns(strict)
            try await body(try HostResolver(trusted: trusted, fallbacks: [local], configuration: configuration, clock: clock))
        } catch {
            await trusted.shutdown()
            await local.shutdown()
            throw error
        }
        await trusted.shutdown()
        await local.shutdown()
    }

    /// The policy over DoH to the service (trusted) and c-ares to the lying dnsmasq (fallback).
    static func withScenario(
        strict: [String] = [],
        clock: ManualMonotonicClock = ManualMonotonicClock(),
        _ body: (HostResolver, ServiceProcess, DNSMasqServer) async throws -> Void
    ) async throws {
        try await withPeers { peers in
            try await withResolver(peers, strict: strict, clock: clock) { resolver in
                try await body(resolver, peers.service, peers.liar)
            }
        }
    }

    /// With the trusted service up, its answers win and the local resolver is never asked.
    @Test func theTrustedAnswerWinsAndTheLiarIsNotAsked() async throws {
        try await Self.withScenario { resolver, _, liar in
            let bank = try await resolver.resolve(try HostName("bank.test"), families: .ipv4)
            #expect(bank.resolution.ipv4 == [IPv4Address("127.0.0.5")!] && !bank.fallback && bank.source == "doh")
            await #expect(throws: ResolutionError.self) { try await resolver.resolve(try HostName("missing.test"), families: .ipv4) }
            #expect(try liar.queryCount("bank.test", type: "A") == 0)
            #expect(try liar.queryCount("missing.test", type: "A") == 0)
        }
    }

    /// H3 and H5: the trusted service goes down; the local resolver's private answer for a public name is refused
    /// and not cached; each fallback and each refusal is counted.
    @Test func withTheServiceDownAPrivateAnswerIsRefused() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            try await Self.withScenario { resolver, service, liar in
                service.stop()
                let error = await #expect(throws: ResolutionError.self) { try await resolver.resolve(try HostName("shop.test"), families: .ipv4) }
                #expect(error?.code == .rejectedByGuard, "\(String(describing: error))")
                #expect(error?.verdict == HijackVerdict(level: .hijacked, reason: .privateAnswer))
                _ = await #expect(throws: ResolutionError.self) { try await resolver.resolve(try HostName("shop.test"), families: .ipv4) }
                let asked = try liar.queryCount("shop.test", type: "A")
                #expect(asked == 2, "refused, so never cached: asked again")
                #expect(resolver.fallbacks[0].stats.entries == 0)
                #expect(metrics.counterTotal(label: "httpdns_fallbacks_total", dimensions: [("from", "doh"), ("to", "cares")]) == 2)
                #expect(metrics.counterTotal(label: "httpdns_hijack_suspected_total", dimensions: [("reason", "private-answer")]) == 2)
            }
        }
    }

    /// H5: the service's first addresses are slow (a listener that never answers) and return garbage (openssl's
    /// s_server, answering every request with an HTML page): the next address answers within the budget. With
    /// the service down too, the fallback answers, marked and counted; with the fallback down as well, the error
    /// gives every source's reason.
    @Test func failoverThroughSlowAndGarbageAddressesThenTheFallbackThenAClearError() async throws {
        let metrics = TestMetrics()
        let slow = try SilentTCPListener()
        try await withMetricsFactory(metrics) {
            try await Self.withPeers { peers in
                let garbage = try await GarbageHTTPSServer.start(certificate: peers.certificate, key: peers.key)
                defer { garbage.stop() }
                let servers = ["https://127.0.0.1:\(slow.port)", "https://127.0.0.1:\(garbage.port)", peers.serviceURL]
                try await Self.withResolver(peers, servers: servers, attemptTimeout: .seconds(1)) { resolver in
                    let bank = try await resolver.resolve(try HostName("bank.test"), families: .ipv4)
                    #expect(bank.source == "doh" && !bank.fallback && bank.resolution.ipv4 == [IPv4Address("127.0.0.5")!])
                    #expect(try peers.liar.queryCount("bank.test", type: "A") == 0)

                    peers.service.stop()
                    let news = try await resolver.resolve(try HostName("news.test"), families: .ipv4)
                    #expect(news.source == "cares" && news.fallback && news.verdict == .ok)
                    #expect(news.resolution.ipv4 == [IPv4Address("192.0.2.81")!])
                    #expect(metrics.counterTotal(label: "httpdns_fallbacks_total", dimensions: [("from", "doh"), ("to", "cares")]) == 1)

                    peers.liar.stop()
                    let error = await #expect(throws: ResolutionError.self) { try await resolver.resolve(try HostName("gone.test"), families: .ipv4) }
                    let message = error?.message ?? ""
                    #expect(message.hasPrefix("no source could resolve gone.test: doh: "), "\(message)")
                    #expect(message.contains("; cares: "), "\(message)")
                }
            }
        }
    }

    /// H1 and H4: the trusted service said NXDOMAIN; it goes down and the answer expires: the NXDOMAIN is still
    /// what is served (stale, RFC 8767), and the rewritten address never wins.
    @Test func anNXDOMAINFromTheTrustedServiceOutlivesItsOutage() async throws {
        let clock = ManualMonotonicClock()
        try await Self.withScenario(clock: clock) { resolver, service, liar in
            await #expect(throws: ResolutionError.self) { try await resolver.resolve(try HostName("missing.test"), families: .ipv4) }
            service.stop()
            clock.advance(seconds: 600)
            let stale = try await resolver.resolve(try HostName("missing.test"), families: .ipv4)
            #expect(stale.resolution.ipv4.isEmpty && stale.resolution.stale && stale.resolution.negativeAnswer == .nameNotFound)
            #expect(!stale.fallback)
            #expect(try liar.queryCount("missing.test", type: "A") == 0)
        }
    }

    /// H7: a strict host never reaches the local resolver, even with the service down.
    @Test func aStrictHostFailsRatherThanAskTheLocalResolver() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            try await Self.withScenario(strict: [".test"]) { resolver, service, liar in
                service.stop()
                let error = await #expect(throws: ResolutionError.self) { try await resolver.resolve(try HostName("bank.test"), families: .ipv4) }
                let message = error?.message ?? "no error"
                #expect(message.contains("may only be resolved by doh"), "\(message)")
                let asked = try liar.queryCount("bank.test", type: "A")
                #expect(asked == 0)
                #expect(metrics.counterTotal(label: "httpdns_hijack_suspected_total", dimensions: [("reason", "downgrade")]) == 1)
                #expect(metrics.counterTotal(label: "httpdns_fallbacks_total", dimensions: [("from", "doh"), ("to", "cares")]) == 0)
                #expect(resolver.fallbacks[0].stats.entries == 0 && resolver.trusted.stats.entries == 0)
            }
        }
    }

    /// H4: the local resolver goes silent: names the trusted service answers are not affected; with the service
    /// down as well, what the trusted cache holds is served stale, and a name it does not hold fails, saying why.
    @Test func aSilentLocalResolverChangesNothingForTrustedNames() async throws {
        let clock = ManualMonotonicClock()
        try await Self.withScenario(clock: clock) { resolver, service, liar in
            liar.stop()
            let bank = try await resolver.resolve(try HostName("bank.test"), families: .ipv4)
            #expect(bank.source == "doh" && !bank.fallback && bank.resolution.ipv4 == [IPv4Address("127.0.0.5")!])
            service.stop()
            clock.advance(seconds: 600)
            let stale = try await resolver.resolve(try HostName("bank.test"), families: .ipv4)
            #expect(stale.resolution.stale && stale.resolution.ipv4 == [IPv4Address("127.0.0.5")!] && !stale.fallback)
            let error = await #expect(throws: ResolutionError.self) { try await resolver.resolve(try HostName("shop.test"), families: .ipv4) }
            #expect(error?.message.contains("no source could resolve shop.test: doh: ") == true, "\(String(describing: error))")
            #expect(resolver.fallbacks[0].stats.entries == 0, "nothing from the silent resolver was cached")
        }
    }

    /// Warm start: a process saves what its trusted cache holds; the service goes down; a restarted process loads
    /// the file and still reaches its hosts, answered stale while the service stays down.
    @Test func aRestartedProcessResolvesFromItsWarmStartFile() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-warm-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try await Self.withScenario { resolver, service, _ in
            _ = try await resolver.resolve(try HostName("bank.test"), families: .ipv4)
            try WarmStartFile.save(resolver.trusted.entries(), to: file)
            service.stop()
            var doh = DoHSource.Configuration(servers: [try ServiceEndpoint(parsing: "https://127.0.0.1:\(service.port)")])
            doh.connection.budget = .seconds(2)
            let down = try DoHSource(configuration: doh)
            var configuration = ResolverCache.Configuration()
            configuration.staleAnswerClientTimeout = .zero
            do {
                let restarted = try ResolverCache(source: down, configuration: configuration)
                restarted.loadStale(try WarmStartFile.load(from: file))
                let answer = try await restarted.resolve(try HostName("bank.test"), families: .ipv4)
                #expect(answer.ipv4 == [IPv4Address("127.0.0.5")!] && answer.stale)
            } catch {
                // A source dropped without shutdown stops the process in debug builds: shut it down first.
                await down.shutdown()
                throw error
            }
            await down.shutdown()
        }
    }
}

/// openssl's s_server with `-www`: TLS that verifies (the service's own certificate), then a 200 with an HTML page
/// for every request. An address that answers garbage.
struct GarbageHTTPSServer {
    let process: ChildProcess
    let port: Int

    static func start(certificate: String, key: String) async throws -> GarbageHTTPSServer {
        let openssl = try #require(ChildProcess.find("openssl"), "openssl is missing: run scripts/install-deps.sh")
        // Its stdout, where it says where it listens, goes to the stderr the test reads.
        let process = try ChildProcess(
            executable: "/bin/sh",
            arguments: ["-c", "exec '\(openssl)' s_server -cert '\(certificate)' -key '\(key)' -accept 127.0.0.1:0 -www 1>&2"]
        )
        let (found, output) = await process.waitForStderr(containing: "ACCEPT", timeoutMs: 10_000)
        guard found, let range = output.range(of: #"ACCEPT 127\.0\.0\.1:(\d+)"#, options: .regularExpression),
            let port = Int(output[range].split(separator: ":").last!)
        else {
            process.stop(signal: SIGKILL)
            Issue.record("openssl s_server did not start: \(output)")
            throw CancellationError()
        }
        process.discardStderr()
        return GarbageHTTPSServer(process: process, port: port)
    }

    func stop() { process.stop() }
}
