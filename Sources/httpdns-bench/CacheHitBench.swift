import ArgumentParser
import HTTPDNSCore
import HTTPDNSSynchronization
import HTTPDNSTesting
import HTTPDNSWire
import Metrics
import Prometheus

#if canImport(Glibc)
    import Glibc
#endif

/// Cache hits against a bare `Mutex<[String: …]>` lookup, single task and on every core.
struct CacheHitBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "ns per cache hit, as a ratio against a bare lock-protected Dictionary lookup."
    )

    @Option(help: "Distinct names in the cache.")
    var names = 1000

    @Option(help: "Lookups per task per round.")
    var lookups = 2_000_000

    @Option(help: "Rounds; the median is reported.")
    var rounds = 5

    @Option(help: "Concurrent tasks for the parallel measurement (default: the number of cores).")
    var tasks = System.coreCount

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard names > 0, lookups > 0, rounds > 0, tasks > 0 else { throw ValidationError("counts must be positive") }
    }

    func run() async throws {
        // Real counters, as a service exporting Prometheus metrics would have: each hit increments one.
        MetricsSystem.bootstrap(PrometheusMetricsFactory())
        let hosts = try (0..<names).map { try HostName("host\($0).bench.example") }
        let cache = try ResolverCache(source: StaticSource.benchmark)
        for host in hosts { _ = try await cache.resolve(host) }
        let baseline = Mutex<[String: [IPv4Address]]>([:])
        for host in hosts { baseline.withLock { $0[host.value] = [IPv4Address(0xC000_0201)] } }
        let keys = hosts.map(\.value)

        /// ns per lookup (wall time over all tasks) of `body` run by `parallel` tasks at once.
        func timeOnce(parallel: Int, _ body: @escaping @Sendable (Int) async throws -> Int) async throws -> Double {
            let stopwatch = Stopwatch()
            let found = try await withThrowingTaskGroup(of: Int.self) { group in
                for task in 0..<parallel { group.addTask { try await body(task) } }
                return try await group.reduce(0, +)
            }
            precondition(found == parallel * lookups, "a lookup missed")
            return Double(stopwatch.elapsedNanoseconds) / Double(parallel * lookups)
        }

        /// Medians for the baseline and the cache, their rounds interleaved so drift in the machine's speed
        /// (other load, frequency changes) affects both alike. One unmeasured round of each warms up first.
        func compare(
            parallel: Int,
            baseline: @escaping @Sendable (Int) async throws -> Int,
            candidate: @escaping @Sendable (Int) async throws -> Int
        ) async throws -> (baseline: Double, candidate: Double) {
            _ = try await timeOnce(parallel: parallel, baseline)
            _ = try await timeOnce(parallel: parallel, candidate)
            var baselineSamples: [Double] = []
            var candidateSamples: [Double] = []
            for _ in 0..<rounds {
                baselineSamples.append(try await timeOnce(parallel: parallel, baseline))
                candidateSamples.append(try await timeOnce(parallel: parallel, candidate))
            }
            return (baselineSamples.median, candidateSamples.median)
        }

        let lookups = self.lookups
        let names = self.names
        let dictionaryBody: @Sendable (Int) async throws -> Int = { task in
            var found = 0
            var index = task
            for _ in 0..<lookups {
                if baseline.withLock({ $0[keys[index]] }) != nil { found += 1 }
                index = index + 1 == names ? 0 : index + 1
            }
            return found
        }
        let cacheBody: @Sendable (Int) async throws -> Int = { task in
            var found = 0
            var index = task
            for _ in 0..<lookups {
                if try await !cache.resolve(hosts[index]).ipv4.isEmpty { found += 1 }
                index = index + 1 == names ? 0 : index + 1
            }
            return found
        }

        let (dictionarySingle, cacheSingle) = try await compare(parallel: 1, baseline: dictionaryBody, candidate: cacheBody)
        let (dictionaryParallel, cacheParallel) = try await compare(parallel: tasks, baseline: dictionaryBody, candidate: cacheBody)
        precondition(cache.stats.misses == names, "the measured lookups must all be hits")

        if json {
            print(
                JSON.object([
                    ("benchmark", .string("cache-hit")),
                    ("names", .integer(names)),
                    (
                        "singleTask",
                        .object([
                            ("dictionaryNsPerLookup", .number(dictionarySingle)),
                            ("cacheNsPerLookup", .number(cacheSingle)),
                            ("ratio", .number(cacheSingle / dictionarySingle)),
                        ])
                    ),
                    (
                        "parallel",
                        .object([
                            ("tasks", .integer(tasks)),
                            ("dictionaryNsPerLookup", .number(dictionaryParallel)),
                            ("cacheNsPerLookup", .number(cacheParallel)),
                            ("ratio", .number(cacheParallel / dictionaryParallel)),
                        ])
                    ),
                ]).text
            )
        } else {
            print("cache hit, \(names) names, median of \(rounds) interleaved rounds of \(lookups) lookups per task")
            print(
                "  1 task:   bare Mutex<Dictionary> \(formatted(dictionarySingle)) ns, ResolverCache \(formatted(cacheSingle)) ns, ratio \(formatted(cacheSingle / dictionarySingle))x"
            )
            print(
                "  \(tasks) tasks:  bare Mutex<Dictionary> \(formatted(dictionaryParallel)) ns, ResolverCache \(formatted(cacheParallel)) ns, ratio \(formatted(cacheParallel / dictionaryParallel))x  (wall ns per lookup, all tasks together)"
            )
            print("  target: ratio at most 2.00x")
        }
    }
}

extension StaticSource {
    /// Answers every name at once with addresses of its own, counting nothing: the benchmarks measure the cache
    /// and nothing else.
    static var benchmark: StaticSource {
        StaticSource(otherwise: .synthesized(ttl: 3600), countsQueries: false)
    }
}
