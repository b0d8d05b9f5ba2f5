#if GRPC
import GRPCCore
import GRPCNIOTransportHTTP2
import HTTPDNSCore
import HTTPDNSGRPC
import HTTPDNSTesting
import Testing

/// The name resolver alone, read as the channel reads it, with the resolver's cache and its waits on manual clocks:
/// what it hands over, when it looks again, and what it does when a lookup fails.
@Suite("The HTTPDNS name resolver", .timeLimit(.minutes(1)))
struct HTTPDNSNameResolverTests {
    static let host = try! HostName("grpc.test")

    /// A resolver over `trusted` whose cache runs on `cacheClock`, with serve-stale off, so that a failed lookup is
    /// a failure, not a stale answer.
    static func hostResolver(_ trusted: StaticSource, cacheClock: ManualMonotonicClock) throws -> HostResolver {
        var configuration = HostResolver.Configuration()
        configuration.cache.maxStale = .zero
        return try HostResolver(trusted: trusted, fallbacks: [], configuration: configuration, clock: cacheClock)
    }

    /// The results the channel would get, in order, from a task that reads them until cancelled.
    final class Reader: Sendable {
        let results: AsyncStream<Result<NameResolutionResult, any Error>>
        private let task: Task<Void, Never>

        init(_ resolver: NameResolver) {
            let (results, continuation) = AsyncStream.makeStream(of: Result<NameResolutionResult, any Error>.self)
            self.results = results
            task = Task {
                var iterator = resolver.names.makeAsyncIterator()
                do {
                    while let result = try await iterator.next() { continuation.yield(.success(result)) }
                } catch {
                    continuation.yield(.failure(error))
                }
                continuation.finish()
            }
        }

        func stop() { task.cancel() }
    }

    static func addresses(_ result: NameResolutionResult) -> [[String]] {
        result.endpoints.map { endpoint in
            endpoint.addresses.map { "\($0.ipv4?.host ?? $0.ipv6?.host ?? "?"):\($0.ipv4?.port ?? $0.ipv6?.port ?? 0)" }
        }
    }

    @Test func itIsAPushResolverWithTheNameAsAuthority() throws {
        let resolver = try Self.hostResolver(StaticSource(), cacheClock: ManualMonotonicClock())
        let factory = try NameResolvers.HTTPDNS()
        #expect(factory.resolver(for: .httpdns(host: Self.host, port: 8443, resolver: resolver)).authority == "grpc.test:8443")
        #expect(factory.resolver(for: .httpdns(host: Self.host, resolver: resolver)).authority == "grpc.test", "443 is left out")
        #expect(factory.resolver(for: .httpdns(host: Self.host, resolver: resolver)).updateMode == .push)
    }

