import ArgumentParser

/// `httpdns bench`: measurements that report a ratio against a baseline run in the same process.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks, each reported as a ratio against a baseline measured in the same run.",
        subcommands: []
    )
}
