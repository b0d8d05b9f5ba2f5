import HTTPDNSCore
import HTTPDNSSynchronization
import Metrics
import MetricsTestKit
import Testing

/// `ResolverCache.resolve(_:families:completion:)`, for callers that must not suspend (the service's event loops):
/// the same answers, flights, bounds and counts as the async form, delivered to a completion.
@Suite(.timeLimit(.minutes(1))) struct ResolverCacheCallbackTests {
    /// The completion's result, awaited.
    private func resolve(_ cache: ResolverCache, _ name: String, families: AddressFamilies = .all) async -> Result<Resolution, ResolutionError> {
        await withCheckedContinuation { continuation in
            cache.resolve(host(name), families: families) { continuation.resume(returning: $0) }
        }
    }

    @Test func aMissIsAskedUpstreamAndStoredAndTheNextIsAHitAnsweredAtOnce() async throws {
        let f = try CacheFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        let miss = try await resolve(f.cache, "www.example", families: .ipv4).get()
        #expect(miss.ipv4 == [v4("192.0.2.1")] && !miss.cached)
        #expect(f.cache.stats.misses == 1)

        let answered = Mutex<Resolution?>(nil)
        f.cache.resolve(host("www.example"), families: .ipv4) { result in answered.withLock { $0 = try? result.get() } }
        #expect(answered.withLock { $0 }?.cached == true, "a hit completes before resolve returns")
        #expect(f.source.queryCount("www.example") == 1)
        #expect(f.cache.stats.hits == 1)
    }

    @Test func aNegativeAnswerCompletesWithItsErrorAndTTL() async throws {
        let f = try CacheFixture()
        f.source.scriptNegative("nx.example", .nameNotFound, ttl: 30)
        guard case .failure(let error) = await resolve(f.cache, "nx.example") else {
            Issue.record("a negative answer completed as a success")
            return
        }
        #expect(error.code == .nameNotFound && error.ttlSeconds == 30)
        guard case .failure(let cached) = await resolve(f.cache, "nx.example") else {
            Issue.record("the cached negative answer completed as a success")
            return
        }
        #expect(cached.code == .nameNotFound)
        #expect(f.source.queryCount("nx.example") == 1)
    }

    @Test func aCallbackAndATaskWaitingForOneNameShareOneQuery() async throws {
        let f = try CacheFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        f.source.hold("www.example")
        let task = Task { try await f.cache.resolve(host("www.example"), families: .ipv4) }
        try await f.source.waitForQueries("www.example")
        let callback = Task { await resolve(f.cache, "www.example", families: .ipv4) }
        await waitUntil("the callback joins the flight") { f.cache.stats.coalescedLookups == 1 }
        f.source.release("www.example")
        #expect(try await task.value.ipv4 == [v4("192.0.2.1")])
        #expect(try await callback.value.get().ipv4 == [v4("192.0.2.1")])
        #expect(f.source.queryCount("www.example") == 1)
        #expect(f.cache.stats.misses == 2)
    }

    @Test func pastThePendingBoundALookUpCompletesRejected() async throws {
        let f = try CacheFixture { $0.maxPendingQueries = 1 }
        f.source.script("a.example", ipv4: ["192.0.2.1"], ttl: 60)
        f.source.hold("a.example")
        let first = Task { await resolve(f.cache, "a.example", families: .ipv4) }
        try await f.source.waitForQueries("a.example")
        guard case .failure(let error) = await resolve(f.cache, "b.example", families: .ipv4) else {
            Issue.record("a lookup past the bound was asked upstream")
            return
        }
        #expect(error.code == .tooManyPendingQueries)
        #expect(f.source.queryCount("b.example") == 0)
        f.source.release("a.example")
        #expect(try await first.value.get().ipv4 == [v4("192.0.2.1")])
    }

    @Test func theMetricsCountCallbacksAsTheyCountTasks() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            let f = try CacheFixture {
                $0.maxPendingQueries = 1
                // The refresh below is held as long as the test takes: no client response timer answers it stale.
                $0.staleAnswerClientTimeout = .zero
            }
            func lookups(_ result: String) -> Int64 {
                metrics.counterTotal(label: "httpdns_cache_lookups_total", dimensions: [("result", result)])
            }
            f.source.script("a.example", ipv4: ["192.0.2.1"], ttl: 60)
            f.source.scriptNegative("nx.example", .nameNotFound)
            _ = await resolve(f.cache, "a.example", families: .ipv4)  // miss
            _ = await resolve(f.cache, "a.example", families: .ipv4)  // hit
            _ = await resolve(f.cache, "nx.example", families: .ipv4)  // miss
            _ = await resolve(f.cache, "nx.example", families: .ipv4)  // negative
            #expect(lookups("miss") == 2)
            #expect(lookups("hit") == 1)
            #expect(lookups("negative") == 1)

            f.source.hold("a.example")
            f.source.script("b.example", ipv4: ["192.0.2.2"], ttl: 60)
            f.source.hold("b.example")
            f.clock.advance(seconds: 61)
            let refresh = Task { await resolve(f.cache, "a.example", families: .ipv4) }
            try await f.source.waitForQueries("a.example", count: 2)
            let joined = Task { await resolve(f.cache, "a.example", families: .ipv4) }
            await waitUntil { f.cache.stats.coalescedLookups == 1 }
            _ = await resolve(f.cache, "b.example", families: .ipv4)  // past the pending bound
            #expect(metrics.counterTotal(label: "httpdns_cache_rejected_lookups_total", dimensions: [("reason", "too_many_pending")]) == 1)
            #expect(try metrics.expectCounter("httpdns_coalesced_lookups_total").totalValue == 1)
            f.source.release("a.example")
            _ = await refresh.value
            _ = await joined.value
            #expect(lookups("miss") == 4)
        }
    }

    @Test func aCancelledWaiterIsNeverCalledAndTheQueryStillFillsTheCache() async throws {
        let f = try CacheFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        f.source.hold("www.example")
        let calls = Mutex(0)
        let ticket = try #require(f.cache.resolve(host("www.example"), families: .ipv4) { _ in calls.withLock { $0 += 1 } })
        try await f.source.waitForQueries("www.example")
        #expect(f.cache.cancel(ticket), "cancelled before the answer")
        #expect(!f.cache.cancel(ticket), "once")
        let waiting = Task { try await f.cache.resolve(host("www.example"), families: .ipv4) }
        await waitUntil("the task joins the flight") { f.cache.stats.coalescedLookups == 1 }
        f.source.release("www.example")
        #expect(try await waiting.value.ipv4 == [v4("192.0.2.1")])
        #expect(calls.withLock { $0 } == 0)
        #expect(try f.cache.cachedResolution(host("www.example"), families: .ipv4) != nil, "the query filled the cache")

        // Answered: too late to cancel, and called once.
        let answered = try #require(f.cache.resolve(host("other.example"), families: .ipv4) { _ in calls.withLock { $0 += 1 } })
        await waitUntil("the answer") { calls.withLock { $0 } == 1 }
        #expect(!f.cache.cancel(answered))
        #expect(f.cache.resolve(host("www.example"), families: .ipv4) { _ in } == nil, "a hit leaves nothing to cancel")
    }

    @Test func aSlowRefreshAnswersACallbackStaleOnceAndTheAnswerDoesNotCallItAgain() async throws {
        let f = try CacheFixture {
            $0.staleAnswerTTL = .seconds(7)
            $0.refreshAheadFraction = 0
            $0.staleAnswerClientTimeout = .milliseconds(20)
        }
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        _ = try await resolve(f.cache, "www.example", families: .ipv4).get()
        f.clock.advance(seconds: 61)
        f.source.hold("www.example")
        f.source.script("www.example", ipv4: ["192.0.2.2"], ttl: 60)
        let calls = Mutex<[Resolution]>([])
        // The refresh is held until released below, so only the client response timer can answer this.
        let stale: Resolution = try await withCheckedThrowingContinuation { continuation in
            f.cache.resolve(host("www.example"), families: .ipv4) { result in
                calls.withLock { $0.append(try! result.get()) }
                continuation.resume(with: result.mapError { $0 as any Error })
            }
        }
        #expect(stale.stale && stale.ttlSeconds == 7 && stale.ipv4 == [v4("192.0.2.1")])
        f.source.release("www.example")
        await waitUntil { f.cache.stats.pendingQueries == 0 }
        #expect(calls.withLock { $0.count } == 1, "the refresh's answer does not call the completion a second time")
        #expect(try await resolve(f.cache, "www.example", families: .ipv4).get().ipv4 == [v4("192.0.2.2")])
        await waitUntil("the timer that answered ends") { f.cache.staleTimersRunning.load(ordering: .relaxed) == 0 }
    }

    /// A callback waiter's client response timer ends when the waiter is answered or cancelled, as a task waiter's
    /// ends with its task: a refresh answered at once leaves no task asleep for the rest of the timeout (here longer
    /// than the suite's time limit).
    @Test func aCallbacksClientResponseTimerEndsWhenItIsAnsweredOrCancelled() async throws {
        let f = try CacheFixture {
            $0.staleAnswerTTL = .seconds(7)
            $0.refreshAheadFraction = 0
            $0.staleAnswerClientTimeout = .seconds(3600)
        }
        for name in ["a.example", "b.example"] {
            f.source.script(name, ipv4: ["192.0.2.1"], ttl: 60)
            _ = try await resolve(f.cache, name, families: .ipv4).get()
        }
        f.clock.advance(seconds: 61)

        // Answered by the refresh.
        f.source.hold("a.example")
        let answered = Task { await resolve(f.cache, "a.example", families: .ipv4) }
        try await f.source.waitForQueries("a.example")
        // Armed just after the query starts.
        await waitUntil("the expired entry's lookup arms the timer") { f.cache.staleTimersRunning.load(ordering: .relaxed) == 1 }
        f.source.release("a.example")
        #expect(try await answered.value.get().stale == false)
        await waitUntil("the answered waiter's timer ends") { f.cache.staleTimersRunning.load(ordering: .relaxed) == 0 }

        // Cancelled.
        f.source.hold("b.example")
        let ticket = try #require(f.cache.resolve(host("b.example"), families: .ipv4) { _ in Issue.record("a cancelled waiter was called") })
        try await f.source.waitForQueries("b.example")
        await waitUntil("the timer is armed") { f.cache.staleTimersRunning.load(ordering: .relaxed) == 1 }
        #expect(f.cache.cancel(ticket))
        await waitUntil("the cancelled waiter's timer ends") { f.cache.staleTimersRunning.load(ordering: .relaxed) == 0 }
        f.source.release("b.example")
        await waitUntil { f.cache.stats.pendingQueries == 0 }
    }

    @Test func aCallbackOfAnAbandonedQueryIsAnsweredOnceOrCancelled() async throws {
        let f = try CacheFixture()
        f.source.script("a.example", ipv4: ["192.0.2.1"], ttl: 600)
        f.source.hold("a.example")
        let answered = Task { await resolve(f.cache, "a.example", families: .ipv4) }
        try await f.source.waitForQueries("a.example")
        f.cache.flushAll(abandoningQueriesInFlight: true)
        f.source.release("a.example")
        #expect(try await answered.value.get().ipv4 == [v4("192.0.2.1")])
        #expect(f.cache.stats.entries == 0, "an abandoned query's answer is not stored")

        f.source.script("b.example", ipv4: ["192.0.2.2"], ttl: 600)
        f.source.hold("b.example")
        let calls = Mutex(0)
        let ticket = try #require(f.cache.resolve(host("b.example"), families: .ipv4) { _ in calls.withLock { $0 += 1 } })
        try await f.source.waitForQueries("b.example")
        f.cache.flushAll(abandoningQueriesInFlight: true)
        #expect(f.cache.cancel(ticket), "a waiter of an abandoned query can be cancelled")
        f.source.release("b.example")
        await waitUntil { f.cache.stats.pendingQueries == 0 }
        #expect(calls.withLock { $0 } == 0)
    }

    @Test func aLookUpWithoutFamiliesCompletesWithTheError() async throws {
        let f = try CacheFixture()
        guard case .failure(let error) = await resolve(f.cache, "www.example", families: []) else {
            Issue.record("no families completed as a success")
            return
        }
        #expect(error.code == .noFamilies)
    }
}
