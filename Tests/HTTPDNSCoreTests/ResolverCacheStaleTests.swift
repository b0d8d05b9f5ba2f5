import HTTPDNSCore
import Testing

/// Serve-stale (RFC 8767) and refresh-ahead.
@Suite(.timeLimit(.minutes(1))) struct ResolverCacheStaleTests {
    let name = host("www.example")

    private func staleFixture(maxStale: Duration = .seconds(300)) throws -> CacheFixture {
        try CacheFixture {
            $0.staleAnswerTTL = .seconds(7)
            $0.maxStale = maxStale
            $0.staleRefreshRetry = .seconds(30)
            $0.refreshAheadFraction = 0
        }
    }

    // MARK: Serve-stale

    /// RFC 8767's client response timer: a refresh that takes too long does not hold the caller, who gets the
    /// stale answer; the refresh goes on and, once answered, fills the cache.
    @Test func aSlowRefreshAnswersTheCallerStaleAndStillFillsTheCache() async throws {
        let f = try CacheFixture {
            $0.staleAnswerTTL = .seconds(7)
            $0.refreshAheadFraction = 0
            $0.staleAnswerClientTimeout = .milliseconds(20)
        }
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        _ = try await f.cache.resolve(name, families: .ipv4)
        f.clock.advance(seconds: 61)
        f.source.hold("www.example")
        f.source.script("www.example", ipv4: ["192.0.2.2"], ttl: 60)

        // The refresh is held until released below, so only the timer can answer this.
        let stale = try await f.cache.resolve(name, families: .ipv4)
        #expect(stale.stale)
        #expect(stale.ttlSeconds == 7)
        #expect(stale.ipv4 == [v4("192.0.2.1")])
        #expect(f.cache.stats.pendingQueries == 1)
        #expect(f.cache.stats.staleHits == 1)

        f.source.release("www.example")
        await waitUntil { f.cache.stats.pendingQueries == 0 }
        let fresh = try await f.cache.resolve(name, families: .ipv4)
        #expect(!fresh.stale)
        #expect(fresh.ipv4 == [v4("192.0.2.2")])
        #expect(f.source.queryCount("www.example") == 2)
    }

    /// Without an expired entry to fall back on, a caller waits for the upstream however long it takes.
    @Test func theTimerNeverAnswersACallerWithNothingStale() async throws {
        let f = try CacheFixture { $0.staleAnswerClientTimeout = .milliseconds(1) }
        f.source.hold("www.example")
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        let caller = Task { try await f.cache.resolve(name, families: .ipv4) }
        try await f.source.waitForQueries("www.example")
        // Well past the timer; the caller must still be waiting for the held query.
        try await Task.sleep(for: .milliseconds(50))
        #expect(f.cache.stats.staleHits == 0)
        f.source.release("www.example")
        let answer = try await caller.value
        #expect(!answer.stale)
        #expect(answer.ipv4 == [v4("192.0.2.1")])
    }

    @Test func failedRefreshServesStaleThenRetriesThenGivesUp() async throws {
        let f = try staleFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 60)
        _ = try await f.cache.resolve(name)  // t = 0, expires at 60
        f.source.fail("www.example", with: .serverFailure)

        // t = 60: expired; the refresh fails, so the expired answer is served.
        f.clock.advance(seconds: 60)
        let stale = try await f.cache.resolve(name)
        #expect(stale.stale == true)
        #expect(stale.cached == true)
        #expect(stale.ttlSeconds == 7)
        #expect(stale.originTTLSeconds == 60)
        #expect(stale.ipv4 == [v4("192.0.2.1")])
        #expect(stale.ipv6 == [v6("2001:db8::1")])
        #expect(f.source.queryCount("www.example") == 2)

        // Within staleRefreshRetry of the failure, stale answers come without asking upstream.
        f.clock.advance(seconds: 29.5)
        let quiet = try await f.cache.resolve(name)
        #expect(quiet.stale == true)
        #expect(quiet.ttlSeconds == 7)
        #expect(f.source.queryCount("www.example") == 2)

        // Once it has passed, the next lookup asks again (and, failing, is served stale again).
        f.clock.advance(seconds: 0.5)  // t = 90
        let retried = try await f.cache.resolve(name)
        #expect(retried.stale == true)
        #expect(f.source.queryCount("www.example") == 3)
        #expect(try await f.cache.resolve(name).stale == true)
        #expect(f.source.queryCount("www.example") == 3)

        // Up to maxStale past expiry (60 + 300 = 360) the stale answer is served...
        f.clock.advance(seconds: 269.5)  // t = 359.5
        #expect(try await f.cache.resolve(name).stale == true)
        #expect(f.source.queryCount("www.example") == 4)

        // ...and beyond it the error is thrown.
        f.clock.advance(seconds: 0.5)  // t = 360
        let error = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(error?.code == .serverFailure)
        #expect(f.source.queryCount("www.example") == 5)
        // Each family on its own is past the limit too.
        for families in [AddressFamilies.ipv4, .ipv6] {
            let error = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name, families: families) }
            #expect(error?.code == .serverFailure)
        }
        #expect(f.cache.stats.entries == 0)

        let stats = f.cache.stats
        #expect(stats.staleHits == 5)
        #expect(stats.upstream("serverFailure") == 6)
    }

    @Test func maxStaleZeroDisablesServeStale() async throws {
        let f = try staleFixture(maxStale: .zero)
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        _ = try await f.cache.resolve(name, families: .ipv4)
        f.source.fail("www.example", with: .timeout)

        f.clock.advance(seconds: 60)
        let error = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name, families: .ipv4) }
        #expect(error?.code == .timeout)
        // No retry timer either: every lookup asks upstream.
        _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name, families: .ipv4) }
        #expect(f.source.queryCount("www.example") == 3)
        #expect(f.cache.stats.staleHits == 0)
    }

    @Test func successfulRefreshEndsStaleness() async throws {
        let f = try staleFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        _ = try await f.cache.resolve(name, families: .ipv4)
        f.source.fail("www.example", with: .refused)
        f.clock.advance(seconds: 60)
        #expect(try await f.cache.resolve(name, families: .ipv4).stale == true)

        f.source.script("www.example", ipv4: ["192.0.2.2"], ttl: 120)
        f.clock.advance(seconds: 30)
        let fresh = try await f.cache.resolve(name, families: .ipv4)
        #expect(fresh.stale == false)
        #expect(fresh.cached == false)
        #expect(fresh.ipv4 == [v4("192.0.2.2")])
        #expect(fresh.ttlSeconds == 120)
        #expect(f.source.queryCount("www.example") == 3)

        // It is an ordinary entry again: hits until its own expiry, and a new failure is stale-served afresh.
        f.clock.advance(seconds: 100)
        let hit = try await f.cache.resolve(name, families: .ipv4)
        #expect(hit.cached == true)
        #expect(hit.stale == false)
        #expect(hit.ttlSeconds == 20)
        #expect(f.source.queryCount("www.example") == 3)

        f.source.fail("www.example", with: .refused)
        f.clock.advance(seconds: 20)
        let stale = try await f.cache.resolve(name, families: .ipv4)
        #expect(stale.stale == true)
        #expect(stale.ipv4 == [v4("192.0.2.2")])
        #expect(f.source.queryCount("www.example") == 4)
    }

    @Test func aNegativeAnswerAfterExpiryIsNotOverriddenByTheStaleEntry() async throws {
        let f = try staleFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        _ = try await f.cache.resolve(name, families: .ipv4)
        // NXDOMAIN is an answer, not a failure to get one: serve-stale does not apply.
        f.source.scriptNegative("www.example", .nameNotFound, ttl: 10)
        f.clock.advance(seconds: 60)
        let error = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name, families: .ipv4) }
        #expect(error?.code == .nameNotFound)
    }

    @Test func noStaleAnswerForANameNeverResolved() async throws {
        let f = try staleFixture()
        f.source.fail("www.example", with: .serverUnreachable)
        let error = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(error?.code == .serverUnreachable)
    }

    // MARK: Refresh-ahead

    private func refreshFixture(fraction: Double = 0.2) throws -> CacheFixture {
        try CacheFixture { $0.refreshAheadFraction = fraction }
    }

    @Test func hitLateInTheTTLAnswersAtOnceAndRefreshesInTheBackground() async throws {
        let f = try refreshFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 100)
        _ = try await f.cache.resolve(name, families: .ipv4)  // t = 0; refresh from t = 80

        // The refresh query will be held, so the lookup can only return at once if it answers from the cache.
        f.source.hold("www.example")
        f.source.script("www.example", ipv4: ["192.0.2.2"], ttl: 100)
        f.clock.advance(seconds: 80)
        let hit = try await f.cache.resolve(name, families: .ipv4)
        #expect(hit.cached == true)
        #expect(hit.stale == false)
        #expect(hit.ttlSeconds == 20)
        #expect(hit.ipv4 == [v4("192.0.2.1")])
        // The refresh's flight is registered before the lookup returns; without it, waiting would be in vain.
        try #require(f.cache.stats.pendingQueries == 1)

        try await f.source.waitForQueries("www.example", count: 2)
        #expect(f.source.queryCount("www.example", families: .ipv4) == 2)
        #expect(f.cache.stats.pendingQueries == 1)

        // More hits while the refresh is in flight start no second one.
        f.clock.advance(seconds: 5)
        #expect(try await f.cache.resolve(name, families: .ipv4).ipv4 == [v4("192.0.2.1")])
        #expect(f.cache.stats.pendingQueries == 1)
        #expect(f.source.queryCount("www.example") == 2)

        f.source.release("www.example")
        await waitUntil { f.cache.stats.upstream("success") == 2 }
        let refreshed = try await f.cache.resolve(name, families: .ipv4)
        #expect(refreshed.cached == true)
        #expect(refreshed.ipv4 == [v4("192.0.2.2")])
        #expect(refreshed.ttlSeconds == 100)
        #expect(refreshed.originTTLSeconds == 100)
        #expect(f.source.queryCount("www.example") == 2)
        #expect(f.cache.stats.pendingQueries == 0)
        // Refresh-ahead answers no caller, so it is not counted as a miss.
        #expect(f.cache.stats.misses == 1)
    }

    @Test func noRefreshAheadEarlyInTheTTL() async throws {
        let f = try refreshFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 100)
        _ = try await f.cache.resolve(name, families: .ipv4)
        f.clock.advance(seconds: 79.5)
        let hit = try await f.cache.resolve(name, families: .ipv4)
        #expect(hit.cached == true)
        // A refresh would have registered its flight before the lookup returned.
        #expect(f.cache.stats.pendingQueries == 0)
        #expect(f.source.queryCount("www.example") == 1)
    }

    @Test func refreshAheadFractionZeroDisablesIt() async throws {
        let f = try refreshFixture(fraction: 0)
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 100)
        _ = try await f.cache.resolve(name, families: .ipv4)
        f.clock.advance(seconds: 99.5)
        let hit = try await f.cache.resolve(name, families: .ipv4)
        #expect(hit.cached == true)
        #expect(hit.ttlSeconds == 1)
        #expect(f.cache.stats.pendingQueries == 0)
        #expect(f.source.queryCount("www.example") == 1)
    }

    @Test func negativeEntriesAreNotRefreshedAhead() async throws {
        let f = try refreshFixture(fraction: 0.5)
        f.source.scriptNegative("www.example", .nameNotFound, ttl: 100)
        _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        f.clock.advance(seconds: 90)
        _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(f.cache.stats.pendingQueries == 0)
        #expect(f.source.queryCount("www.example") == 1)
    }

    @Test func failedRefreshAheadLeavesTheFreshEntry() async throws {
        let f = try refreshFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 100)
        _ = try await f.cache.resolve(name, families: .ipv4)
        f.source.fail("www.example", with: .timeout)
        f.clock.advance(seconds: 85)
        #expect(try await f.cache.resolve(name, families: .ipv4).cached)
        // The refresh ahead was started (its query below); it fails at once, so it may already be over here: its
        // pending count is not checked, its query and its failure are.
        try await f.source.waitForQueries("www.example", count: 2)
        await waitUntil { f.cache.stats.upstream("timeout") == 1 }

        let hit = try await f.cache.resolve(name, families: .ipv4)
        #expect(hit.cached == true)
        #expect(hit.stale == false)
        #expect(hit.ttlSeconds == 15)
        #expect(hit.ipv4 == [v4("192.0.2.1")])
        // The failure postpones the next refresh-ahead by staleRefreshRetry (past this entry's expiry),
        // so a fast-failing upstream is not asked again on every hit.
        #expect(f.cache.stats.pendingQueries == 0)
        #expect(f.source.queryCount("www.example") == 2)
    }
}
