import ArgumentParser

/// `httpdns bench`: measurements that report a ratio against a baseline measured in the same run.
/// docs/PERFORMANCE.md has the commands and the figures.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks, each reported as a ratio against a baseline measured in the same run.",
        subcommands: [CacheHitBench.self, ColdLookupBench.self, MemoryBench.self, PolicyHitBench.self, ClientColdBench.self, PreResolveBench.self, CanonicalBench.self, InterceptorBench.self, SoakClient.self]
    )
}
