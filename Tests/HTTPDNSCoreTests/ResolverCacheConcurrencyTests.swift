import HTTPDNSCore
import Testing

/// Single flight, the pending-query bound and cancellation. Upstream answers are held by the scripted source
/// until the test releases them.
@Suite(.timeLimit(.minutes(1))) struct ResolverCacheConcurrencyTests {
    let name = host("www.example")

    @Test(arguments: [2, 10, 50])
    func concurrentMissesShareOneUpstreamQuery(callers: Int) async throws {
        let f = try CacheFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 60)
        f.source.hold("www.example")

        try await withThrowingTaskGroup(of: Resolution.self) { group in
            for _ in 0..<callers {
                group.addTask { try await f.cache.resolve(name) }
            }
            try await f.source.waitForQueries("www.example")
            await waitUntil { f.cache.stats.coalescedLookups == callers - 1 }
            #expect(f.cache.stats.pendingQueries == 1)
            #expect(f.source.queryCount("www.example") == 1)

            f.source.release("www.example")
            var answers = 0
            for try await resolution in group {
                answers += 1
                #expect(resolution.ipv4 == [v4("192.0.2.1")])
                #expect(resolution.ipv6 == [v6("2001:db8::1")])
                #expect(resolution.cached == false)
                #expect(resolution.ttlSeconds == 60)
            }
            #expect(answers == callers)
        }
        let stats = f.cache.stats
        #expect(f.source.queryCount("www.example", families: .all) == 1)
        #expect(stats.coalescedLookups == callers - 1)
        #expect(stats.misses == callers)
        #expect(stats.upstream("success") == 1)
        #expect(stats.pendingQueries == 0)
    }

    @Test func coalescedCallersShareAFailure() async throws {
        let f = try CacheFixture()
        f.source.fail("www.example", with: .timeout)
        f.source.hold("www.example")
        try await withThrowingTaskGroup(of: ResolutionError.Code?.self) { group in
            for _ in 0..<5 {
                group.addTask {
                    do {
                        _ = try await f.cache.resolve(name)
                        return nil
                    } catch let error as ResolutionError {
                        return error.code
                    } catch {
                        return .internalError
                    }
                }
            }
            try await f.source.waitForQueries("www.example")
            await waitUntil { f.cache.stats.coalescedLookups == 4 }
            f.source.release("www.example")
            for try await code in group {
                #expect(code == .timeout)
            }
        }
        #expect(f.source.queryCount("www.example") == 1)
        #expect(f.cache.stats.upstream("timeout") == 1)
    }

    @Test func concurrentCallersOfAnExpiredEntryShareTheFailedRefreshAndGetTheStaleAnswer() async throws {
        let f = try CacheFixture {
            $0.refreshAheadFraction = 0; $0.staleAnswerTTL = .seconds(9)
        }
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        _ = try await f.cache.resolve(name, families: .ipv4)
        f.source.fail("www.example", with: .serverFailure)
        f.source.hold("www.example")
        f.clock.advance(seconds: 61)

        try await withThrowingTaskGroup(of: Resolution.self) { group in
            for _ in 0..<4 {
                group.addTask { try await f.cache.resolve(name, families: .ipv4) }
            }
            try await f.source.waitForQueries("www.example", count: 2)
            await waitUntil { f.cache.stats.coalescedLookups == 3 }
            f.source.release("www.example")
            for try await resolution in group {
                #expect(resolution.stale == true)
                #expect(resolution.ttlSeconds == 9)
                #expect(resolution.ipv4 == [v4("192.0.2.1")])
            }
        }
        #expect(f.source.queryCount("www.example") == 2)
        #expect(f.cache.stats.staleHits == 4)
    }

    @Test func differentFamilySetsAreDifferentFlights() async throws {
        let f = try CacheFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 60)
        f.source.hold("www.example")
        try await withThrowingTaskGroup(of: Resolution.self) { group in
            group.addTask { try await f.cache.resolve(name, families: .ipv4) }
            group.addTask { try await f.cache.resolve(name, families: .all) }
            try await f.source.waitForQueries("www.example", count: 2)
            f.source.release("www.example")
            for try await _ in group {}
        }
        #expect(f.source.queryCount("www.example", families: .ipv4) == 1)
        #expect(f.source.queryCount("www.example", families: .all) == 1)
        #expect(f.cache.stats.coalescedLookups == 0)
    }

    // MARK: Pending bound

    /// At the bound, a name with an expired entry is answered stale rather than refused: an overloaded
    /// upstream is what serve-stale is for.
    @Test func atTheBoundAnExpiredNameIsAnsweredStale() async throws {
        let f = try CacheFixture { $0.maxPendingQueries = 1; $0.refreshAheadFraction = 0 }
        f.source.script("a.example", ipv4: ["192.0.2.1"], ttl: 60)
        f.source.script("b.example", ipv4: ["192.0.2.2"], ttl: 60)
        _ = try await f.cache.resolve(host("b.example"), families: .ipv4)
        f.clock.advance(seconds: 61)
        f.source.hold("a.example")
        try await withThrowingTaskGroup(of: Resolution.self) { group in
            group.addTask { try await f.cache.resolve(host("a.example"), families: .ipv4) }
            try await f.source.waitForQueries("a.example")
            let stale = try await f.cache.resolve(host("b.example"), families: .ipv4)
            #expect(stale.stale)
            #expect(stale.ipv4 == [v4("192.0.2.2")])
            #expect(f.cache.stats.rejectedLookups == 0)
            #expect(f.source.queryCount("b.example") == 1)
            f.source.release("a.example")
            for try await _ in group {}
        }
    }

    @Test func pastTheBoundOfPendingQueriesANewNameFailsAtOnce() async throws {
        let f = try CacheFixture { $0.maxPendingQueries = 2 }
        for (index, name) in ["a.example", "b.example", "c.example"].enumerated() {
            f.source.script(name, ipv4: ["192.0.2.\(index + 1)"], ttl: 60)
        }
        f.source.hold("a.example")
        f.source.hold("b.example")

        try await withThrowingTaskGroup(of: Resolution.self) { group in
            group.addTask { try await f.cache.resolve(host("a.example"), families: .ipv4) }
            group.addTask { try await f.cache.resolve(host("b.example"), families: .ipv4) }
            try await f.source.waitForQueries("a.example")
            try await f.source.waitForQueries("b.example")
            #expect(f.cache.stats.pendingQueries == 2)

            // A third name is refused without waiting (a and b are still held) and without a query.
            let error = await #expect(throws: ResolutionError.self) {
                try await f.cache.resolve(host("c.example"), families: .ipv4)
            }
            #expect(error?.code == .tooManyPendingQueries)
            #expect(f.source.queryCount("c.example") == 0)
            #expect(f.cache.stats.rejectedLookups == 1)

            // A name already in flight is joined, not refused.
            group.addTask { try await f.cache.resolve(host("a.example"), families: .ipv4) }
            await waitUntil { f.cache.stats.coalescedLookups == 1 }
            #expect(f.cache.stats.rejectedLookups == 1)

            f.source.release("a.example")
            f.source.release("b.example")
            var answers = 0
            for try await _ in group { answers += 1 }
            #expect(answers == 3)
        }
        // With the flights done there is room again.
        let c = try await f.cache.resolve(host("c.example"), families: .ipv4)
        #expect(c.ipv4 == [v4("192.0.2.3")])
        #expect(f.cache.stats.rejectedLookups == 1)
        #expect(f.cache.stats.misses == 4)
    }

    // MARK: Cancellation

    @Test func cancelledWaiterGetsCancellationErrorAndTheQueryStillFillsTheCache() async throws {
        let f = try CacheFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        f.source.hold("www.example")

        let leader = Task { try await f.cache.resolve(name, families: .ipv4) }
        try await f.source.waitForQueries("www.example")
        let follower = Task { try await f.cache.resolve(name, families: .ipv4) }
        await waitUntil { f.cache.stats.coalescedLookups == 1 }

        // The caller that started the query is cancelled while it waits.
        leader.cancel()
        let leaderResult = await leader.result
        #expect(throws: CancellationError.self) { try leaderResult.get() }
        #expect(f.cache.stats.pendingQueries == 1)

        // The query goes on: once released it answers the other caller and fills the cache.
        f.source.release("www.example")
        let answer = try await follower.value
        #expect(answer.ipv4 == [v4("192.0.2.1")])
        #expect(answer.cached == false)
        let hit = try await f.cache.resolve(name, families: .ipv4)
        #expect(hit.cached == true)
        #expect(f.source.queryCount("www.example") == 1)
    }

    @Test func cancelledSoleWaiterLeavesTheQueryToFillTheCache() async throws {
        let f = try CacheFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        f.source.hold("www.example")

        let caller = Task { try await f.cache.resolve(name, families: .ipv4) }
        try await f.source.waitForQueries("www.example")
        caller.cancel()
        let result = await caller.result
        #expect(throws: CancellationError.self) { try result.get() }

        f.source.release("www.example")
        await waitUntil { f.cache.stats.upstream("success") == 1 }
        let hit = try await f.cache.resolve(name, families: .ipv4)
        #expect(hit.cached == true)
        #expect(hit.ipv4 == [v4("192.0.2.1")])
        #expect(f.source.queryCount("www.example") == 1)
    }

    @Test func anAlreadyCancelledCallerDoesNotStartAQuery() async throws {
        let f = try CacheFixture()
        f.source.script("www.example", ipv4: ["192.0.2.1"], ttl: 60)
        let result = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await f.cache.resolve(name, families: .ipv4)
        }.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(f.source.queryCount("www.example") == 0)
        #expect(f.cache.stats.pendingQueries == 0)
    }
}
