#if GRPC
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import HTTPDNSCore
import HTTPDNSGRPC
import HTTPDNSTesting
import Testing

/// gRPC through HTTPDNS end to end: real grpc-swift 2 servers over TLS on 127.0.0.61 and 127.0.0.62, one port, with
/// a certificate made at test time for grpc.test; the service reports the `:authority`, the address it was reached
/// on and the connection's SNI. The resolver's sources are in-process (`StaticSource`): they stand for the trusted
/// service and a lying local resolver, whose faults are the point here.
@Suite("gRPC through HTTPDNS", .timeLimit(.minutes(2)))
struct GRPCThroughHTTPDNSTests {
    static let host = GRPCStage.host

    /// The trusted source: grpc.test at `addresses`.
    static func trusted(_ addresses: [String] = GRPCStage.addresses, ttl: UInt32 = 300) -> StaticSource {
        StaticSource(["grpc.test": .addresses(ipv4: addresses, ipv6: [], ttl: ttl)], otherwise: .failure(.serverUnreachable), name: "httpdns")
    }

    /// The local resolver, lying: grpc.test at an address where nothing of ours listens.
    static func lyingFallback() -> StaticSource {
        StaticSource(["grpc.test": .addresses(ipv4: ["127.0.0.63"], ipv6: [], ttl: 300)], name: "system")
    }

    /// The trusted source answers both true addresses while the local resolver lies: unary and streaming calls reach
    /// the true addresses, with grpc.test:PORT as `:authority` and grpc.test as SNI, and the local resolver is never
    /// asked. With round robin (an endpoint per address), the calls reach both.
    @Test func callsReachTheTrueAddressesWithTheName() async throws {
        try await GRPCStage.with { stage in
            let trusted = Self.trusted()
            let fallback = Self.lyingFallback()
            try await withHostResolver(trusted: trusted, fallbacks: [fallback]) { resolver in
                let serviceConfig = ServiceConfig(loadBalancingConfig: [.roundRobin])
                try await withHTTPDNSGRPCClient(host: Self.host, port: stage.port, resolver: resolver, tls: stage.tls, serviceConfig: serviceConfig) {
                    client in
                    var reached: Set<String> = []
                    var reports: [Report] = []
                    // Round robin spreads calls over the connections that are ready; the second may take a moment.
                    for _ in 0..<200 where reached.count < 2 {
                        let report = try await client.who(waitForReady: true)
                        reached.insert(report.local)
                        reports.append(report)
                    }
                    let streamed = try await client.whoStreaming(["one", "two", "three"], waitForReady: true)
                    #expect(streamed.map(\.message) == ["one", "two", "three"])
                    reports += streamed
                    #expect(reached == Set(GRPCStage.addresses))
                    for report in reports {
                        #expect(GRPCStage.addresses.contains(report.local), "\(report)")
                        #expect(report.authority == "grpc.test:\(stage.port)", "\(report)")
                        #expect(report.sni == "grpc.test", "\(report)")
                    }
                }
            }
            #expect(trusted.queryCount("grpc.test") == 1)
            #expect(fallback.queryCount("grpc.test") == 0, "the local resolver is never asked")
        }
    }

    /// Pick-first (gRPC's default) takes the answer's first address; when the server there goes away, calls move
    /// to the other address, unary and streaming.
    ///
    /// The server is stopped at once, as a server that goes away is, and the next call waits until the client has
    /// seen its connection there close. A call made at that very moment can find grpc-swift's pick-first policy still
    /// on the closed connection, and stay there until its deadline (seen under load, with grpc-swift's own `.ipv4`
    /// targets too: nothing of the resolver is in it). While the channel reconnects, a call can also fail as
    /// `unavailable` ("no subchannel available") after the retry policy's five quick attempts, which is why the first
    /// call after the stop is made again for up to 10 s, as a client of a service that moves would.
    @Test func stoppingOneServerMovesCallsToTheOther() async throws {
        try await GRPCStage.with { stage in
            try await withHostResolver(trusted: Self.trusted(), fallbacks: [Self.lyingFallback()]) { resolver in
                let watch = ConnectionWatch()
                try await withHTTPDNSGRPCClient(
                    host: Self.host,
                    port: stage.port,
                    resolver: resolver,
                    tls: stage.tls,
                    config: watch.attach(),
                    serviceConfig: GRPCStage.retrying
                ) { client in
                    #expect(try await client.who().local == "127.0.0.61")
                    #expect(try await client.whoStreaming(["a", "b"]).map(\.local) == ["127.0.0.61", "127.0.0.61"])
                    await stage.stop("127.0.0.61", gracefully: false)
                    await watch.closed("127.0.0.61")
                    // The channel reconnects on the next call: 127.0.0.61 refuses, 127.0.0.62 answers.
                    let moved = try await client.whoWhileUnavailable(for: .seconds(10))
                    #expect(moved.local == "127.0.0.62" && moved.authority == "grpc.test:\(stage.port)" && moved.sni == "grpc.test", "\(moved)")
                    #expect(try await client.whoStreaming(["c"], waitForReady: true).map(\.local) == ["127.0.0.62"])
                }
            }
        }
    }

