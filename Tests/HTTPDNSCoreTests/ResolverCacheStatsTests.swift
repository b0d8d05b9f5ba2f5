import HTTPDNSCore
import HTTPDNSTesting
import Testing

/// flush, flushAll, preResolve and the stats snapshot.
@Suite(.timeLimit(.minutes(1))) struct ResolverCacheStatsTests {
    @Test func flushForgetsOneHost() async throws {
        let f = try CacheFixture()
        f.source.script("a.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 600)
        f.source.script("b.example", ipv4: ["192.0.2.2"], ipv6: ["2001:db8::2"], ttl: 600)
        _ = try await f.cache.resolve(host("a.example"))
        _ = try await f.cache.resolve(host("b.example"))
        #expect(f.cache.stats.entries == 2)

        f.cache.flush(host("a.example"))
        #expect(f.cache.stats.entries == 1)
        // Both families of a are gone, whichever set is asked.
        #expect(try await f.cache.resolve(host("a.example"), families: .ipv6).cached == false)
        #expect(try await f.cache.resolve(host("a.example"), families: .ipv4).cached == false)
        #expect(try await f.cache.resolve(host("b.example")).cached == true)
        #expect(f.source.queryCount("a.example") == 3)
        #expect(f.source.queryCount("b.example") == 1)
    }

    @Test func flushOfANegativeEntry() async throws {
        let f = try CacheFixture()
        f.source.scriptNegative("gone.example", .nameNotFound, ttl: 300)
        _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(host("gone.example")) }
        f.source.script("gone.example", ipv4: ["192.0.2.9"], ipv6: [], ttl: 60)
        f.cache.flush(host("gone.example"))
        let answer = try await f.cache.resolve(host("gone.example"))
        #expect(answer.ipv4 == [v4("192.0.2.9")])
    }

    @Test func flushAllForgetsEverything() async throws {
        let f = try CacheFixture()
        f.source.script("a.example", ipv4: ["192.0.2.1"], ttl: 600)
        f.source.script("b.example", ipv4: ["192.0.2.2"], ttl: 600)
        _ = try await f.cache.resolve(host("a.example"), families: .ipv4)
        _ = try await f.cache.resolve(host("b.example"), families: .ipv4)

        f.cache.flushAll()
        #expect(f.cache.stats.entries == 0)
        #expect(try await f.cache.resolve(host("a.example"), families: .ipv4).cached == false)
        #expect(try await f.cache.resolve(host("b.example"), families: .ipv4).cached == false)
        #expect(f.source.totalQueryCount == 4)
        // Stats are history, not cache contents: they survive the flush.
        #expect(f.cache.stats.misses == 4)
    }

    @Test func aQueryInFlightDuringFlushAllIsStillStored() async throws {
        let f = try CacheFixture()
        f.source.script("a.example", ipv4: ["192.0.2.1"], ttl: 600)
        f.source.hold("a.example")
        let caller = Task { try await f.cache.resolve(host("a.example"), families: .ipv4) }
        try await f.source.waitForQueries("a.example")
        f.cache.flushAll()
        f.source.release("a.example")
        #expect(try await caller.value.ipv4 == [v4("192.0.2.1")])
        #expect(try await f.cache.resolve(host("a.example"), families: .ipv4).cached == true)
        #expect(f.source.queryCount("a.example") == 1)
    }

    /// After a network change: a query in flight at the flush still answers its callers, but nobody joins it and its
    /// answer is not stored; a lookup after the flush asks again.
    @Test func aFlushThatAbandonsQueriesInFlightStoresNoneOfTheirAnswers() async throws {
        let f = try CacheFixture()
        f.source.script("a.example", ipv4: ["192.0.2.1"], ttl: 600)
        f.source.hold("a.example")
        let before = Task { try await f.cache.resolve(host("a.example"), families: .ipv4) }
        try await f.source.waitForQueries("a.example")
        f.cache.flushAll(abandoningQueriesInFlight: true)
        #expect(f.cache.stats.pendingQueries == 1)
        let after = Task { try await f.cache.resolve(host("a.example"), families: .ipv4) }
        try await f.source.waitForQueries("a.example", count: 2)
        #expect(f.cache.stats.coalescedLookups == 0, "the lookup after the flush did not join the abandoned query")
        #expect(f.cache.stats.pendingQueries == 2)
        f.source.release("a.example")
        #expect(try await before.value.ipv4 == [v4("192.0.2.1")])
        #expect(try await after.value.ipv4 == [v4("192.0.2.1")])
        #expect(f.cache.stats.entries == 1 && f.cache.stats.pendingQueries == 0)

        // Only the abandoned query in flight: its caller is answered, the cache stays empty.
        f.source.hold("b.example")
        f.source.script("b.example", ipv4: ["192.0.2.2"], ttl: 600)
        let abandoned = Task { try await f.cache.resolve(host("b.example"), families: .ipv4) }
        try await f.source.waitForQueries("b.example")
        f.cache.flushAll(abandoningQueriesInFlight: true)
        f.source.release("b.example")
        #expect(try await abandoned.value.ipv4 == [v4("192.0.2.2")])
        #expect(f.cache.stats.entries == 0)
        #expect(try f.cache.cachedResolution(host("b.example"), families: .ipv4) == nil)

        // A caller of an abandoned query can still be cancelled.
        f.source.hold("c.example")
        f.source.script("c.example", ipv4: ["192.0.2.3"], ttl: 600)
        let cancelled = Task { try await f.cache.resolve(host("c.example"), families: .ipv4) }
        try await f.source.waitForQueries("c.example")
        f.cache.flushAll(abandoningQueriesInFlight: true)
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        f.source.release("c.example")
    }

    @Test func preResolveFillsTheCacheAndReturnsTheFailures() async throws {
        let f = try CacheFixture()
        f.source.script("a.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 600)
        f.source.script("b.example", ipv4: ["192.0.2.2"], ipv6: ["2001:db8::2"], ttl: 600)
        f.source.scriptNegative("nx.example", .nameNotFound)
        f.source.fail("down.example", with: .timeout)
        f.source.fail("refused.example", with: .refused)

        let failures = try await f.cache.preResolve(
            ["a.example", "b.example", "nx.example", "down.example", "refused.example"].map(host)
        )
        // Negative answers are answers: only failures to get one are reported.
        #expect(Set(failures.keys) == [host("down.example"), host("refused.example")])
        #expect(failures[host("down.example")]?.code == .timeout)
        #expect(failures[host("refused.example")]?.code == .refused)

        #expect(try await f.cache.resolve(host("a.example")).cached == true)
        #expect(try await f.cache.resolve(host("b.example")).cached == true)
        let nx = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(host("nx.example")) }
        #expect(nx?.code == .nameNotFound)
        for name in ["a.example", "b.example", "nx.example"] {
            #expect(f.source.queryCount(name, families: .all) == 1)
        }
        #expect(f.cache.stats.entries == 3)
    }

    /// A list longer than the pending-query bound still resolves completely: preResolve keeps at most
    /// `concurrency` lookups going, so none is refused with tooManyPendingQueries.
    @Test func preResolveOfALongListStaysWithinThePendingBound() async throws {
        let f = try CacheFixture { $0.maxPendingQueries = 4 }
        let names = (0..<50).map { "n\($0).example" }
        for name in names { f.source.script(name, ipv4: ["192.0.2.1"], ttl: 600) }
        let failures = try await f.cache.preResolve(names.map(host), concurrency: 4)
        #expect(failures.isEmpty, "\(failures)")
        #expect(f.cache.stats.entries == 50)
        #expect(f.cache.stats.rejectedLookups == 0)
    }

    @Test func preResolveUsesTheFamiliesGiven() async throws {
        let f = try CacheFixture()
        f.source.script("a.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 600)
        let failures = try await f.cache.preResolve([host("a.example")], families: .ipv6)
        #expect(failures.isEmpty)
        #expect(f.source.queryCount("a.example", families: .ipv6) == 1)
        #expect(try await f.cache.resolve(host("a.example"), families: .ipv6).cached == true)
        #expect(f.cache.stats.entries == 1)
    }

    @Test func statsSnapshotCountsEveryKindOfLookup() async throws {
        let f = try CacheFixture {
            $0.maxEntries = 3
            $0.refreshAheadFraction = 0
            $0.negativeTTL = .seconds(600)
        }
        f.source.script("a.example", ipv4: ["192.0.2.1"], ttl: 60)
        f.source.script("b.example", ipv4: ["192.0.2.2"], ttl: 60)
        f.source.script("c.example", ipv4: ["192.0.2.3"], ttl: 60)
        f.source.scriptNegative("nx.example", .nameNotFound)
        f.source.scriptNegative("nodata.example", .noData)
        f.source.fail("down.example", with: .timeout)
        let ipv4 = AddressFamilies.ipv4
        #expect(f.cache.stats == ResolverStats())

        _ = try await f.cache.resolve(host("a.example"), families: ipv4)  // miss
        _ = try await f.cache.resolve(host("a.example"), families: ipv4)  // hit
        _ = try await f.cache.resolve(host("a.example"), families: ipv4)  // hit
        for _ in 0..<3 {  // miss, negative, negative
            _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(host("nx.example"), families: ipv4) }
        }
        _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(host("nodata.example"), families: ipv4) }  // miss
        _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(host("down.example"), families: ipv4) }  // miss
        var stats = f.cache.stats
        #expect(stats.hits == 2)
        #expect(stats.negativeHits == 2)
        #expect(stats.misses == 4)
        #expect(stats.entries == 3)
        #expect(stats.evictions == 0)

        _ = try await f.cache.resolve(host("b.example"), families: ipv4)  // miss, evicts a
        stats = f.cache.stats
        #expect(stats.evictions == 1)
        #expect(stats.entries == 3)

        // Two callers of c: one miss that queries, one coalesced miss.
        f.source.hold("c.example")
        async let first = f.cache.resolve(host("c.example"), families: ipv4)
        async let second = f.cache.resolve(host("c.example"), families: ipv4)
        try await f.source.waitForQueries("c.example")
        await waitUntil { f.cache.stats.coalescedLookups == 1 }
        #expect(f.cache.stats.pendingQueries == 1)
        f.source.release("c.example")
        _ = try await (first, second)

        // b goes stale: its refresh fails and the stale answer is served.
        f.source.fail("b.example", with: .serverFailure)
        f.clock.advance(seconds: 60)
        #expect(try await f.cache.resolve(host("b.example"), families: ipv4).stale == true)
        #expect(try await f.cache.resolve(host("b.example"), families: ipv4).stale == true)

        stats = f.cache.stats
        #expect(stats.hits == 2)
        #expect(stats.staleHits == 2)
        #expect(stats.misses == 7)
        #expect(stats.negativeHits == 2)
        #expect(stats.evictions == 2)
        #expect(stats.coalescedLookups == 1)
        #expect(stats.rejectedLookups == 0)
        #expect(stats.entries == 3)
        #expect(stats.pendingQueries == 0)
        #expect(
            stats.upstreamQueries == [
                .init(source: "scripted", outcome: "success"): 3,
                .init(source: "scripted", outcome: "nameNotFound"): 1,
                .init(source: "scripted", outcome: "noAddress"): 1,
                .init(source: "scripted", outcome: "timeout"): 1,
                .init(source: "scripted", outcome: "serverFailure"): 1,
            ]
        )
        #expect(stats.totalUpstreamQueries == 7)
        #expect(stats.totalUpstreamQueries == f.source.totalQueryCount)
    }

    @Test func upstreamOutcomesAreKeyedBySourceName() async throws {
        let source = ScriptedSource(name: "primary")
        let cache = try ResolverCache(source: source, clock: ManualMonotonicClock())
        source.script("a.example", ipv4: ["192.0.2.1"], ttl: 60)
        _ = try await cache.resolve(host("a.example"), families: .ipv4)
        let key = ResolverStats.UpstreamOutcome(source: "primary", outcome: "success")
        #expect(cache.stats.upstreamQueries == [key: 1])
        #expect(key.description == "primary/success")
        #expect(try await cache.resolve(host("a.example"), families: .ipv4).source == "primary")
    }
}
