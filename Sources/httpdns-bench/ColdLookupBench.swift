import ArgumentParser
import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSSynchronization
import HTTPDNSWire

#if canImport(Glibc)
    import Glibc
#endif

/// Cold lookups of distinct names: through the cache and c-ares, through the cache and DNS over TLS, or through
/// getaddrinfo on a thread pool. `scripts/bench-cold.sh` runs c-ares, getaddrinfo and dnsperf against one local
/// unbound and prints the ratios; `scripts/bench-dot.sh` runs DoT against c-ares to one unbound.
struct ColdLookupBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cold",
        abstract: "Lookups per second of distinct names (A), N in flight, through c-ares, DNS over TLS or getaddrinfo."
    )

    enum Resolver: String, ExpressibleByArgument, CaseIterable {
        case cares, dot, getaddrinfo
    }

    @Option(
        help:
            "cares: ResolverCache + CAresSource asking --dns. dot: ResolverCache + DoTSource asking --dot. getaddrinfo: a thread pool using /etc/resolv.conf."
    )
    var resolver: Resolver = .cares

    @Option(name: .customLong("dot"), help: "The DNS-over-TLS server for dot, tls://IP[:PORT].")
    var dotServer: String?

    @Option(name: .customLong("server-name"), help: "The name the DoT server's certificate holds.")
    var serverName: String?

    @Option(help: "A PEM file of certificates to trust for the DoT server.")
    var cacert: String?

    @Option(name: .customLong("dns"), help: "The DNS server for c-ares, IP[:PORT].")
    var server: String?

    @Option(name: .customLong("names-file"), help: "Names to look up, one per line (a trailing ' A' is ignored, so dnsperf's file works).")
    var namesFile: String

    @Option(help: "Lookups in flight at once (tasks for c-ares, threads for getaddrinfo).")
    var concurrency = 64

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard concurrency > 0 else { throw ValidationError("--concurrency must be positive") }
        if resolver == .cares && server == nil { throw ValidationError("--resolver cares needs --dns IP[:PORT]") }
        if resolver == .dot && dotServer == nil { throw ValidationError("--resolver dot needs --dot tls://IP[:PORT]") }
    }

    func run() async throws {
        let hosts = try Self.readNames(namesFile)
        guard !hosts.isEmpty else { throw ValidationError("\(namesFile) holds no names") }
        let failures: Int
        let seconds: Double
        switch resolver {
        case .cares:
            (failures, seconds) = try await runCAres(hosts)
        case .dot:
            (failures, seconds) = try await runDoT(hosts)
        case .getaddrinfo:
            (failures, seconds) = runGetaddrinfo(hosts)
        }
        let rate = Double(hosts.count) / seconds
        if json {
            print(
                JSON.object([
                    ("benchmark", .string("cold")),
                    ("resolver", .string(resolver.rawValue)),
                    ("lookups", .integer(hosts.count)),
                    ("failures", .integer(failures)),
                    ("concurrency", .integer(concurrency)),
                    ("seconds", .number(seconds)),
                    ("lookupsPerSecond", .number(rate.rounded())),
                ]).text
            )
        } else {
            print(
                "cold lookups via \(resolver.rawValue): \(hosts.count) names, \(concurrency) in flight, \(formatted(seconds, digits: 3)) s, \(formatted(rate, digits: 0)) lookups/s, \(failures) failed"
            )
        }
    }

    private func runCAres(_ hosts: [HostName]) async throws -> (Int, Double) {
        let address = try DNSServerAddress(parsing: server!)
        var sourceConfiguration = CAresSource.Configuration(servers: [address])
        sourceConfiguration.tries = 3
        return try await run(hosts, through: try CAresSource(configuration: sourceConfiguration))
    }

    private func runDoT(_ hosts: [HostName]) async throws -> (Int, Double) {
        var configuration = DoTSource.Configuration(servers: [try DoTEndpoint(parsing: dotServer!)])
        configuration.serverName = serverName
        configuration.extraTrustRootsPEMFile = cacert
        // As c-ares's three tries: a lookup is given time, so that the figure is the rate, not the timeouts.
        configuration.budget = .seconds(6)
        configuration.attemptTimeout = .seconds(6)
        return try await run(hosts, through: try DoTSource(configuration: configuration))
    }

    /// `concurrency` tasks looking up `hosts` through a cache over `source`, which is shut down afterwards.
    private func run(_ hosts: [HostName], through source: any ResolutionSource) async throws -> (Int, Double) {
        var cacheConfiguration = ResolverCache.Configuration()
        cacheConfiguration.maxEntries = max(cacheConfiguration.maxEntries, hosts.count)
        let cache = try ResolverCache(source: source, configuration: cacheConfiguration)
        let next = SharedCounter()
        let concurrency = self.concurrency
        let stopwatch = Stopwatch()
        let failures = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var failures = 0
                    while true {
                        let index = next.increment()
                        guard index < hosts.count else { return failures }
                        do {
                            _ = try await cache.resolve(hosts[index], families: .ipv4)
                        } catch {
                            failures += 1
                        }
                    }
                }
            }
            return await group.reduce(0, +)
        }
        let seconds = stopwatch.elapsedSeconds
        await source.shutdown()
        return (failures, seconds)
    }

    private func runGetaddrinfo(_ hosts: [HostName]) -> (Int, Double) {
        let names = hosts.map(\.fullyQualified)
        let next = SharedCounter()
        let failures = SharedCounter()
        let stopwatch = Stopwatch()
        let threads = (0..<concurrency).map { _ in
            spawnThread {
                var hints = addrinfo()
                hints.ai_family = AF_INET
                hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
                while true {
                    let index = next.increment()
                    guard index < names.count else { return }
                    var list: UnsafeMutablePointer<addrinfo>?
                    if getaddrinfo(names[index], nil, &hints, &list) == 0 {
                        freeaddrinfo(list)
                    } else {
                        failures.increment()
                    }
                }
            }
        }
        for thread in threads { pthread_join(thread, nil) }
        return (failures.value, stopwatch.elapsedSeconds)
    }

    static func readNames(_ path: String) throws -> [HostName] {
        guard let file = fopen(path, "r") else { throw ValidationError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { fclose(file) }
        var hosts: [HostName] = []
        var line = [CChar](repeating: 0, count: 1024)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard let name = text.split(separator: " ").first else { continue }
            do {
                hosts.append(try HostName(String(name)))
            } catch {
                throw ValidationError("\(path): \(error)")
            }
        }
        return hosts
    }
}

/// A counter that tasks and threads share.
private final class SharedCounter: Sendable {
    private let storage = Atomic<Int>(0)

    /// Adds one and returns the value before.
    @discardableResult
    func increment() -> Int { storage.add(1, ordering: .relaxed).oldValue }

    var value: Int { storage.load(ordering: .relaxed) }
}

/// Starts a pthread running `body`.
private func spawnThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    let status = pthread_create(
        &thread,
        nil,
        { argument in
            Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue().body()
            return nil
        },
        box
    )
    precondition(status == 0, "pthread_create failed: \(status)")
    return thread
}
