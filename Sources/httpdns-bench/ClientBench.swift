import ArgumentParser
import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSTesting
import HTTPDNSWire

/// Cold lookups of distinct names through the HTTPDNS clients (a kept-alive connection to `httpdns serve`, whose
/// cache is cold too), against c-ares straight to the service's own upstream. `scripts/bench-client.sh` starts the
/// peers and runs it.
struct ClientColdBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client",
        abstract: "Cold lookups/s through the HTTPDNS clients (native API, DoH) against c-ares to the same upstream."
    )

    @Option(name: .customLong("dns"), help: "The service's upstream, which c-ares asks straight, IP[:PORT].")
    var upstream: String

    @OptionGroup var service: BenchServiceOptions

    @Option(name: .customLong("names-file"), help: "Distinct names, one per line; each round takes names none asked before.")
    var namesFile: String

    @Option(help: "Names per round and way.")
    var names = 2000

    @Option(help: "Rounds, each way in turn; the median is reported.")
    var rounds = 3

    @Option(help: "Lookups in flight at once.")
    var concurrency = 64

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard names > 0, rounds > 0, concurrency > 0 else { throw ValidationError("counts must be positive") }
    }

    enum Way: String, CaseIterable {
        case cares, httpdns, doh
    }

    func run() async throws {
        let hosts = try ColdLookupBench.readNames(namesFile)
        let needed = names * rounds * Way.allCases.count
        guard hosts.count >= needed else {
            throw ValidationError("\(namesFile) holds \(hosts.count) names; \(rounds) rounds of \(names) for 3 ways need \(needed)")
        }
        var cares = CAresSource.Configuration(servers: [try DNSServerAddress(parsing: upstream)])
        cares.tries = 3
        let connection = try service.connection()
        let sources: [Way: any ResolutionSource] = [
            .cares: try CAresSource(configuration: cares),
            .httpdns: try NativeServiceSource(configuration: .init(connection: connection)),
            .doh: try DoHSource(configuration: .init(connection: connection)),
        ]
        do {
            try await measure(hosts, sources)
        } catch {
            for source in sources.values { await BenchServiceOptions.shutDown(source) }
            throw error
        }
        for source in sources.values { await BenchServiceOptions.shutDown(source) }
    }

    private func measure(_ hosts: [HostName], _ sources: [Way: any ResolutionSource]) async throws {
        // One unmeasured lookup each: connections opened and kept alive, as in a running backend.
        for (way, source) in sources {
            _ = try await source.query(try HostName("warmup-\(way.rawValue).bench.test"), families: .ipv4)
        }
        var rates: [Way: [Double]] = [:]
        var failures = 0
        var next = 0
        for _ in 0..<rounds {
            for way in Way.allCases {
                let slice = Array(hosts[next..<(next + names)])
                next += names
                var configuration = ResolverCache.Configuration()
                configuration.maxEntries = max(configuration.maxEntries, names)
                let cache = try ResolverCache(source: sources[way]!, configuration: configuration)
                let (failed, seconds) = await Self.lookUp(slice, through: cache, concurrency: concurrency)
                failures += failed
                rates[way, default: []].append(Double(names) / seconds)
            }
        }
        let median = rates.mapValues(\.median)
        let slowdown = { (way: Way) in median[.cares]! / median[way]! }
        if json {
            print(
                JSON.object([
                    ("benchmark", .string("client-cold")),
                    ("names", .integer(names)), ("rounds", .integer(rounds)), ("concurrency", .integer(concurrency)),
                    ("failures", .integer(failures)),
                    ("caresLookupsPerSecond", .number(median[.cares]!.rounded())),
                    ("httpdnsLookupsPerSecond", .number(median[.httpdns]!.rounded())),
                    ("dohLookupsPerSecond", .number(median[.doh]!.rounded())),
                    ("httpdnsCostRatio", .number(slowdown(.httpdns))),
                    ("dohCostRatio", .number(slowdown(.doh))),
                ]).text
            )
        } else {
            print("cold lookups (A) of distinct names, \(names) a round, \(concurrency) in flight, median of \(rounds) interleaved rounds, \(failures) failed")
            for way in Way.allCases {
                print("  \(way.rawValue.padding(7)) \(formatted(median[way]!, digits: 0)) lookups/s, time per lookup \(formatted(slowdown(way)))x c-ares's")
            }
            print("  target: the HTTPDNS clients at most 3.50x c-ares's time (h2load against the same service: see below)")
        }
    }

    /// Looks up every host (A) through `cache`, `concurrency` at a time. Returns the failures and the seconds taken.
    static func lookUp(_ hosts: [HostName], through cache: ResolverCache, concurrency: Int) async -> (Int, Double) {
        let stopwatch = Stopwatch()
        let failures = await withTaskGroup(of: Int.self) { group in
            var next = 0
            var failures = 0
            func start(_ host: HostName) {
                group.addTask {
                    do {
                        _ = try await cache.resolve(host, families: .ipv4)
                        return 0
                    } catch {
                        return 1
                    }
                }
            }
            while next < min(concurrency, hosts.count) {
                start(hosts[next])
                next += 1
            }
            for await failed in group {
                failures += failed
                if next < hosts.count {
                    start(hosts[next])
                    next += 1
                }
            }
            return failures
        }
        return (failures, stopwatch.elapsedSeconds)
    }
}

