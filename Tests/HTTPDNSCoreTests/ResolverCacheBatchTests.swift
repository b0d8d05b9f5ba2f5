import HTTPDNSCore
import HTTPDNSSynchronization
import HTTPDNSTesting
import Testing

/// Pre-resolution through a ``BatchResolutionSource``: batches of its size, names held fresh skipped, duplicates
/// asked once, a failed batch asked name by name, and a batch abandoned by a flush not stored.
@Suite struct ResolverCacheBatchTests {
    /// Answers batches from a static source, failing those that hold a name of `failing`, and counting batches.
    final class BatchSource: BatchResolutionSource {
        let base: StaticSource
        let maxBatchSize: Int
        let failing: Set<String>
        let batches = Mutex<[[String]]>([])
        /// Called with each batch before it is answered.
        let onBatch: @Sendable () async -> Void

        init(_ base: StaticSource, maxBatchSize: Int, failing: Set<String> = [], onBatch: @escaping @Sendable () async -> Void = {}) {
            self.base = base
            self.maxBatchSize = maxBatchSize
            self.failing = failing
            self.onBatch = onBatch
        }

        var name: String { "batch" }

        func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
            try await base.query(host, families: families)
        }

        func queryBatch(_ hosts: [HostName], families: AddressFamilies) async throws(ResolutionError) -> [HostName: SourceAnswer] {
            batches.withLock { $0.append(hosts.map(\.value)) }
            await onBatch()
            guard hosts.allSatisfy({ !failing.contains($0.value) }) else { throw ResolutionError(.serverFailure, "the batch failed") }
            var answers: [HostName: SourceAnswer] = [:]
            for host in hosts {
                do {
                    answers[host] = try await base.query(host, families: families)
                } catch {
                    throw ResolutionError(.internalError, "\(error)")
                }
            }
            return answers
        }
    }

    @Test func namesGoInBatchesOfTheSourcesSizeAndFreshOnesAreSkipped() async throws {
        let source = BatchSource(StaticSource(otherwise: .synthesized(ttl: 600)), maxBatchSize: 3)
        let cache = try ResolverCache(source: source, clock: ManualMonotonicClock())
        _ = try await cache.resolve(host("n0.example"), families: .ipv4)
        let names = (0..<8).map { host("n\($0).example") } + [host("n1.example")]
        let failures = try await cache.preResolve(names, families: .ipv4)
        #expect(failures.isEmpty)
        let batches = source.batches.withLock { $0 }
        // The batches run at once: the order they reach the source in is not theirs.
        #expect(batches.map(\.count).sorted(by: >) == [3, 3, 1], "n0 is fresh, n1 asked once: \(batches)")
        #expect(Set(batches.joined()) == Set((1..<8).map { "n\($0).example" }))
        #expect(cache.stats.entries == 8)
        #expect(cache.stats.upstreamQueries[.init(source: "batch", outcome: "batch")] == 3)
        #expect(try cache.cachedResolution(host("n5.example"), families: .ipv4) != nil)
    }

    @Test func aFailedBatchIsAskedNameByName() async throws {
        let base = StaticSource(["bad.example": .failure(.refused)], otherwise: .synthesized(ttl: 600))
        let source = BatchSource(base, maxBatchSize: 2, failing: ["bad.example"])
        let cache = try ResolverCache(source: source, clock: ManualMonotonicClock())
        let failures = try await cache.preResolve([host("a.example"), host("bad.example"), host("c.example")], families: .ipv4)
        #expect(failures.keys.map(\.value) == ["bad.example"])
        #expect(failures[host("bad.example")]?.code == .refused)
        #expect(base.queryCount("a.example") == 1 && base.queryCount("bad.example") == 1, "the failed batch's names, one by one")
        #expect(base.queryCount("c.example") == 1, "the other batch once")
        #expect(cache.stats.entries == 2)
    }

    /// A batch in flight when a flush abandons the queries in flight answers no one and stores nothing.
    @Test func aBatchAbandonedByAFlushIsNotStored() async throws {
        let gate = ScriptedSource()
        gate.hold("gate.example")
        let source = BatchSource(StaticSource(otherwise: .synthesized(ttl: 600)), maxBatchSize: 5) {
            _ = try? await gate.query(host("gate.example"), families: .ipv4)
        }
        let cache = try ResolverCache(source: source, clock: ManualMonotonicClock())
        let preResolve = Task { try await cache.preResolve([host("a.example"), host("b.example")], families: .ipv4) }
        try await gate.waitForQueries("gate.example")
        cache.flushAll(abandoningQueriesInFlight: true)
        gate.release("gate.example")
        #expect(try await preResolve.value.isEmpty)
        #expect(cache.stats.entries == 0, "asked before the flush: not stored")
    }
}
