import HTTPDNSCore
import HTTPDNSTesting
import Testing

/// A resolver that was shut down answers nothing: not from its caches, and never from a fallback.
@Suite struct HostResolverLifecycleTests {
    @Test func aShutDownResolverRefusesLookupsAndNeverFallsBack() async throws {
        let trusted = StaticSource(["cached.test": .addresses(ipv4: ["192.0.2.1"], ipv6: [], ttl: 300)], name: "trusted")
        let fallback = StaticSource(otherwise: .addresses(ipv4: ["10.0.0.1"], ipv6: [], ttl: 300), name: "local")
        let resolver = try HostResolver(trusted: trusted, fallbacks: [fallback])
        let host = try HostName("cached.test")
        _ = try await resolver.resolve(host, families: .ipv4)

        await resolver.shutdown()
        for name in ["cached.test", "other.test"] {
            await #expect {
                _ = try await resolver.resolve(try HostName(name), families: .ipv4)
            } throws: { error in
                (error as? ResolutionError)?.code == .shutdown
            }
        }
        #expect(throws: ResolutionError.self) { _ = try resolver.cachedAnswer(host, families: .ipv4) }
        let other = try HostName("other.test")
        let failures = try await resolver.preResolve([other], families: .ipv4)
        #expect(failures[other]?.code == .shutdown, "\(failures)")
        #expect(try await resolver.networkChanged().isEmpty)
        #expect(trusted.queryCount("other.test") == 0, "the trusted source was asked after shutdown")
        #expect(fallback.queryCount("other.test") == 0, "a fallback was asked after shutdown")
    }
}
