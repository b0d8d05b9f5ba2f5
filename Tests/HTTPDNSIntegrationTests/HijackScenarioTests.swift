import Foundation
import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSTesting
import HTTPDNSWire
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
    static let lies = [
        "address=/bank.test/10.0.0.66",
        "address=/shop.test/10.0.0.67",
        "address=/missing.test/127.0.0.88",
    ]

    /// The policy over DoH to the service (trusted) and c-ares to the lying dnsmasq (fallback).
    static func withScenario(
        strict: [String] = [],
        clock: ManualMonotonicClock = ManualMonotonicClock(),
        _ body: (HostResolver, ServiceProcess, DNSMasqServer) async throws -> Void
    ) async throws {
        try await withDNSMasq(records: honest) { upstream in
            try await withDNSMasq(records: lies) { liar in
                try await NativeServiceSourceTests.withCertificate("IP:127.0.0.1") { certificate, key in
                    let service = try await ServiceProcess.start(
                        ["--upstream", upstream.address.description, "--tls-cert", certificate, "--tls-key", key],
                        environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "0"]
                    )
                    defer { service.stop() }
                    var doh = DoHSource.Configuration(servers: [try ServiceEndpoint(parsing: "https://127.0.0.1:\(service.port)")])
                    doh.connection.extraTrustRootsPEMFile = certificate
                    doh.connection.budgetMs = 20_000
                    doh.connection.attemptTimeoutMs = 10_000
                    let trusted = try DoHSource(configuration: doh)
                    let local = try CAresSource(configuration: .init(servers: [liar.address]))
                    var configuration = HostResolver.Configuration()
                    configuration.guardConfiguration.privateRanges = IPRange.privateAndReserved.filter { $0.description != "127.0.0.0/8" }
                    configuration.strictHosts = try HostPatterns(strict)
                    let resolver = try HostResolver(trusted: trusted, fallbacks: [local], configuration: configuration, clock: clock)
                    do {
                        try await body(resolver, service, liar)
                    } catch {
                        await trusted.shutdown()
                        await local.shutdown()
                        throw error
                    }
                    await trusted.shutdown()
                    await local.shutdown()
                }
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
    /// and not cached.
    @Test func withTheServiceDownAPrivateAnswerIsRefused() async throws {
        try await Self.withScenario { resolver, service, liar in
            service.stop()
            let error = await #expect(throws: ResolutionError.self) { try await resolver.resolve(try HostName("shop.test"), families: .ipv4) }
            #expect(error?.code == .rejectedByGuard, "\(String(describing: error))")
            _ = await #expect(throws: ResolutionError.self) { try await resolver.resolve(try HostName("shop.test"), families: .ipv4) }
            let asked = try liar.queryCount("shop.test", type: "A")
            #expect(asked == 2, "refused, so never cached: asked again")
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
        try await Self.withScenario(strict: [".test"]) { resolver, service, liar in
            service.stop()
            let error = await #expect(throws: ResolutionError.self) { try await resolver.resolve(try HostName("bank.test"), families: .ipv4) }
            let message = error?.message ?? "no error"
            #expect(message.contains("may only be resolved by doh"), "\(message)")
            let asked = try liar.queryCount("bank.test", type: "A")
            #expect(asked == 0)
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
            doh.connection.budgetMs = 2000
            let down = try DoHSource(configuration: doh)
            var configuration = ResolverCache.Configuration()
            configuration.staleAnswerClientTimeoutMs = 0
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