    /// Round robin keeps a connection to each address; when one server goes away, every call goes to the other at
    /// once, without waiting for anything.
    @Test func withRoundRobinCallsMoveAtOnce() async throws {
        try await GRPCStage.with { stage in
            try await withHostResolver(trusted: Self.trusted(), fallbacks: [Self.lyingFallback()]) { resolver in
                try await withHTTPDNSGRPCClient(
                    host: Self.host,
                    port: stage.port,
                    resolver: resolver,
                    tls: stage.tls,
                    serviceConfig: ServiceConfig(methodConfig: GRPCStage.retrying.methodConfig, loadBalancingConfig: [.roundRobin])
                ) { client in
                    var reached: Set<String> = []
                    for _ in 0..<200 where reached.count < 2 {
                        reached.insert(try await client.who(waitForReady: true).local)
                    }
                    #expect(reached == Set(GRPCStage.addresses))
                    await stage.stop("127.0.0.61", gracefully: false)
                    for index in 0..<10 {
                        #expect(try await client.who("after-\(index)").local == "127.0.0.62")
                    }
                    #expect(try await client.whoStreaming(["c", "d"]).map(\.local) == ["127.0.0.62", "127.0.0.62"])
                }
            }
        }
    }

    /// The trusted source's answer changes (TTL 60 s): once the TTL has run out, the channel moves to the new
    /// address. The TTL is followed on manual clocks (the resolver's cache and the name resolver's waits), so nothing
    /// waits 60 s; the wait asked for is the TTL itself.
    @Test func aChangedAnswerMovesTheChannelAfterTheTTL() async throws {
        try await GRPCStage.with { stage in
            let trusted = Self.trusted(["127.0.0.61"], ttl: 60)
            let cacheClock = ManualMonotonicClock()
            let clock = ManualClock()
            let resolver = try HostResolver(trusted: trusted, fallbacks: [Self.lyingFallback()], clock: cacheClock)
            let result: Result<Void, any Error>
            do {
                result = .success(try await Self.followTheChangedAnswer(stage, trusted, cacheClock, clock, resolver))
            } catch {
                result = .failure(error)
            }
            await resolver.shutdown()
            try result.get()
        }
    }

