import HTTPDNSCore
import Metrics
import MetricsTestKit
import Testing

/// The swift-metrics the cache reports. Each test binds its own `TestMetrics` with `withMetricsFactory`, a
/// task-local override (swift-metrics 2.13), so nothing is bootstrapped globally and the tests stay parallel:
/// the cache makes all its metric objects in `init`, inside the binding.
@Suite(.timeLimit(.minutes(1))) struct ResolverCacheMetricsTests {
    private func lookups(_ metrics: TestMetrics, _ result: String) -> Int64 {
        metrics.counterTotal(label: "httpdns_cache_lookups_total", dimensions: [("result", result)])
    }

    @Test func countersFollowTheLookups() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            let f = try CacheFixture {
                $0.maxEntries = 2
                $0.maxPendingQueries = 1
                $0.refreshAheadFraction = 0
            }
            let ipv4 = AddressFamilies.ipv4
            f.source.script("a.example", ipv4: ["192.0.2.1"], ttl: 60)
            f.source.script("c.example", ipv4: ["192.0.2.3"], ttl: 60)
            f.source.script("d.example", ipv4: ["192.0.2.4"], ttl: 60)
            f.source.scriptNegative("nx.example", .nameNotFound)

            _ = try await f.cache.resolve(host("a.example"), families: ipv4)  // miss
            _ = try await f.cache.resolve(host("a.example"), families: ipv4)  // hit
            for _ in 0..<2 {  // miss, negative
                _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(host("nx.example"), families: ipv4) }
            }
            #expect(lookups(metrics, "miss") == 2)
            #expect(lookups(metrics, "hit") == 1)
            #expect(lookups(metrics, "negative") == 1)
            #expect(try metrics.expectGauge("httpdns_cache_entries").lastValue == 2)

            // Three callers of c share one query; storing c evicts a.
            f.source.hold("c.example")
            try await withThrowingTaskGroup(of: Resolution.self) { group in
                for _ in 0..<3 { group.addTask { try await f.cache.resolve(host("c.example"), families: ipv4) } }
                try await f.source.waitForQueries("c.example")
                await waitUntil { f.cache.stats.coalescedLookups == 2 }
                f.source.release("c.example")
                for try await _ in group {}
            }
            #expect(lookups(metrics, "miss") == 5)
            #expect(try metrics.expectCounter("httpdns_coalesced_lookups_total").totalValue == 2)
            #expect(try metrics.expectCounter("httpdns_cache_evictions_total").totalValue == 1)

            // With one query pending, a second name is refused.
            f.source.hold("d.example")
            let d = Task { try await f.cache.resolve(host("d.example"), families: ipv4) }
            try await f.source.waitForQueries("d.example")
            _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(host("e.example"), families: ipv4) }
            #expect(
                metrics.counterTotal(label: "httpdns_cache_rejected_lookups_total", dimensions: [("reason", "too_many_pending")]) == 1
            )
            f.source.release("d.example")
            _ = try await d.value  // miss, evicts nx
            #expect(try metrics.expectCounter("httpdns_cache_evictions_total").totalValue == 2)

            // c and d go stale; two callers of d share the failed refresh, c is refreshed on its own.
            f.source.fail("c.example", with: .serverFailure)
            f.source.fail("d.example", with: .serverFailure)
            f.clock.advance(seconds: 60)
            _ = try await f.cache.resolve(host("c.example"), families: ipv4)  // stale
            f.source.hold("d.example")
            try await withThrowingTaskGroup(of: Resolution.self) { group in
                for _ in 0..<2 { group.addTask { try await f.cache.resolve(host("d.example"), families: ipv4) } }
                try await f.source.waitForQueries("d.example", count: 2)
                await waitUntil { f.cache.stats.coalescedLookups == 3 }
                f.source.release("d.example")
                for try await resolution in group { #expect(resolution.stale) }
            }
            _ = try await f.cache.resolve(host("d.example"), families: ipv4)  // stale, from the cache

            // Every counter agrees with the stats snapshot.
            let stats = f.cache.stats
            #expect(lookups(metrics, "hit") == Int64(stats.hits))
            #expect(lookups(metrics, "stale") == Int64(stats.staleHits))
            #expect(lookups(metrics, "miss") == Int64(stats.misses))
            #expect(lookups(metrics, "negative") == Int64(stats.negativeHits))
            #expect(try metrics.expectCounter("httpdns_cache_evictions_total").totalValue == Int64(stats.evictions))
            #expect(try metrics.expectCounter("httpdns_coalesced_lookups_total").totalValue == Int64(stats.coalescedLookups))
            #expect(
                metrics.counterTotal(label: "httpdns_cache_rejected_lookups_total", dimensions: [("reason", "too_many_pending")])
                    == Int64(stats.rejectedLookups)
            )
            #expect(try metrics.expectGauge("httpdns_cache_entries").lastValue == Double(stats.entries))
            #expect(stats.hits == 1)
            #expect(stats.staleHits == 4)
            #expect(stats.misses == 6)
            #expect(stats.negativeHits == 1)
            #expect(stats.coalescedLookups == 3)
            #expect(stats.rejectedLookups == 1)
        }
    }

    @Test func aCancelledJoinerIsCountedAsCoalescedLikeInTheStats() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            let f = try CacheFixture()
            f.source.script("a.example", ipv4: ["192.0.2.1"], ttl: 60)
            f.source.hold("a.example")
            let leader = Task { try await f.cache.resolve(host("a.example"), families: .ipv4) }
            try await f.source.waitForQueries("a.example")
            let joiner = Task { try await f.cache.resolve(host("a.example"), families: .ipv4) }
            await waitUntil { f.cache.stats.coalescedLookups == 1 }
            joiner.cancel()
            let joined = await joiner.result
            #expect(throws: CancellationError.self) { try joined.get() }
            f.source.release("a.example")
            _ = try await leader.value

            #expect(f.cache.stats.coalescedLookups == 1)
            #expect(try metrics.expectCounter("httpdns_coalesced_lookups_total").totalValue == 1)
            // The cancelled caller got no answer: it is not a miss in either.
            #expect(f.cache.stats.misses == 1)
            #expect(lookups(metrics, "miss") == 1)
        }
    }

    @Test func upstreamQueriesAreCountedAndTimedBySourceAndOutcome() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            let f = try CacheFixture()
            f.source.script("a.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 60)
            f.source.scriptNegative("nx.example", .nameNotFound)
            f.source.scriptNegative("nodata.example", .noData)
            f.source.fail("down.example", with: .timeout)
            _ = try await f.cache.resolve(host("a.example"))
            for name in ["nx.example", "nodata.example", "down.example", "down.example"] {
                _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(host(name)) }
            }

            func resolutions(_ outcome: String) -> Int64 {
                metrics.counterTotal(label: "httpdns_resolutions_total", dimensions: [("source", "scripted"), ("outcome", outcome)])
            }
            #expect(resolutions("success") == 1)
            #expect(resolutions("nameNotFound") == 1)
            #expect(resolutions("noAddress") == 1)
            #expect(resolutions("timeout") == 2)
            #expect(metrics.counterTotal(label: "httpdns_resolutions_total") == 5)

            let timer = try metrics.expectTimer("httpdns_resolution_duration_seconds", [("source", "scripted")])
            #expect(timer.values.count == 5)
            #expect(timer.values.allSatisfy { $0 >= 0 })
        }
    }

    /// Latency is real elapsed time (`ContinuousClock`), not the cache's clock: the injected clock may be coarse
    /// or, in tests, frozen, and a latency histogram must not read zero.
    @Test func durationIsRealElapsedTimeNotTheCacheClock() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            let f = try CacheFixture()
            f.source.script("a.example", ipv4: ["192.0.2.1"], ttl: 60)
            f.source.hold("a.example")
            let started = ContinuousClock.now
            let caller = Task { try await f.cache.resolve(host("a.example"), families: .ipv4) }
            try await f.source.waitForQueries("a.example")
            f.clock.advance(seconds: 3600)
            f.source.release("a.example")
            _ = try await caller.value
            let elapsed = started.duration(to: .now)
            let timer = try metrics.expectTimer("httpdns_resolution_duration_seconds", [("source", "scripted")])
            let recorded = try #require(timer.values.first)
            #expect(timer.values.count == 1)
            #expect(recorded > 0)
            #expect(Duration.nanoseconds(recorded) <= elapsed)
        }
    }

    @Test func noDimensionHoldsAHostName() async throws {
        let metrics = TestMetrics()
        let names = ["a.example", "nx.example", "down.example", "held.example", "other.example"]
        try await withMetricsFactory(metrics) {
            let f = try CacheFixture {
                $0.maxEntries = 1; $0.maxPendingQueries = 1
            }
            f.source.script("a.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 60)
            f.source.script("held.example", ipv4: ["192.0.2.2"], ipv6: ["2001:db8::2"], ttl: 60)
            f.source.scriptNegative("nx.example", .nameNotFound)
            f.source.fail("down.example", with: .timeout)
            _ = try await f.cache.resolve(host("a.example"))
            _ = try await f.cache.resolve(host("a.example"), families: .ipv6)
            _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(host("nx.example")) }
            _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(host("nx.example")) }
            _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(host("down.example")) }
            f.source.hold("held.example")
            let held = Task { try await f.cache.resolve(host("held.example")) }
            try await f.source.waitForQueries("held.example")
            _ = await #expect(throws: ResolutionError.self) { try await f.cache.resolve(host("other.example")) }
            f.source.release("held.example")
            _ = try await held.value
        }

        let dimensions =
            metrics.counters.flatMap(\.dimensions)
            + metrics.recorders.flatMap(\.dimensions)
            + metrics.timers.flatMap(\.dimensions)
            + metrics.meters.flatMap(\.dimensions)
        #expect(!dimensions.isEmpty)
        #expect(metrics.counters.count >= 6)
        for (key, value) in dimensions {
            #expect(!names.contains { value.contains($0) || key.contains($0) }, "dimension \(key)=\(value)")
            #expect(!value.contains("example"), "dimension \(key)=\(value)")
        }
        let labels = metrics.counters.map(\.label) + metrics.recorders.map(\.label) + metrics.timers.map(\.label)
        for label in labels {
            #expect(!label.contains("example"), "label \(label)")
        }
        // Dimension keys are the documented, bounded ones.
        #expect(Set(dimensions.map(\.0)).isSubset(of: ["result", "source", "outcome", "reason"]))
    }
}
