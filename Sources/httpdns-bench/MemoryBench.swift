import ArgumentParser
import HTTPDNSCore
import HTTPDNSTesting
import HTTPDNSWire

/// Resident memory for many cached names, against a bare Dictionary holding the same addresses.
struct MemoryBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "memory",
        abstract: "Resident growth for N cached names (A and AAAA each), as a ratio against a bare Dictionary."
    )

    @Option(help: "Names to cache.")
    var names = 100_000

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard names > 0 else { throw ValidationError("--names must be positive") }
    }

    func run() async throws {
        var configuration = ResolverCache.Configuration()
        configuration.maxEntries = max(configuration.maxEntries, names * 2)
        // The cache is measured first, in a process that has allocated little, so its pages are its own.
        let before = System.residentBytes()
        let cache = try ResolverCache(source: StaticSource.benchmark, configuration: configuration)
        for index in 0..<names {
            _ = try await cache.resolve(HostName("name\(index).memory-bench.example"), families: .all)
        }
        let afterCache = System.residentBytes()
        precondition(cache.stats.entries == names, "every name must be cached")

        // The baseline stays alive beside the cache, so its growth is fresh pages too.
        var dictionary: [String: ([IPv4Address], [IPv6Address])] = [:]
        for index in 0..<names {
            dictionary["name\(index).memory-bench.example"] = (
                [IPv4Address(UInt32(index))], [IPv6Address(high: 0x2001_0DB8 << 32, low: UInt64(index))]
            )
        }
        let afterDictionary = System.residentBytes()

        let cacheGrowth = Double(afterCache - before)
        let dictionaryGrowth = Double(afterDictionary - afterCache)
        withExtendedLifetime((cache, dictionary)) {}
        let mib = 1024.0 * 1024.0
        if json {
            print(
                JSON.object([
                    ("benchmark", .string("memory")),
                    ("names", .integer(names)),
                    ("cacheGrowthMiB", .number(cacheGrowth / mib)),
                    ("cacheBytesPerName", .number(cacheGrowth / Double(names))),
                    ("dictionaryGrowthMiB", .number(dictionaryGrowth / mib)),
                    ("ratio", .number(cacheGrowth / dictionaryGrowth)),
                ]).text
            )
        } else {
            print("memory, \(names) names cached with one A and one AAAA address each")
            print(
                "  ResolverCache: +\(formatted(cacheGrowth / mib)) MiB resident (\(formatted(cacheGrowth / Double(names), digits: 0)) bytes per name)"
            )
            print(
                "  bare Dictionary<String, ([IPv4Address], [IPv6Address])>: +\(formatted(dictionaryGrowth / mib)) MiB, ratio \(formatted(cacheGrowth / dictionaryGrowth))x"
            )
            print("  target: at most 64 MiB for 100,000 names")
        }
    }
}