/// Pre-resolution of a list of names through the policy: in batches over `/resolve`, name by name over `/d`, and over
/// DoH; the time each takes and the upstream requests each uses.
struct PreResolveBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preresolve",
        abstract: "Time and requests to pre-resolve N names through HostResolver: /resolve batches, /d, DoH."
    )

    @OptionGroup var service: BenchServiceOptions

    @Option(name: .customLong("names-file"), help: "Distinct names, one per line; each way takes names none asked before.")
    var namesFile: String

    @Option(help: "Names to pre-resolve, each way.")
    var names = 1000

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard names > 0 else { throw ValidationError("--names must be positive") }
    }

    func run() async throws {
        let hosts = try ColdLookupBench.readNames(namesFile)
        guard hosts.count >= names * 3 else { throw ValidationError("\(namesFile) holds \(hosts.count) names; 3 ways of \(names) need \(names * 3)") }
        let connection = try service.connection()
        var batched = NativeServiceSource.Configuration(connection: connection)
        batched.maxHostsPerBatch = 5
        var single = NativeServiceSource.Configuration(connection: connection)
        single.maxHostsPerBatch = 1
        let ways: [(String, any ResolutionSource)] = [
            ("httpdns /resolve batches of 5", try NativeServiceSource(configuration: batched)),
            ("httpdns /d, one name a request", try NativeServiceSource(configuration: single)),
            ("DoH, one family a request", try DoHSource(configuration: .init(connection: connection))),
        ]
        let results: [(way: String, seconds: Double, requests: Int, failures: Int)]
        do {
            results = try await measure(hosts, ways)
        } catch {
            for (_, source) in ways { await BenchServiceOptions.shutDown(source) }
            throw error
        }
        for (_, source) in ways { await BenchServiceOptions.shutDown(source) }
        report(results)
    }

    private func measure(_ hosts: [HostName], _ ways: [(String, any ResolutionSource)]) async throws -> [(
        way: String, seconds: Double, requests: Int, failures: Int
    )] {
        var results: [(way: String, seconds: Double, requests: Int, failures: Int)] = []
        for (index, (way, source)) in ways.enumerated() {
            _ = try await source.query(try HostName("warmup\(index).bench.test"), families: .all)
            let resolver = try HostResolver(trusted: source, fallbacks: [])
            let slice = Array(hosts[(index * names)..<((index + 1) * names)])
            let stopwatch = Stopwatch()
            let failed = try await resolver.preResolve(slice, families: .all)
            let seconds = stopwatch.elapsedSeconds
            let requests = resolver.trusted.stats.totalUpstreamQueries
            // DoH asks one query a family: count HTTP requests, not lookups.
            results.append((way, seconds, source is DoHSource ? requests * 2 : requests, failed.count))
        }
        return results
    }

    private func report(_ results: [(way: String, seconds: Double, requests: Int, failures: Int)]) {
        if json {
            print(
                JSON.object([
                    ("benchmark", .string("preresolve")),
                    ("names", .integer(names)),
                    ("ways", .array(results.map { result in
                        .object([
                            ("way", .string(result.way)), ("seconds", .number(result.seconds)),
                            ("requests", .integer(result.requests)), ("failures", .integer(result.failures)),
                        ])
                    })),
                ]).text
            )
        } else {
            print("pre-resolution of \(names) names (A and AAAA) through HostResolver, the service's cache cold")
            let baseline = results[1].seconds
            for result in results {
                print("  \(result.way.padding(32)) \(formatted(result.seconds, digits: 3)) s, \(result.requests) HTTP requests, \(result.failures) failed, time \(formatted(result.seconds / baseline))x /d's")
            }
        }
    }
}

/// The service a client benchmark asks.
struct BenchServiceOptions: ParsableArguments {
    @Option(name: .customLong("server"), help: "The service, https://IP:PORT.")
    var server: String

    @Option(help: "A PEM file to trust for the service's certificate.")
    var cacert: String?

    /// The service, with a budget no benchmark lookup should reach.
    func connection() throws -> ServiceConnection {
        var connection = ServiceConnection(servers: [try ServiceEndpoint(parsing: server)])
        connection.extraTrustRootsPEMFile = cacert
        connection.budget = .seconds(10)
        connection.attemptTimeout = .seconds(10)
        return connection
    }

    /// Shuts down a source that holds threads or connections.
    static func shutDown(_ source: any ResolutionSource) async {
        if let source = source as? CAresSource { await source.shutdown() }
        if let source = source as? NativeServiceSource { await source.shutdown() }
        if let source = source as? DoHSource { await source.shutdown() }
    }
}

extension String {
    /// Padded with spaces to `width` characters, for columns.
    func padding(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
