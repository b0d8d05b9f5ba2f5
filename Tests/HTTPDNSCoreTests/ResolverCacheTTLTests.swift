import HTTPDNSCore
import HTTPDNSTesting
import Testing

/// Positive TTLs, their clamps, negative caching, the size bound and the clock.
@Suite(.timeLimit(.minutes(1))) struct ResolverCacheTTLTests {
    let name = host("www.example")

    // MARK: TTL

    @Test func freshHitWithinTTLAndMissAfterExpiry() async throws {
        let f = try CacheFixture { $0.refreshAheadFraction = 0 }
        f.source.script("www.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 60)

        let first = try await f.cache.resolve(name)
        #expect(first.host == name)
        #expect(first.ipv4 == [v4("192.0.2.1")])
        #expect(first.ipv6 == [v6("2001:db8::1")])
        #expect(first.addresses == [.v4(v4("192.0.2.1")), .v6(v6("2001:db8::1"))])
        #expect(first.ttlSeconds == 60)
        #expect(first.originTTLSeconds == 60)
        #expect(first.source == "scripted")
        #expect(first.cached == false)
        #expect(first.stale == false)
        #expect(f.source.queryCount("www.example", families: .all) == 1)

        f.clock.advance(seconds: 20)
        let second = try await f.cache.resolve(name)
        #expect(second.cached == true)
        #expect(second.stale == false)
        #expect(second.ttlSeconds == 40)
        #expect(second.originTTLSeconds == 60)
        #expect(second.addresses == first.addresses)

        // A partial second left counts as a whole one.
        f.clock.advance(seconds: 39.5)
        let third = try await f.cache.resolve(name)
        #expect(third.cached == true)
        #expect(third.ttlSeconds == 1)
        #expect(f.source.queryCount("www.example") == 1)

        // At expiry the entry no longer answers.
        f.source.script("www.example", ipv4: ["192.0.2.2"], ipv6: [], ttl: 60)
        f.clock.advance(seconds: 0.5)
        let fourth = try await f.cache.resolve(name)
        #expect(fourth.cached == false)
        #expect(fourth.ipv4 == [v4("192.0.2.2")])
        #expect(fourth.ttlSeconds == 60)
        #expect(f.source.queryCount("www.example") == 2)
    }

    @Test func familiesAreCachedPerFamily() async throws {
        let f = try CacheFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 60)

        let a = try await f.cache.resolve(name, families: .ipv4)
        #expect(a.ipv4 == [v4("192.0.2.1")])
        #expect(a.ipv6.isEmpty)
        let aaaa = try await f.cache.resolve(name, families: .ipv6)
        #expect(aaaa.ipv4.isEmpty)
        #expect(aaaa.ipv6 == [v6("2001:db8::1")])
        #expect(f.source.queryCount("www.example", families: .ipv4) == 1)
        #expect(f.source.queryCount("www.example", families: .ipv6) == 1)

        // Both families are now cached, so an A+AAAA lookup is a hit.
        let both = try await f.cache.resolve(name, families: .all)
        #expect(both.cached)
        #expect(both.addresses.count == 2)
        #expect(f.source.queryCount("www.example", families: .all) == 0)
        // One entry per name, holding both families.
        #expect(f.cache.stats.entries == 1)
    }

    @Test func ttlOfAnAnswerIsTheSmallestOfItsFamilies() async throws {
        let f = try CacheFixture()
        f.source.script(
            "www.example",
            ipv4: .addresses([v4("192.0.2.1")], ttlSeconds: 300),
            ipv6: .addresses([v6("2001:db8::1")], ttlSeconds: 100)
        )
        let answer = try await f.cache.resolve(name)
        #expect(answer.ttlSeconds == 100)
        #expect(answer.originTTLSeconds == 100)

        // Once AAAA expires, the A+AAAA lookup asks again, though A would still be fresh.
        f.clock.advance(seconds: 100)
        _ = try await f.cache.resolve(name)
        #expect(f.source.queryCount("www.example") == 2)
    }

    @Test func minTTLClampsSmallTTLs() async throws {
        let f = try CacheFixture {
            $0.minTTL = .seconds(10); $0.refreshAheadFraction = 0
        }
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 0)
        let first = try await f.cache.resolve(name, families: .ipv4)
        #expect(first.ttlSeconds == 10)
        // origin_ttl is what the upstream said; only the cache's own use of it is clamped.
        #expect(first.originTTLSeconds == 0)

        f.clock.advance(seconds: 9)
        let hit = try await f.cache.resolve(name, families: .ipv4)
        #expect(hit.cached)
        #expect(hit.ttlSeconds == 1)
        #expect(f.source.queryCount("www.example") == 1)

        f.clock.advance(seconds: 1)
        let miss = try await f.cache.resolve(name, families: .ipv4)
        #expect(miss.cached == false)
        #expect(f.source.queryCount("www.example") == 2)
    }

    @Test func maxTTLClampsLargeTTLs() async throws {
        let f = try CacheFixture {
            $0.maxTTL = .seconds(120); $0.refreshAheadFraction = 0
        }
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 86_400)
        let first = try await f.cache.resolve(name, families: .ipv4)
        #expect(first.ttlSeconds == 120)
        #expect(first.originTTLSeconds == 86_400)

        f.clock.advance(seconds: 119)
        #expect(try await f.cache.resolve(name, families: .ipv4).cached)
        f.clock.advance(seconds: 1)
        #expect(try await f.cache.resolve(name, families: .ipv4).cached == false)
        #expect(f.source.queryCount("www.example") == 2)
    }

    @Test func ttlWithinTheClampsIsKept() async throws {
        let f = try CacheFixture {
            $0.minTTL = .seconds(10); $0.maxTTL = .seconds(120)
        }
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 77)
        let answer = try await f.cache.resolve(name, families: .ipv4)
        #expect(answer.ttlSeconds == 77)
        #expect(answer.originTTLSeconds == 77)
    }

    // MARK: Negative caching

    @Test func nxdomainIsCachedForTheDefaultNegativeTTL() async throws {
        let f = try CacheFixture { $0.negativeTTL = .seconds(30) }
        f.source.scriptNegative("www.example", .nameNotFound)

        let error = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(error?.code == .nameNotFound)
        #expect(error?.code.isNegativeAnswer == true)
        #expect(error?.ttlSeconds == 30)

        f.clock.advance(seconds: 10)
        let cached = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(cached?.code == .nameNotFound)
        #expect(cached?.ttlSeconds == 20)
        #expect(f.source.queryCount("www.example") == 1)
        #expect(f.cache.stats.negativeHits == 1)

        // After the negative TTL the name is asked again, and may now exist.
        f.source.script("www.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 60)
        f.clock.advance(seconds: 20)
        let answer = try await f.cache.resolve(name)
        #expect(answer.ipv4 == [v4("192.0.2.1")])
        #expect(f.source.queryCount("www.example") == 2)
    }

    @Test func noDataIsCachedAsNoAddress() async throws {
        let f = try CacheFixture { $0.negativeTTL = .seconds(45) }
        f.source.scriptNegative("www.example", .noData)

        let error = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name, families: .ipv6) }
        #expect(error?.code == .noAddress)
        #expect(error?.code.isNegativeAnswer == true)
        #expect(error?.ttlSeconds == 45)

        f.clock.advance(seconds: 44)
        let cached = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name, families: .ipv6) }
        #expect(cached?.code == .noAddress)
        #expect(cached?.ttlSeconds == 1)
        #expect(f.source.queryCount("www.example") == 1)

        f.clock.advance(seconds: 1)
        _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name, families: .ipv6) }
        #expect(f.source.queryCount("www.example") == 2)
    }

    @Test func negativeTTLFromTheSourceIsUsed() async throws {
        let f = try CacheFixture { $0.negativeTTL = .seconds(30) }
        f.source.scriptNegative("www.example", .nameNotFound, ttl: 120)
        let error = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(error?.ttlSeconds == 120)
    }

    @Test(arguments: [
        // (ttl from the source, expected negative TTL); clamps are 10...200, default 30.
        (UInt32?.none, UInt32(30)),
        (UInt32?.some(0), UInt32(10)),
        (UInt32?.some(5), UInt32(10)),
        (UInt32?.some(150), UInt32(150)),
        (UInt32?.some(3_600), UInt32(200)),
    ])
    func negativeTTLIsClamped(sourceTTL: UInt32?, expected: UInt32) async throws {
        let f = try CacheFixture {
            $0.negativeTTL = .seconds(30)
            $0.minNegativeTTL = .seconds(10)
            $0.maxNegativeTTL = .seconds(200)
        }
        f.source.scriptNegative("www.example", .nameNotFound, ttl: sourceTTL)
        let error = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(error?.code == .nameNotFound)
        #expect(error?.ttlSeconds == expected)

        // The entry lives exactly that long.
        f.clock.advance(seconds: Double(expected) - 0.5)
        _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(f.source.queryCount("www.example") == 1)
        f.clock.advance(seconds: 0.5)
        _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(f.source.queryCount("www.example") == 2)
    }

    @Test func defaultNegativeTTLIsClampedToo() async throws {
        let f = try CacheFixture {
            $0.negativeTTL = .seconds(1_000)
            $0.maxNegativeTTL = .seconds(300)
        }
        f.source.scriptNegative("www.example", .noData)
        let error = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(error?.ttlSeconds == 300)
    }

    @Test func oneNegativeFamilyGivesTheAddressesOfTheOther() async throws {
        let f = try CacheFixture()
        f.source.script(
            "v4only.example",
            ipv4: .addresses([v4("192.0.2.7")], ttlSeconds: 60),
            ipv6: .negative(.noData, ttlSeconds: 60)
        )
        f.source.script(
            "v6only.example",
            ipv4: .negative(.noData, ttlSeconds: 60),
            ipv6: .addresses([v6("2001:db8::7")], ttlSeconds: 60)
        )
        let v4Only = try await f.cache.resolve(host("v4only.example"))
        #expect(v4Only.ipv4 == [v4("192.0.2.7")])
        #expect(v4Only.ipv6.isEmpty)
        let v6Only = try await f.cache.resolve(host("v6only.example"))
        #expect(v6Only.ipv4.isEmpty)
        #expect(v6Only.ipv6 == [v6("2001:db8::7")])

        // From the cache too; and the negative family alone is a negative answer.
        let cached = try await f.cache.resolve(host("v4only.example"))
        #expect(cached.cached)
        #expect(cached.ipv4 == [v4("192.0.2.7")])
        let negative = await #expect(throws: ResolutionError.self) {
            try await f.cache.resolve(host("v4only.example"), families: .ipv6)
        }
        #expect(negative?.code == .noAddress)
        #expect(f.source.totalQueryCount == 2)
    }

    @Test func nameNotFoundWinsOverNoData() async throws {
        let f = try CacheFixture()
        f.source.script(
            "www.example",
            ipv4: .negative(.noData, ttlSeconds: 60),
            ipv6: .negative(.nameNotFound, ttlSeconds: 60)
        )
        let error = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(error?.code == .nameNotFound)
    }

    @Test func upstreamFailuresAreNotCached() async throws {
        let f = try CacheFixture()
        f.source.fail("www.example", with: .timeout)
        let first = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(first?.code == .timeout)
        #expect(first?.ttlSeconds == nil)
        let second = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(second?.code == .timeout)
        #expect(f.source.queryCount("www.example") == 2)
        #expect(f.cache.stats.entries == 0)
    }

    @Test func anAnswerMissingAFamilyIsMalformed() async throws {
        let f = try CacheFixture()
        f.source.script("www.example", ipv4: .addresses([v4("192.0.2.1")], ttlSeconds: 60), ipv6: nil)
        let error = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(name) }
        #expect(error?.code == .malformedAnswer)
    }

    // MARK: Size bound

    @Test func leastRecentlyUsedEntryIsEvicted() async throws {
        let f = try CacheFixture {
            $0.maxEntries = 2; $0.refreshAheadFraction = 0
        }
        for (index, name) in ["a.example", "b.example", "c.example"].enumerated() {
            f.source.script(name, ipv4: ["192.0.2.\(index + 1)"], ttl: 600)
        }
        _ = try await f.cache.resolve(host("a.example"), families: .ipv4)
        _ = try await f.cache.resolve(host("b.example"), families: .ipv4)
        // Touch a: b is now the least recently used.
        #expect(try await f.cache.resolve(host("a.example"), families: .ipv4).cached)
        #expect(f.cache.stats.evictions == 0)

        _ = try await f.cache.resolve(host("c.example"), families: .ipv4)
        #expect(f.cache.stats.entries == 2)
        #expect(f.cache.stats.evictions == 1)

        // a and c are still cached; b was evicted and is asked again.
        #expect(try await f.cache.resolve(host("a.example"), families: .ipv4).cached)
        #expect(try await f.cache.resolve(host("c.example"), families: .ipv4).cached)
        #expect(f.source.queryCount("a.example") == 1)
        #expect(f.source.queryCount("c.example") == 1)
        let b = try await f.cache.resolve(host("b.example"), families: .ipv4)
        #expect(b.cached == false)
        #expect(f.source.queryCount("b.example") == 2)
        // Storing b again evicted the least recently used, a.
        #expect(f.cache.stats.evictions == 2)
        #expect(try await f.cache.resolve(host("c.example"), families: .ipv4).cached)
        #expect(try await f.cache.resolve(host("a.example"), families: .ipv4).cached == false)
    }

    @Test func everyNameIsOneEntryWhateverItsFamilies() async throws {
        let f = try CacheFixture { $0.maxEntries = 2 }
        f.source.script("a.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 600)
        f.source.script("b.example", ipv4: ["192.0.2.2"], ipv6: ["2001:db8::2"], ttl: 600)
        f.source.script("c.example", ipv4: ["192.0.2.3"], ttl: 600)
        _ = try await f.cache.resolve(host("a.example"))
        #expect(f.cache.stats.entries == 1)
        _ = try await f.cache.resolve(host("b.example"), families: .ipv4)
        _ = try await f.cache.resolve(host("b.example"), families: .ipv6)
        #expect(f.cache.stats.entries == 2)
        #expect(f.cache.stats.evictions == 0)
        _ = try await f.cache.resolve(host("c.example"), families: .ipv4)
        #expect(f.cache.stats.entries == 2)
        #expect(f.cache.stats.evictions == 1)
        // a, the least recently used name, went with both its families; b kept both of its.
        #expect(try await f.cache.resolve(host("b.example")).cached)
        #expect(try await f.cache.resolve(host("a.example"), families: .ipv6).cached == false)
    }

    @Test func aCacheOfOneEntryStillAnswersAnAPlusAAAALookup() async throws {
        let f = try CacheFixture { $0.maxEntries = 1 }
        f.source.script("www.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 600)
        f.source.script("other.example", ipv4: ["192.0.2.2"], ipv6: ["2001:db8::2"], ttl: 600)
        let answer = try await f.cache.resolve(name)
        #expect(answer.ipv4 == [v4("192.0.2.1")])
        #expect(answer.ipv6 == [v6("2001:db8::1")])
        #expect(f.cache.stats.entries == 1)
        #expect(f.cache.stats.evictions == 0)
        // The newest name's entry is assembled before the oldest is evicted to make room.
        let other = try await f.cache.resolve(host("other.example"))
        #expect(other.ipv6 == [v6("2001:db8::2")])
        #expect(f.cache.stats.entries == 1)
        #expect(f.cache.stats.evictions == 1)
    }

    // MARK: Clock

    /// The cache must take time only from the injected clock. The manual clock is set far from any system clock
    /// (near zero, and past any wall-clock nanosecond count): if the cache mixed in `CLOCK_MONOTONIC`,
    /// `CLOCK_REALTIME` or `Date`, the entry would look expired at once (clock near zero) or never expire
    /// (clock far ahead).
    @Test(arguments: [UInt64(0), UInt64(1), UInt64(4_000_000_000_000_000_000), UInt64.max / 2])
    func expiryFollowsTheInjectedClockOnly(start: UInt64) async throws {
        let source = ScriptedSource()
        let clock = ManualMonotonicClock(nanoseconds: start)
        let cache = try ResolverCache(source: source, configuration: configuration { $0.refreshAheadFraction = 0 }, clock: clock)
        source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)

        _ = try await cache.resolve(name, families: .ipv4)
        // However much real time passes, the entry is fresh while the injected clock stands still.
        for _ in 0..<3 {
            let hit = try await cache.resolve(name, families: .ipv4)
            #expect(hit.cached)
            #expect(hit.ttlSeconds == 60)
        }
        clock.advance(seconds: 59.5)
        #expect(try await cache.resolve(name, families: .ipv4).cached)
        // And it expires when the injected clock says so, though hardly any real time has passed.
        clock.advance(seconds: 0.5)
        #expect(try await cache.resolve(name, families: .ipv4).cached == false)
        #expect(source.queryCount("www.example") == 2)
    }
}
