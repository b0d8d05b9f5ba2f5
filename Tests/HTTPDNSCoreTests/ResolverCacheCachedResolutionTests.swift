import HTTPDNSCore
import Testing

@Suite(.timeLimit(.minutes(1))) struct ResolverCacheCachedResolutionTests {
    @Test func aMissReturnsNilAndAsksNobody() throws {
        let f = try CacheFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        #expect(try f.cache.cachedResolution(host("www.example")) == nil)
        #expect(f.source.queryCount("www.example") == 0)
        let stats = f.cache.stats
        #expect(stats.hits + stats.misses + stats.negativeHits + stats.staleHits == 0)
    }

    @Test func aFreshEntryIsAnsweredWithoutWaiting() async throws {
        let f = try CacheFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 60)
        _ = try await f.cache.resolve(host("www.example"))
        f.clock.advance(seconds: 10)
        let hit = try #require(try f.cache.cachedResolution(host("www.example")))
        #expect(hit.cached)
        #expect(hit.ttlSeconds == 50)
        #expect(hit.ipv4 == [v4("192.0.2.1")])
        #expect(hit.ipv6 == [v6("2001:db8::1")])
        #expect(f.cache.stats.hits == 1)
        // Asking for a family set the entry holds only in part is a miss too.
        #expect(try f.cache.cachedResolution(host("other.example"), families: .ipv4) == nil)
    }

    @Test func aFreshNegativeAnswerIsThrown() async throws {
        let f = try CacheFixture()
        f.source.scriptNegative("nx.example", .nameNotFound)
        _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(host("nx.example")) }
        let error = #expect(throws: ResolutionError.self) { try f.cache.cachedResolution(host("nx.example")) }
        #expect(error?.code == .nameNotFound)
        #expect(f.cache.stats.negativeHits == 1)
    }

    @Test func anExpiredEntryReturnsNilSoTheCallerResolves() async throws {
        let f = try CacheFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        _ = try await f.cache.resolve(host("www.example"), families: .ipv4)
        f.clock.advance(seconds: 61)
        #expect(try f.cache.cachedResolution(host("www.example"), families: .ipv4) == nil)
        #expect(f.source.queryCount("www.example") == 1)
    }
}