    /// `aChangedAnswerMovesTheChannelAfterTheTTL`'s calls, with `resolver` on `cacheClock` and the name resolver on
    /// `clock`.
    static func followTheChangedAnswer(
        _ stage: GRPCStage,
        _ trusted: StaticSource,
        _ cacheClock: ManualMonotonicClock,
        _ clock: ManualClock,
        _ resolver: HostResolver
    ) async throws {
        // Wired by hand, as the catalog's "Wiring it by hand" says, with the manual clock for the waits.
        var registry = NameResolverRegistry.defaults
        // IPv4 alone: with both families, the AAAA no-data answer's negative TTL (the cache's 30 s) would be the
        // answer's TTL.
        var resolution = NameResolvers.HTTPDNS.Configuration()
        resolution.families = .ipv4
        registry.registerFactory(try NameResolvers.HTTPDNS(configuration: resolution, clock: clock))
        var config = HTTP2ClientTransport.Posix.Config.defaults
        config.requireCertificateName(Self.host)
        let transport = try HTTP2ClientTransport.Posix(
            target: .httpdns(host: Self.host, port: stage.port, resolver: resolver),
            transportSecurity: .tls(stage.tls),
            config: config,
            resolverRegistry: registry,
            serviceConfig: GRPCStage.retrying
        )
        try await withGRPCClient(transport: transport) { client in
            #expect(try await client.who().local == "127.0.0.61")
            #expect(await clock.sleeps(atLeast: 1) == [.seconds(60)], "the name resolver waits the TTL")
            trusted.set("grpc.test", .addresses(ipv4: ["127.0.0.62"], ipv6: [], ttl: 60))
            cacheClock.advance(seconds: 61)
            clock.advance(by: .seconds(60))
            // The second wait starts once the new answer has been handed to the channel.
            #expect(await clock.sleeps(atLeast: 2) == [.seconds(60), .seconds(60)])
            #expect(trusted.queryCount("grpc.test") == 2)
            // The channel moves to 127.0.0.62 once its connection there is ready, which it gives no public signal
            // of: a bounded poll of calls (each a round trip; 10 s at most) until one lands there.
            let deadline = ContinuousClock.now + .seconds(10)
            var report = try await client.who()
            while report.local != "127.0.0.62", ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                report = try await client.who()
            }
            #expect(report.local == "127.0.0.62" && report.authority == "grpc.test:\(stage.port)" && report.sni == "grpc.test", "\(report)")
            #expect(try await client.whoStreaming(["after"]).map(\.local) == ["127.0.0.62"])
        }
    }

    /// A certificate for another name (which TLS refuses) and one for the addresses alone (which TLS alone would
    /// take, its IP address SAN matching the address connected to) both fail the call with an error that says the
    /// certificate was refused; no call reaches the server.
    @Test(arguments: ["DNS:other.test", "IP:127.0.0.61,IP:127.0.0.62"])
    func aCertificateWithoutTheNameIsRefused(_ subjectAltName: String) async throws {
        try await GRPCStage.with(subjectAltName: subjectAltName) { stage in
            try await withHostResolver(trusted: Self.trusted(), fallbacks: []) { resolver in
                try await withHTTPDNSGRPCClient(host: Self.host, port: stage.port, resolver: resolver, tls: stage.tls) { client in
                    let error = await #expect(throws: RPCError.self) { _ = try await client.who() }
                    let chain = error.map(causes(of:)) ?? []
                    let refusal = chain.compactMap { $0 as? HTTPDNSGRPCError }.first
                    #expect(refusal?.code == .certificateRejected, "\(chain)")
                    #expect("\(error.map { "\($0)" } ?? "")".contains("certificate of grpc.test"), "\(String(describing: error))")
                    if subjectAltName.hasPrefix("IP:") {
                        #expect(
                            refusal?.reason == "it does not hold grpc.test as a DNS name (it holds only IP 127.0.0.61, IP 127.0.0.62)",
                            "\(String(describing: refusal))"
                        )
                        let address = refusal?.address?.split(separator: ":").first.map(String.init)
                        #expect(address.map(GRPCStage.addresses.contains) == true, "\(String(describing: refusal))")
                    }
                }
            }
            #expect(stage.service.handled.value == 0, "no call reached the server")
        }
    }

    /// The transport will not be made with the certificate's verification turned off, nor with a port out of range.
    @Test func verificationCannotBeTurnedOff() async throws {
        try await withHostResolver(trusted: Self.trusted(), fallbacks: []) { resolver in
            try Self.refuseTurningVerificationOff(resolver)
        }
    }

    static func refuseTurningVerificationOff(_ resolver: HostResolver) throws {
        let host = Self.host
        for verification in [TLSConfig.CertificateVerification.noVerification, .noHostnameVerification] {
            var tls = HTTP2ClientTransport.Posix.TransportSecurity.TLS.defaults
            tls.serverCertificateVerification = verification
            let error = #expect(throws: ConfigurationError.self) {
                _ = try HTTP2ClientTransport.Posix(httpdns: host, resolver: resolver, tls: tls)
            }
            #expect(error?.key == "tls.serverCertificateVerification")
        }
        var tls = HTTP2ClientTransport.Posix.TransportSecurity.TLS.defaults
        tls.customVerificationCallback = { _, promise in promise.fail(StageError("not asked")) }
        #expect(throws: ConfigurationError.self) { _ = try HTTP2ClientTransport.Posix(httpdns: host, resolver: resolver, tls: tls) }
        let error = #expect(throws: ConfigurationError.self) { _ = try HTTP2ClientTransport.Posix(httpdns: host, port: 0, resolver: resolver) }
        #expect(error?.key == "port")
        // Another authority would move :authority, SNI and the certificate's name off the host.
        var config = HTTP2ClientTransport.Posix.Config.defaults
        config.http2.authority = "other.test"
        let authority = #expect(throws: ConfigurationError.self) { _ = try HTTP2ClientTransport.Posix(httpdns: host, resolver: resolver, config: config) }
        #expect(authority?.key == "http2.authority")
    }
}

/// The catalog's example is the code in CatalogExample.swift, word for word, and it works.
@Suite("The HTTPDNSGRPC catalog's example", .timeLimit(.minutes(1)))
struct CatalogExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func theExampleIsTheCompiledCode() throws {
        let catalog = try String(contentsOf: Self.root.appendingPathComponent("Sources/HTTPDNSGRPC/HTTPDNSGRPC.docc/HTTPDNSGRPC.md"), encoding: .utf8)
        let source = try String(contentsOf: Self.root.appendingPathComponent("Tests/HTTPDNSGRPCTests/CatalogExample.swift"), encoding: .utf8)
        let blocks = catalog.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "\n```")[0] }
        let example = try #require(blocks.first { $0.contains("func sayHello") })
        let compiled = try #require(source.components(separatedBy: "// catalog:begin\n").last?.components(separatedBy: "\n// catalog:end").first)
        #expect(example == compiled)
    }

    @Test func theExampleSaysHello() async throws {
        try await GRPCStage.with { stage in
            let answer = try await sayHello(
                to: GRPCStage.host,
                port: stage.port,
                through: StaticSource(["grpc.test": .addresses(ipv4: GRPCStage.addresses, ipv6: [], ttl: 300)], name: "httpdns"),
                trustRoots: .certificates([.file(path: stage.certificate, format: .pem)])
            )
            let report = try #require(Report(answer))
            #expect(report.message == "hello" && report.sni == "grpc.test" && report.local == "127.0.0.61", "\(report)")
        }
    }
}
#endif
