import ArgumentParser
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// `httpdns-bench`: measurements that report a ratio against a baseline measured in the same run. A separate
/// executable, not installed with `httpdns`. docs/PERFORMANCE.md has the commands and the figures.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "httpdns-bench",
        abstract: "Benchmarks, each reported as a ratio against a baseline measured in the same run.",
        subcommands: [CacheHitBench.self, ColdLookupBench.self, MemoryBench.self, PolicyHitBench.self, ClientColdBench.self, PreResolveBench.self, CanonicalBench.self, InterceptorBench.self, SoakClient.self]
    )

    /// Runs the command as `httpdns` does: logs to stderr, argument errors exit with 2.
    static func main() async {
        // Logs go to stderr: stdout carries the figures (and `--json`).
        LoggingSystem.bootstrap { label in StreamLogHandler.standardError(label: label) }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { print(message) }
                Glibc.exit(0)
            }
            if !message.isEmpty { Output.diagnostic(message) }
            Glibc.exit(code == .validationFailure ? ExitStatus.usage : code.rawValue)
        }
    }
}
