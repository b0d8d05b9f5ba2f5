import HTTPDNSCAres
import HTTPDNSCore
import HTTPDNSTesting
import Testing

@Suite("The resolver cache in front of c-ares and a real dnsmasq")
struct CacheAgainstDNSMasqTests {
    @Test("A second lookup is answered from the cache without a query")
    func secondLookupIsCached() async throws {
        try await withDNSMasq(records: TestRecords.lines) { server in
            let source = try CAresSource(configuration: .init(servers: [server.address]))
            let cache = try ResolverCache(source: source)
            let first = try await cache.resolve(HostName("dual.test"))
            let second = try await cache.resolve(HostName("dual.test"))
            #expect(!first.cached)
            #expect(second.cached)
            #expect(second.ipv4 == first.ipv4 && second.ipv6 == first.ipv6)
            #expect(try server.queryCount("dual.test", type: "A") == 1)
            #expect(try server.queryCount("dual.test", type: "AAAA") == 1)
            await source.shutdown()
        }
    }

    @Test("NXDOMAIN is cached as a negative answer")
    func negativeIsCached() async throws {
        try await withDNSMasq(records: TestRecords.lines) { server in
            let source = try CAresSource(configuration: .init(servers: [server.address]))
            let cache = try ResolverCache(source: source)
            for _ in 0..<3 {
                let error = await #expect(throws: ResolutionError.self) {
                    try await cache.resolve(HostName("nowhere.test"), families: .ipv4)
                }
                #expect(error?.code == .nameNotFound)
                #expect(error?.message.contains(server.address.description) == true)
            }
            #expect(try server.queryCount("nowhere.test", type: "A") == 1)
            #expect(cache.stats.negativeHits == 2)
            await source.shutdown()
        }
    }

    @Test("10,000 concurrent lookups of one cold name reach the server exactly once")
    func tenThousandCallersOneQuery() async throws {
        try await withDNSMasq(records: TestRecords.lines) { server in
            let source = try CAresSource(configuration: .init(servers: [server.address]))
            let cache = try ResolverCache(source: source)
            let host = try HostName("cold.test")
            let answers = try await withThrowingTaskGroup(of: Resolution.self) { group in
                for _ in 0..<10_000 {
                    group.addTask { try await cache.resolve(host) }
                }
                var answers: [Resolution] = []
                for try await answer in group { answers.append(answer) }
                return answers
            }
            #expect(answers.count == 10_000)
            #expect(answers.allSatisfy { $0.ipv4 == [IPv4Address("192.0.2.99")!] && $0.ipv6 == [IPv6Address("2001:db8::99")!] })
            #expect(try server.queryCount("cold.test", type: "A") == 1)
            #expect(try server.queryCount("cold.test", type: "AAAA") == 1)
            let stats = cache.stats
            #expect(stats.totalUpstreamQueries == 1)
            #expect(stats.misses + stats.hits == 10_000)
            await source.shutdown()
        }
    }
}
