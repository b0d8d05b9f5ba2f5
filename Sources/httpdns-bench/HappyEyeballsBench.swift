import ArgumentParser
import AsyncHTTPClient
import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSTesting
import NIOSSL

/// What Happy Eyeballs costs the interceptor when both families work: every name answers nginx's 127.0.0.x address
/// and `[::1]`, and the same requests go through two interceptors alike but for the race, on (the default) and off
/// (`connectionAttemptDelay = nil`). The first request to a name makes a new client, and with the race on, one more
/// TCP handshake first; the second reuses the kept-alive connection and, its address warm, runs no race.
struct HappyEyeballsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "happy-eyeballs",
        abstract: "The interceptor's first and second request to a name with both families working, the race on against off."
    )

    @Option(help: "Fresh host names per round and way.")
    var hosts = 40

    @Option(help: "Rounds, the two ways in turn (which goes first alternates).")
    var rounds = 5

    @Flag(
        help:
            "Instead: each family black-holed in turn (first in the answer; SYNs dropped), the time of a first request with the race on, and with it off (the connect timeout)."
    )
    var blackHoled = false

    func validate() throws {
        guard hosts > 0, rounds > 0 else { throw ValidationError("counts must be positive") }
    }

    func run() async throws {
        if blackHoled { return try await runBlackHoled() }
        let names = (0..<(2 * hosts * rounds + 2)).map { "e\($0).test" }
        let subjectAltName = names.map { "DNS:\($0)" }.joined(separator: ",")
        let (on, off) = try await TestCertificate.with(subjectAltName: subjectAltName) { certificate, key in
            try await withNginx(names: names, certificate: certificate, key: key, keepaliveRequests: 100_000_000, ipv6: true) { nginx in
                try await measure(nginx, certificate: certificate, names: names)
            }
        }
        print("httpdns-bench happy-eyeballs --hosts \(hosts) --rounds \(rounds)")
        print("every name at nginx's 127.0.0.x address and [::1]; medians over the names of each round, in µs")
        print("round  first on  first off  ratio  second on  second off  ratio")
        for round in 0..<rounds {
            let (a, b) = (on[round], off[round])
            print(
                "\(round + 1)".padding(7) + formatted(a.first.median, digits: 0).padding(10) + formatted(b.first.median, digits: 0).padding(11)
                    + (formatted(a.first.median / b.first.median) + "×").padding(7) + formatted(a.second.median, digits: 0).padding(11)
                    + formatted(b.second.median, digits: 0).padding(12) + formatted(a.second.median / b.second.median) + "×"
            )
        }
        let firstRatios = zip(on, off).map { $0.first.median / $1.first.median }
        let secondRatios = zip(on, off).map { $0.second.median / $1.second.median }
        print("median of the rounds: first request \(formatted(firstRatios.median))×, second request \(formatted(secondRatios.median))×")
    }

    private struct Sample {
        var first: [Double] = []
        var second: [Double] = []
    }

    private func measure(_ nginx: NginxServer, certificate: String, names: [String]) async throws -> ([Sample], [Sample]) {
        let reply = StaticSource.Reply.addresses(ipv4: [nginx.address], ipv6: ["::1"], ttl: 3600)
        let trusted = StaticSource(Dictionary(uniqueKeysWithValues: names.map { ($0, reply) }), name: "httpdns", countsQueries: false)
        var configuration = InterceptingHTTPClient.Configuration()
        configuration.tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(certificate))]
        configuration.maxClients = names.count + 1
        var sequential = configuration
        sequential.connectionAttemptDelay = nil
        return try await withHostResolver(trusted: trusted, fallbacks: []) { resolver in
            // Every answer cached first: the requests measure connecting, not resolving.
            for name in names { _ = try await resolver.resolve(try HostName(name)) }
            return try await withInterceptingHTTPClient(resolver: resolver, configuration: configuration) { racing in
                try await withInterceptingHTTPClient(resolver: resolver, configuration: sequential) { inTurn in
                    // Warm-up: code paths and the event loops' first connections.
                    _ = try await InterceptorBench.get("https://\(names[0]):\(nginx.port)/", through: racing)
                    _ = try await InterceptorBench.get("https://\(names[1]):\(nginx.port)/", through: inTurn)
                    var on: [Sample] = []
                    var off: [Sample] = []
                    var next = 2
                    for round in 0..<rounds {
                        for isOn in round % 2 == 0 ? [true, false] : [false, true] {
                            var sample = Sample()
                            for _ in 0..<hosts where next < names.count {
                                let url = "https://\(names[next]):\(nginx.port)/"
                                next += 1
                                let client = isOn ? racing : inTurn
                                let first = Stopwatch()
                                _ = try await InterceptorBench.get(url, through: client)
                                sample.first.append(Double(first.elapsedNanoseconds) / 1000)
                                let second = Stopwatch()
                                _ = try await InterceptorBench.get(url, through: client)
                                sample.second.append(Double(second.elapsedNanoseconds) / 1000)
                            }
                            if isOn { on.append(sample) } else { off.append(sample) }
                        }
                    }
                    return (on, off)
                }
            }
        }
    }

    /// Each family black-holed in turn, first in the answer: `hosts` fresh names with the race on, two with it off.
    private func runBlackHoled() async throws {
        print("httpdns-bench happy-eyeballs --black-holed --hosts \(hosts)")
        print("the first family in the answer black-holed (SYNs dropped), the other working; a first request to a fresh name")
        for family in [AddressFamily.ipv4, .ipv6] {
            let names = (0..<(hosts + 2)).map { "h\($0).test" }
            let (on, off) = try await TestCertificate.with(subjectAltName: names.map { "DNS:\($0)" }.joined(separator: ",")) { certificate, key in
                // nginx on the working family; the hole where the other family's address answers.
                try await withNginx(names: names, certificate: certificate, key: key, keepaliveRequests: 100_000_000, ipv6: family == .ipv4) { nginx in
                    let last = Int(nginx.address.split(separator: ".").last!)!
                    let holeAddress = family == .ipv4 ? "127.0.0.\(last % 252 + 2)" : "::1"
                    let hole = try BlackHole(address: holeAddress)
                    defer { hole.close() }
                    try hole.listen(port: nginx.port)
                    let reply: StaticSource.Reply =
                        family == .ipv4
                        ? .addresses(ipv4: [holeAddress], ipv6: ["::1"], ttl: 3600) : .addresses(ipv4: [nginx.address], ipv6: [holeAddress], ttl: 3600)
                    let trusted = StaticSource(Dictionary(uniqueKeysWithValues: names.map { ($0, reply) }), name: "httpdns", countsQueries: false)
                    var configuration = InterceptingHTTPClient.Configuration()
                    configuration.tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(certificate))]
                    configuration.maxClients = names.count + 1
                    configuration.addressOrder = family == .ipv4 ? .ipv4First : .ipv6First
                    var inTurn = configuration
                    inTurn.connectionAttemptDelay = nil
                    return try await withHostResolver(trusted: trusted, fallbacks: []) { resolver in
                        for name in names { _ = try await resolver.resolve(try HostName(name)) }
                        let on = try await withInterceptingHTTPClient(resolver: resolver, configuration: configuration) { racing in
                            try await Self.firstRequests(names.prefix(hosts), port: nginx.port, through: racing)
                        }
                        let off = try await withInterceptingHTTPClient(resolver: resolver, configuration: inTurn) { client in
                            try await Self.firstRequests(names.suffix(2), port: nginx.port, through: client)
                        }
                        return (on, off)
                    }
                }
            }
            print(
                "\(family == .ipv4 ? "IPv4" : "IPv6") black-holed: race on, median \(formatted(on.median / 1000, digits: 0)) ms (max \(formatted((on.max() ?? 0) / 1000, digits: 0)) ms) over \(on.count); race off, median \(formatted(off.median / 1000, digits: 0)) ms over \(off.count)"
            )
        }
    }

    /// The time of one request to each name, in µs.
    private static func firstRequests(_ names: some Sequence<String>, port: Int, through client: InterceptingHTTPClient) async throws -> [Double] {
        var samples: [Double] = []
        for name in names {
            let stopwatch = Stopwatch()
            _ = try await InterceptorBench.get("https://\(name):\(port)/", through: client)
            samples.append(Double(stopwatch.elapsedNanoseconds) / 1000)
        }
        return samples
    }
}