    /// Every address of the answer, IPv4 first, in one endpoint for pick-first or one endpoint each for round
    /// robin; the grouping that matches a service config is chosen from its policy.
    @Test func everyAddressIsHandedOver() async throws {
        let trusted = StaticSource(["grpc.test": .addresses(ipv4: ["127.0.0.61", "127.0.0.62"], ipv6: ["::1"], ttl: 60)])
        let resolver = try Self.hostResolver(trusted, cacheClock: ManualMonotonicClock())
        for (grouping, expected) in [
            (NameResolvers.HTTPDNS.EndpointGrouping.oneEndpoint, [["127.0.0.61:8443", "127.0.0.62:8443", "::1:8443"]]),
            (.endpointPerAddress, [["127.0.0.61:8443"], ["127.0.0.62:8443"], ["::1:8443"]]),
        ] {
            var configuration = NameResolvers.HTTPDNS.Configuration()
            configuration.endpoints = grouping
            let names = try NameResolvers.HTTPDNS(configuration: configuration, clock: ManualClock())
                .resolver(for: .httpdns(host: Self.host, port: 8443, resolver: resolver)).names
            var iterator = names.makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(Self.addresses(first) == expected, "\(grouping)")
            #expect(first.serviceConfig == nil, "the channel's own service config applies")
        }
        #expect(NameResolvers.HTTPDNS.EndpointGrouping.matching(ServiceConfig()) == .oneEndpoint)
        #expect(NameResolvers.HTTPDNS.EndpointGrouping.matching(ServiceConfig(loadBalancingConfig: [.roundRobin])) == .endpointPerAddress)
        #expect(
            NameResolvers.HTTPDNS.EndpointGrouping.matching(ServiceConfig(loadBalancingConfig: [.pickFirst(shuffleAddressList: true), .roundRobin]))
                == .oneEndpoint
        )
    }

    /// It waits the answer's TTL, looks again, hands over only a change; a failed lookup keeps the addresses and is
    /// tried again after a delay that doubles up to the maximum; the next good answer puts the TTL back.
    @Test func itFollowsTheTTLAndBacksOffOnFailures() async throws {
        let cacheClock = ManualMonotonicClock()
        let trusted = StaticSource(["grpc.test": .addresses(ipv4: ["127.0.0.61"], ipv6: [], ttl: 60)])
        let resolver = try Self.hostResolver(trusted, cacheClock: cacheClock)
        let clock = ManualClock()
        var configuration = NameResolvers.HTTPDNS.Configuration()
        // IPv4 alone: with both families, the AAAA no-data answer's negative TTL (the cache's 30 s) would be the
        // answer's TTL.
        configuration.families = .ipv4
        configuration.retryInitialDelay = .seconds(1)
        configuration.retryMaximumDelay = .seconds(3)
        let factory = try NameResolvers.HTTPDNS(configuration: configuration, clock: clock)
        let reader = Reader(factory.resolver(for: .httpdns(host: Self.host, port: 8443, resolver: resolver)))
        defer { reader.stop() }
        var results = reader.results.makeAsyncIterator()
        /// Moves both clocks on, and returns every wait the resolver has asked for once it asks for the next.
        func pass(_ seconds: Int64, expecting sleeps: Int) async -> [Duration] {
            cacheClock.advance(seconds: Double(seconds) + 0.5)
            clock.advance(by: .seconds(seconds))
            return await clock.sleeps(atLeast: sleeps)
        }

        let first = try #require(await results.next())
        #expect(try Self.addresses(first.get()) == [["127.0.0.61:8443"]])
        #expect(await clock.sleeps(atLeast: 1) == [.seconds(60)], "the TTL")
        // The same answer after the TTL: looked up again, nothing handed over.
        #expect(await pass(60, expecting: 2) == [.seconds(60), .seconds(60)])
        #expect(trusted.queryCount("grpc.test") == 2)
        // Failures: the channel keeps 127.0.0.61, and the lookup is tried again after 1 s, 2 s, then 3 s at most.
        trusted.set("grpc.test", .failure(.serverUnreachable))
        #expect(await pass(60, expecting: 3).last == .seconds(1))
        #expect(await pass(1, expecting: 4).last == .seconds(2))
        #expect(await pass(2, expecting: 5).last == .seconds(3))
        #expect(await pass(3, expecting: 6).last == .seconds(3), "bounded")
        // A new answer: handed over, and the TTL is the wait again.
        trusted.set("grpc.test", .addresses(ipv4: ["127.0.0.62"], ipv6: [], ttl: 30))
        #expect(await pass(3, expecting: 7).last == .seconds(30))
        let second = try #require(await results.next())
        #expect(try Self.addresses(second.get()) == [["127.0.0.62:8443"]])
    }

    /// When the first lookup fails there is nothing to keep: the channel gets the error, and with it the calls
    /// waiting for it (`HTTPDNSGRPCError.resolutionFailed`, the resolver's error underneath).
    @Test func aFirstFailureIsTheChannels() async throws {
        let trusted = StaticSource(otherwise: .negative(.nameNotFound))
        let resolver = try Self.hostResolver(trusted, cacheClock: ManualMonotonicClock())
        let names = try NameResolvers.HTTPDNS(clock: ManualClock()).resolver(for: .httpdns(host: Self.host, resolver: resolver)).names
        let error = await #expect(throws: RPCError.self) {
            var iterator = names.makeAsyncIterator()
            _ = try await iterator.next()
        }
        let ours = try #require(error.flatMap { causes(of: $0).compactMap { $0 as? HTTPDNSGRPCError }.first })
        #expect(ours.code == .resolutionFailed && ours.host == "grpc.test")
        #expect((ours.cause as? ResolutionError)?.code == .nameNotFound)
        #expect("\(error!)".contains("grpc.test could not be resolved through HTTPDNS"), "\(error!)")
    }

    @Test func aBadConfigurationIsRefused() throws {
        var configuration = NameResolvers.HTTPDNS.Configuration()
        configuration.retryMaximumDelay = .milliseconds(500)
        #expect(throws: ConfigurationError.self) { try NameResolvers.HTTPDNS(configuration: configuration) }
        configuration = NameResolvers.HTTPDNS.Configuration()
        configuration.minimumRefreshInterval = .zero
        #expect(throws: ConfigurationError.self) { try NameResolvers.HTTPDNS(configuration: configuration) }
        configuration = NameResolvers.HTTPDNS.Configuration()
        configuration.families = []
        let error = #expect(throws: ConfigurationError.self) { try NameResolvers.HTTPDNS(configuration: configuration) }
        #expect(error?.key == "families")
    }
}
#endif
