import ArgumentParser
import HTTPDNSCommandLine

/// `httpdns-bench`: measurements that report a ratio against a baseline measured in the same run. A separate
/// executable, not installed with `httpdns`. docs/PERFORMANCE.md has the commands and the figures.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "httpdns-bench",
        abstract: "Benchmarks, each reported as a ratio against a baseline measured in the same run.",
        subcommands: [AdapterBench.self, CacheHitBench.self, ColdLookupBench.self, MemoryBench.self, DoTMemoryBench.self, PolicyHitBench.self, ClientColdBench.self, PreResolveBench.self, CanonicalBench.self, InterceptorBench.self, HappyEyeballsBench.self, SoakClient.self]
    )

    /// Runs the command line as `httpdns` does: logs to stderr, argument errors exit with 2.
    static func main() async {
        await runCommandLine()
    }
}
