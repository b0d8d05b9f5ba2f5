import ArgumentParser
import HTTPDNSCore
import HTTPDNSTesting
import HTTPDNSWire
import Metrics
import Prometheus

/// A cached lookup through `HostResolver` (the policy) against a `ResolverCache` hit: what the policy adds to the
/// hot path.
struct PolicyHitBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy",
        abstract: "ns per cached lookup through HostResolver, as a ratio against a ResolverCache hit."
    )

    @Option(help: "Distinct names in the cache.")
    var names = 1000

    @Option(help: "Lookups per round.")
    var lookups = 2_000_000

    @Option(help: "Rounds, the two in turn; the median is reported.")
    var rounds = 7

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard names > 0, lookups > 0, rounds > 0 else { throw ValidationError("counts must be positive") }
    }

    func run() async throws {
        MetricsSystem.bootstrap(PrometheusMetricsFactory())
        let hosts = try (0..<names).map { try HostName("host\($0).bench.example") }
        let cache = try ResolverCache(source: StaticSource.benchmark)
        let resolver = try HostResolver(trusted: StaticSource.benchmark, fallbacks: [SystemSource()])
        for host in hosts {
            _ = try await cache.resolve(host)
            _ = try await resolver.resolve(host)
        }
        let (lookups, names) = (self.lookups, self.names)
        func time(_ body: () async throws -> Int) async throws -> Double {
            let stopwatch = Stopwatch()
            let found = try await body()
            precondition(found == lookups, "a lookup missed")
            return Double(stopwatch.elapsedNanoseconds) / Double(lookups)
        }
        func throughCache() async throws -> Int {
            var found = 0
            var index = 0
            for _ in 0..<lookups {
                if try await !cache.resolve(hosts[index]).ipv4.isEmpty { found += 1 }
                index = index + 1 == names ? 0 : index + 1
            }
            return found
        }
        func throughPolicy() async throws -> Int {
            var found = 0
            var index = 0
            for _ in 0..<lookups {
                if try await !resolver.resolve(hosts[index]).resolution.ipv4.isEmpty { found += 1 }
                index = index + 1 == names ? 0 : index + 1
            }
            return found
        }
        _ = try await time(throughCache)
        _ = try await time(throughPolicy)
        var cacheSamples: [Double] = []
        var policySamples: [Double] = []
        for _ in 0..<rounds {
            cacheSamples.append(try await time(throughCache))
            policySamples.append(try await time(throughPolicy))
        }
        precondition(resolver.trusted.stats.misses == names && cache.stats.misses == names, "the measured lookups must all be hits")
        let (cacheNs, policyNs) = (cacheSamples.median, policySamples.median)
        if json {
            print(
                JSON.object([
                    ("benchmark", .string("policy-hit")), ("names", .integer(names)),
                    ("cacheNsPerLookup", .number(cacheNs)), ("policyNsPerLookup", .number(policyNs)),
                    ("ratio", .number(policyNs / cacheNs)),
                ]).text
            )
        } else {
            print("cached lookups, \(names) names, median of \(rounds) interleaved rounds of \(lookups), one task")
            print("  ResolverCache hit \(formatted(cacheNs)) ns, HostResolver \(formatted(policyNs)) ns, ratio \(formatted(policyNs / cacheNs))x")
            print("  target: ratio at most 1.20x")
        }
    }
}
