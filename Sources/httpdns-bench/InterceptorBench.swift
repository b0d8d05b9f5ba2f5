import ArgumentParser
import AsyncHTTPClient
import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSTesting
import HTTPDNSWire
import Metrics
import NIOCore
import NIOSSL
import Prometheus

#if canImport(Glibc)
    import Glibc
#endif

/// Requests through `InterceptingHTTPClient` against a plain AsyncHTTPClient `HTTPClient`, both to the same nginx over
/// HTTPS in one run: what the interceptor adds per request, and what its client per (host, address) costs.
struct InterceptorBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "interceptor",
        abstract:
            "Latency and requests/s through InterceptingHTTPClient as ratios against AsyncHTTPClient to the same nginx, and the cost of a client per host."
    )

    @Option(help: "Requests per round and way: one after another for latency, and in total across the tasks for throughput.")
    var requests = 5000

    @Option(help: "Tasks sending requests at once, for throughput.")
    var concurrency = 16

    @Option(help: "Rounds, the two ways in turn (which goes first alternates).")
    var rounds = 7

    @Option(help: "Distinct host names, one request after another to each, for the cost of a client per host.")
    var hosts = 50

    @Flag(help: "Print one JSON object.")
    var json = false

    @Flag(help: "A control run: a second AsyncHTTPClient, set up as the first, in the interceptor's place. Its ratios are what the benchmark reports when there is no difference.")
    var control = false

    func validate() throws {
        guard requests > 0, concurrency > 0, rounds > 0, hosts > 0 else { throw ValidationError("counts must be positive") }
    }

    /// A setup the benchmark cannot measure through, such as an answer that is not 200.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// One GET of the whole body; returns the body's size.
    typealias Get = @Sendable () async throws -> Int

    /// Requests that failed, and the first failure.
    struct Failures {
        var count = 0
        var first: String?

        mutating func add(_ other: Failures) {
            count += other.count
            first = first ?? other.first
        }
    }

    /// The figures of one way over every round.
    struct Way {
        var latenciesUs: [Double] = []
        var rates: [Double] = []
        /// This process's CPU time (user and system) per request of each throughput round: the client's side alone.
        var cpuUs: [Double] = []
        var failures = Failures()

        mutating func add(latencies: (samples: [Double], failures: Failures)) {
            latenciesUs += latencies.samples
            failures.add(latencies.failures)
        }

        mutating func add(rate: (perSecond: Double, cpuUs: Double, failures: Failures)) {
            rates.append(rate.perSecond)
            cpuUs.append(rate.cpuUs)
            failures.add(rate.failures)
        }
    }

    /// What a client per host cost: resident growth, and the first and second request to each host.
    struct PerHost {
        var clients: Int
        var residentGrowth: Int
        var firstUs: [Double]
        var secondUs: [Double]
    }

    struct Report {
        var origin: String
        var version: String
        var baseline: Way
        var subject: Way
        var perHost: [(String, PerHost)]
    }

    var commandLine: String {
        "httpdns-bench interceptor --requests \(requests) --concurrency \(concurrency) --rounds \(rounds) --hosts \(hosts)" + (control ? " --control" : "")
    }

    func run() async throws {
        // A backend that embeds the interceptor exports its metrics: its counters cost what they would there.
        MetricsSystem.bootstrap(PrometheusMetricsFactory())
        let names = (0..<hosts).map { "h\($0).test" }
        // Every name in the certificate, explicitly: no wildcard on a single label for a verifier to refuse.
        let subjectAltName = (["a.test", "b.test"] + names).map { "DNS:\($0)" }.joined(separator: ",")
        let report = try await TestCertificate.with(subjectAltName: subjectAltName) { certificate, key in
            // No connection ends under the benchmark: nginx's GOAWAY after 1,000 requests would fail some of the plain
            // client's requests (which it does not send again) and make the interceptor send its own again.
            try await withNginx(names: ["a.test", "b.test"] + names, certificate: certificate, key: key, keepaliveRequests: 100_000_000) { nginx in
                try await measure(nginx, certificate: certificate, names: names)
            }
        }
        show(report)
    }

    private func measure(_ nginx: NginxServer, certificate: String, names: [String]) async throws -> Report {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(certificate))]

        let reply = StaticSource.Reply.addresses(ipv4: [nginx.address], ipv6: [], ttl: 3600)
        let trusted = StaticSource(Dictionary(uniqueKeysWithValues: (["a.test"] + names).map { ($0, reply) }), name: "httpdns", countsQueries: false)
        let resolver = try HostResolver(trusted: trusted, fallbacks: [])
        var configuration = InterceptingHTTPClient.Configuration()
        configuration.tls = tls
        // Every host's client kept, so that the per-host part measures clients, not evictions.
        configuration.maxClients = max(configuration.maxClients, hosts + 1)
        // The settings the interceptor gives each of its clients, so that the difference is the interceptor's own.
        let base: HTTPClient.Configuration = {
            var client = HTTPClient.Configuration(
                tlsConfiguration: tls,
                redirectConfiguration: .disallow,
                timeout: .init(connect: TimeAmount(configuration.connectTimeout), read: TimeAmount(configuration.readTimeout)),
                decompression: .disabled
            )
            client.connectionPool.retryConnectionEstablishment = false
            return client
        }()
        func plainClient(_ overrides: [String: String]) -> HTTPClient {
            var client = base
            client.dnsOverride = overrides
            return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: client)
        }

        let subject = try InterceptingHTTPClient(resolver: resolver, configuration: configuration)
        var plain = [plainClient(["a.test": nginx.address])]
        do {
            let report = try await measure(nginx, names: names, subject: subject, plain: &plain, plainClient: plainClient)
            try await Self.shutDown(subject, plain)
            return report
        } catch {
            try? await Self.shutDown(subject, plain)
            throw error
        }
    }

    private static func shutDown(_ subject: InterceptingHTTPClient, _ plain: [HTTPClient]) async throws {
        await subject.shutdown()
        for client in plain { try await client.shutdown() }
    }

    private func measure(
        _ nginx: NginxServer,
        names: [String],
        subject: InterceptingHTTPClient,
        plain: inout [HTTPClient],
        plainClient: ([String: String]) -> HTTPClient
    ) async throws -> Report {
        let resolver = subject.resolver
        // The cache warm: a request resolves nothing upstream.
        for name in ["a.test"] + names { _ = try await resolver.resolve(try HostName(name)) }

        let url = "https://a.test:\(nginx.port)/"
        let baseline = plain[0]
        let viaBaseline: Get = { try await Self.get(url, through: baseline) }
        var viaSubject: Get = { try await Self.get(url, through: subject) }
        if control {
            let twin = plainClient(["a.test": nginx.address])
            plain.append(twin)
            viaSubject = { try await Self.get(url, through: twin) }
        }
        let first = try await baseline.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
        _ = try await first.body.collect(upTo: 1 << 16)
        // Warm-up: connections open, TLS sessions and code paths hot, and each way's tasks started once.
        for get in [viaBaseline, viaSubject] {
            _ = await Self.latencies(get, count: min(requests, 500))
            _ = await Self.rate(get, total: min(requests, 1000), concurrency: concurrency)
        }
        var ways = (baseline: Way(), subject: Way())
        for round in 0..<rounds {
            // Which way goes first alternates, so that neither always runs on a machine just warmed by the other.
            let subjectFirst = round % 2 == 1
            let latencies = await Self.latencies(subjectFirst ? (viaSubject, viaBaseline) : (viaBaseline, viaSubject), count: requests)
            let (subjectLatencies, baselineLatencies) = subjectFirst ? latencies : (latencies.1, latencies.0)
            ways.baseline.add(latencies: baselineLatencies)
            ways.subject.add(latencies: subjectLatencies)
            for isSubject in subjectFirst ? [true, false] : [false, true] {
                let rate = await Self.rate(isSubject ? viaSubject : viaBaseline, total: requests, concurrency: concurrency)
                if isSubject { ways.subject.add(rate: rate) } else { ways.baseline.add(rate: rate) }
            }
        }

        // A client per host. Each set stays alive until all are measured, so each one's growth is pages of its own.
        let port = nginx.port
        let interceptorClients = subject.clientCount
        let intercepted = try await Self.perHost(names) { name in
            let url = "https://\(name):\(port)/"
            return { try await Self.get(url, through: subject) }
        }
        let clientPerHost = try await Self.perHost(names) { name in
            // The client is made inside the first request's time, as the interceptor makes its own.
            let url = "https://\(name):\(port)/"
            let client = plainClient([name: nginx.address])
            plain.append(client)
            return { try await Self.get(url, through: client) }
        }
        let shared = plainClient(Dictionary(uniqueKeysWithValues: names.map { ($0, nginx.address) }))
        plain.append(shared)
        let oneClient = try await Self.perHost(names) { name in
            let url = "https://\(name):\(port)/"
            return { try await Self.get(url, through: shared) }
        }
        return Report(
            origin: "nginx at \(nginx.address):\(nginx.port)",
            version: "\(first.version)",
            baseline: ways.baseline,
            subject: ways.subject,
            perHost: [
                (
                    "InterceptingHTTPClient",
                    PerHost(
                        clients: subject.clientCount - interceptorClients,
                        residentGrowth: intercepted.growth,
                        firstUs: intercepted.first,
                        secondUs: intercepted.second
                    )
                ),
                (
                    "an HTTPClient per host",
                    PerHost(clients: names.count, residentGrowth: clientPerHost.growth, firstUs: clientPerHost.first, secondUs: clientPerHost.second)
                ),
                (
                    "one HTTPClient, all hosts",
                    PerHost(clients: 1, residentGrowth: oneClient.growth, firstUs: oneClient.first, secondUs: oneClient.second)
                ),
            ]
        )
    }

    /// Two requests to each name in turn, the first and second timed apart, and the resident growth over all.
    /// `makeGet` runs inside the first request's time.
    private static func perHost(
        _ names: [String],
        _ makeGet: (String) throws -> Get
    ) async throws -> (growth: Int, first: [Double], second: [Double]) {
        var first: [Double] = []
        var second: [Double] = []
        let before = System.residentBytes()
        for name in names {
            let stopwatch = Stopwatch()
            let get = try makeGet(name)
            _ = try await get()
            first.append(Double(stopwatch.elapsedNanoseconds) / 1000)
            let again = Stopwatch()
            _ = try await get()
            second.append(Double(again.elapsedNanoseconds) / 1000)
        }
        return (System.residentBytes() - before, first, second)
    }

    static func get(_ url: String, through client: HTTPClient) async throws -> Int {
        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 16)
        guard response.status == .ok else { throw Failure(description: "\(url) answered \(response.status)") }
        return body.readableBytes
    }

    static func get(_ url: String, through client: InterceptingHTTPClient) async throws -> Int {
        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30)).response
        let body = try await response.body.collect(upTo: 1 << 16)
        guard response.status == .ok else { throw Failure(description: "\(url) answered \(response.status)") }
        return body.readableBytes
    }

    /// `count` requests one after another: the microseconds each that succeeded took, and the failures.
    static func latencies(_ get: Get, count: Int) async -> (samples: [Double], failures: Failures) {
        var samples: [Double] = []
        samples.reserveCapacity(count)
        var failures = Failures()
        for _ in 0..<count {
            await time(get, into: &samples, failures: &failures)
        }
        return (samples, failures)
    }

    /// `count` requests each way, one after another, the two ways taking turns request by request so that the
    /// machine's drift, even within a round, falls on both alike.
    static func latencies(
        _ ways: (Get, Get),
        count: Int
    ) async -> ((samples: [Double], failures: Failures), (samples: [Double], failures: Failures)) {
        var samples: ([Double], [Double]) = ([], [])
        samples.0.reserveCapacity(count)
        samples.1.reserveCapacity(count)
        var failures = (Failures(), Failures())
        for _ in 0..<count {
            await time(ways.0, into: &samples.0, failures: &failures.0)
            await time(ways.1, into: &samples.1, failures: &failures.1)
        }
        return ((samples.0, failures.0), (samples.1, failures.1))
    }

    private static func time(_ get: Get, into samples: inout [Double], failures: inout Failures) async {
        let stopwatch = Stopwatch()
        do {
            _ = try await get()
            samples.append(Double(stopwatch.elapsedNanoseconds) / 1000)
        } catch {
            failures.add(Failures(count: 1, first: "\(error)"))
        }
    }

    /// `total` requests from `concurrency` tasks, each taking its share: requests that succeeded per second, and the
    /// failures.
    static func rate(_ get: @escaping Get, total: Int, concurrency: Int) async -> (perSecond: Double, cpuUs: Double, failures: Failures) {
        let cpu = cpuMicroseconds()
        let stopwatch = Stopwatch()
        let failures = await withTaskGroup(of: Failures.self) { group in
            for task in 0..<concurrency {
                let share = total / concurrency + (task < total % concurrency ? 1 : 0)
                group.addTask {
                    var failures = Failures()
                    for _ in 0..<share {
                        do { _ = try await get() } catch { failures.add(Failures(count: 1, first: "\(error)")) }
                    }
                    return failures
                }
            }
            var failures = Failures()
            for await some in group { failures.add(some) }
            return failures
        }
        let seconds = stopwatch.elapsedSeconds
        let done = Double(total - failures.count)
        return (done / seconds, (cpuMicroseconds() - cpu) / done, failures)
    }

    /// This process's CPU time so far, user and system, in microseconds.
    static func cpuMicroseconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let user = Double(usage.ru_utime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec)
        return user + Double(usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_stime.tv_usec)
    }

    private func show(_ report: Report) {
        let ways = [("AsyncHTTPClient", report.baseline), (control ? "AsyncHTTPClient (control)" : "InterceptingHTTPClient", report.subject)]
        let median = (baseline: report.baseline.latenciesUs.median, subject: report.subject.latenciesUs.median)
        let rate = (baseline: report.baseline.rates.median, subject: report.subject.rates.median)
        let cpu = (baseline: report.baseline.cpuUs.median, subject: report.subject.cpuUs.median)
        let latencyRatio = median.subject / median.baseline
        let rateRatio = rate.subject / rate.baseline
        let cpuRatio = cpu.subject / cpu.baseline
        let mib = 1024.0 * 1024.0
        if json {
            print(
                JSON.object([
                    ("benchmark", .string("interceptor")),
                    ("command", .string(commandLine)),
                    ("httpVersion", .string(report.version)),
                    (
                        "ways",
                        .array(
                            ways.map { name, way in
                                .object([
                                    ("way", .string(name)),
                                    ("medianUs", .number(way.latenciesUs.median)), ("p90Us", .number(way.latenciesUs.percentile(0.9))),
                                    ("requestsPerSecond", .number(way.rates.median.rounded())),
                                    ("cpuUsPerRequest", .number(way.cpuUs.median)),
                                    ("failures", .integer(way.failures.count)),
                                ])
                            }
                        )
                    ),
                    ("latencyRatio", .number(latencyRatio)), ("throughputRatio", .number(rateRatio)), ("cpuRatio", .number(cpuRatio)),
                    (
                        "perHost",
                        .array(
                            report.perHost.map { way, costs in
                                .object([
                                    ("way", .string(way)), ("hosts", .integer(hosts)), ("clients", .integer(costs.clients)),
                                    ("residentGrowthMiB", .number(Double(costs.residentGrowth) / mib)),
                                    ("residentBytesPerHost", .number(Double(costs.residentGrowth) / Double(hosts))),
                                    ("firstRequestMedianUs", .number(costs.firstUs.median)),
                                    ("secondRequestMedianUs", .number(costs.secondUs.median)),
                                ])
                            }
                        )
                    ),
                ]).text
            )
            return
        }
        func us(_ value: Double, digits: Int = 1) -> String { formatted(value, digits: digits) + " µs" }
        print(commandLine)
        print("GET https://a.test/ from \(report.origin) over TLS (\(report.version)), a short body read whole each time;")
        print(
            "\(rounds) rounds after a warm-up: \(requests) requests one after another each way, the ways taking turns request by request; then \(requests) from \(concurrency) tasks, one way after the other"
        )
        print("")
        print("  \("".padding(24)) \("median".padding(11)) \("p90".padding(11)) \("requests/s (rounds)".padding(24)) client CPU per request")
        for (name, way) in ways {
            let rates =
                "\(formatted(way.rates.median, digits: 0)) (\(formatted(way.rates.min() ?? .nan, digits: 0))–\(formatted(way.rates.max() ?? .nan, digits: 0)))"
            print(
                "  \(name.padding(24)) \(us(way.latenciesUs.median).padding(11)) \(us(way.latenciesUs.percentile(0.9)).padding(11)) \(rates.padding(24)) \(us(way.cpuUs.median))"
            )
        }
        print(
            "  \("ratio".padding(24)) \((formatted(latencyRatio, digits: 3) + "x").padding(11)) \((formatted(report.subject.latenciesUs.percentile(0.9) / report.baseline.latenciesUs.percentile(0.9), digits: 3) + "x").padding(11)) \((formatted(rateRatio, digits: 3) + "x").padding(24)) \(formatted(cpuRatio, digits: 3))x"
        )
        for (name, way) in ways where way.failures.count > 0 {
            print(
                "  \(name): \(way.failures.count) of \(2 * requests * rounds) requests failed and are left out; the first: \(way.failures.first ?? "")"
            )
        }
        print(
            "  target: latency at most 1.05x (median): \(latencyRatio <= 1.05 ? "met" : "NOT met"); throughput at least 0.95x: \(rateRatio >= 0.95 ? "met" : "NOT met")"
        )
        print("")
        print("\(hosts) host names, all at nginx's address, two requests to each in turn (medians over the hosts)")
        print(
            "  \("".padding(26)) \("clients".padding(8)) \("resident growth".padding(16)) \("per host".padding(11)) \("1st request".padding(12)) 2nd request"
        )
        for (way, costs) in report.perHost {
            let growth = Double(costs.residentGrowth)
            print(
                "  \(way.padding(26)) \(String(costs.clients).padding(8)) \(("+" + formatted(growth / mib) + " MiB").padding(16)) \((formatted(growth / Double(hosts) / 1024, digits: 0) + " KiB").padding(11)) \(us(costs.firstUs.median, digits: 0).padding(12)) \(us(costs.secondUs.median, digits: 0))"
            )
        }
        let perHost = report.perHost.map(\.1)
        let growth = perHost.map { Double($0.residentGrowth) }
        print(
            "  resident growth, interceptor / an HTTPClient per host: \(formatted(growth[0] / growth[1]))x; / one HTTPClient for all: \(formatted(growth[0] / growth[2]))x"
        )
    }
}

extension Array where Element == Double {
    /// The value at or below which `fraction` of the values lie (nearest rank).
    fileprivate func percentile(_ fraction: Double) -> Double {
        guard !isEmpty else { return .nan }
        let sorted = self.sorted()
        let rank = Int((fraction * Double(sorted.count)).rounded(.up))
        return sorted[Swift.min(Swift.max(rank, 1), sorted.count) - 1]
    }
}
