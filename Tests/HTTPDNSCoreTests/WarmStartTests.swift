import HTTPDNSCore
import HTTPDNSTesting
import Testing

/// What a cache holds, saved and loaded back as stale.
@Suite struct WarmStartTests {
    @Test func entriesLoadedIntoANewCacheAreServedStaleWhenTheSourceFails() async throws {
        let clock = ManualMonotonicClock()
        let source = StaticSource(["a.example": .addresses(ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 60)])
        let warm = try ResolverCache(source: source, clock: clock)
        _ = try await warm.resolve(host("a.example"))
        await #expect(throws: ResolutionError.self) { try await warm.resolve(host("gone.example"), families: .ipv4) }
        let entries = warm.entries()
        #expect(entries.count == 2)
        #expect(entries.first { $0.host == host("a.example") }?.ipv4 == .addresses([v4("192.0.2.1")], ttlSeconds: 60))
        #expect(entries.first { $0.host == host("gone.example") }?.ipv4 == .negative(.nameNotFound, ttlSeconds: 30))

        // A restarted process whose source is down.
        let down = StaticSource(otherwise: .failure(.timeout))
        var configuration = ResolverCache.Configuration()
        configuration.staleAnswerClientTimeout = .zero
        let restarted = try ResolverCache(source: down, configuration: configuration, clock: ManualMonotonicClock())
        restarted.loadStale(entries)
        let answer = try await restarted.resolve(host("a.example"))
        #expect(answer.ipv4 == [v4("192.0.2.1")] && answer.ipv6 == [v6("2001:db8::1")])
        #expect(answer.stale, "loaded entries count as stale")
        #expect(down.queryCount("a.example") == 1, "the source was asked first")
        let negative = try await restarted.resolve(host("gone.example"), families: .ipv4)
        #expect(negative.stale && negative.negativeAnswer == .nameNotFound)
    }

    @Test func aWorkingSourceReplacesWhatWasLoaded() async throws {
        let cache = try ResolverCache(source: StaticSource(otherwise: .addresses(ipv4: ["192.0.2.9"], ipv6: [], ttl: 60)), clock: ManualMonotonicClock())
        cache.loadStale([CachedEntry(host: host("a.example"), ipv4: .addresses([v4("192.0.2.1")], ttlSeconds: 60), ipv6: nil)])
        let answer = try await cache.resolve(host("a.example"), families: .ipv4)
        #expect(answer.ipv4 == [v4("192.0.2.9")] && !answer.stale)
    }

    @Test func nothingPastTheStalenessLimitIsSaved() async throws {
        let clock = ManualMonotonicClock()
        var configuration = ResolverCache.Configuration()
        configuration.maxStale = .seconds(100)
        let cache = try ResolverCache(source: StaticSource(otherwise: .addresses(ipv4: ["192.0.2.1"], ipv6: [], ttl: 60)), configuration: configuration, clock: clock)
        _ = try await cache.resolve(host("a.example"), families: .ipv4)
        clock.advance(seconds: 120)
        #expect(cache.entries().count == 1, "expired, within the limit")
        clock.advance(seconds: 100)
        #expect(cache.entries().isEmpty)
    }
}
