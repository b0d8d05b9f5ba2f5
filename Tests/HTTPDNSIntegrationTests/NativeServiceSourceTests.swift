import Foundation
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSTesting
import Testing

/// The native API client against our own `httpdns serve` over TLS, with certificates made at test time and a real
/// dnsmasq as the service's upstream.
@Suite("NativeServiceSource against httpdns serve over TLS", .timeLimit(.minutes(1)))
struct NativeServiceSourceTests {
    /// A certificate for `subjectAltName` (`IP:127.0.0.1,DNS:serve.test`), made now.
    static func withCertificate<T>(_ subjectAltName: String, _ body: (_ certificate: String, _ key: String) async throws -> T) async throws -> T {
        try await TestCertificate.with(subjectAltName: subjectAltName, body)
    }

    /// A running service over TLS with a certificate for `subjectAltName`, and its certificate file.
    static func withService<T>(
        _ subjectAltName: String = "IP:127.0.0.1,DNS:serve.test",
        _ body: (_ url: String, _ certificate: String) async throws -> T
    ) async throws -> T {
        try await withDNSMasq(records: ServiceTestRecords.lines) { dns in
            try await withCertificate(subjectAltName) { certificate, key in
                let server = try await ServiceProcess.start(
                    ["--upstream", dns.address.description, "--tls-cert", certificate, "--tls-key", key],
                    environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "0"]
                )
                defer { server.stop() }
                return try await body("https://127.0.0.1:\(server.port)", certificate)
            }
        }
    }

    static func source(_ urls: [String], cacert: String?, serverName: String? = nil, configure: (inout NativeServiceSource.Configuration) -> Void = { _ in })
        throws -> NativeServiceSource
    {
        var configuration = NativeServiceSource.Configuration(servers: try urls.map { try ServiceEndpoint(parsing: $0) })
        configuration.connection.extraTrustRootsPEMFile = cacert
        configuration.connection.serverName = serverName
        // Generous: these tests check which address answers, not how fast, and the tests around them start
        // processes on the same two cores.
        configuration.connection.budget = .seconds(20)
        configuration.connection.attemptTimeout = .seconds(10)
        configure(&configuration)
        return try NativeServiceSource(configuration: configuration)
    }

    /// Runs `body` with `source`, and shuts it down afterwards whatever happens.
    static func using<T>(_ source: NativeServiceSource, _ body: (NativeServiceSource) async throws -> T) async throws -> T {
        do {
            let result = try await body(source)
            await source.shutdown()
            return result
        } catch {
            await source.shutdown()
            throw error
        }
    }

    /// The addresses of a family's answer, whatever its TTL (the service's cache counts it down as tests run).
    static func addresses<Address>(_ answer: FamilyAnswer<Address>?) -> [Address]? {
        guard case .addresses(let addresses, _)? = answer else { return nil }
        return addresses
    }

    @Test func answersThroughTheServiceVerifyingItsIPCertificate() async throws {
        try await Self.withService { url, certificate in
            try await Self.using(try Self.source([url], cacert: certificate)) { source in
                let answer = try await source.query(try HostName("serve.test"), families: .all)
                #expect(Self.addresses(answer.ipv4) == [IPv4Address("127.0.0.1")!])
                #expect(Self.addresses(answer.ipv6) == [IPv6Address("::1")!])
                // The service's cache counts the TTL down from dnsmasq's 300 s.
                if case .addresses(_, let ttl)? = answer.ipv4 { #expect(ttl <= 300 && ttl > 200) }
                // A name the upstream does not know comes back as no data, with the service's negative TTL.
                let missing = try await source.query(try HostName("missing.test"), families: .ipv4)
                if case .negative(.noData, _)? = missing.ipv4 {} else { Issue.record("expected no data, got \(String(describing: missing.ipv4))") }
                // Through the cache, as every source is used.
                let cache = try ResolverCache(source: source)
                #expect(try await cache.resolve(try HostName("serve.test"), families: .ipv4).ipv4 == [IPv4Address("127.0.0.1")!])
            }
        }
    }

    /// With a server name, that name is what the certificate must hold (and the SNI). Here the certificate holds the
    /// name only: NIOSSL also accepts a certificate holding the IP address connected to, whatever name was asked,
    /// so a certificate with an IP SAN would pass for any name.
    @Test func aServerNameIsWhatTheCertificateMustHold() async throws {
        try await Self.withService("DNS:serve.test") { url, certificate in
            try await Self.using(try Self.source([url], cacert: certificate, serverName: "serve.test")) { source in
                let answer = try await source.query(try HostName("serve.test"), families: .ipv4)
                #expect(Self.addresses(answer.ipv4) == [IPv4Address("127.0.0.1")!])
            }
            // Another name, or none (the IP), fails on the certificate: at once, not after retrying until the
            // connect timeout (a long budget would otherwise end in a timeout).
            for serverName in ["wrong.test", nil] {
                let source = try Self.source([url], cacert: certificate, serverName: serverName) {
                    $0.connection.budget = .seconds(20)
                    $0.connection.attemptTimeout = .seconds(20)
                }
                try await Self.using(source) { source in
                    let error = await #expect(throws: ResolutionError.self) { try await source.query(try HostName("serve.test"), families: .ipv4) }
                    #expect(error?.code == .certificateRejected, "\(serverName ?? "no name"): \(String(describing: error))")
                }
            }
        }
    }

    @Test func aCertificateNotTrustedIsRejected() async throws {
        try await Self.withService { url, _ in
            try await Self.using(try Self.source([url], cacert: nil) { $0.connection.budget = .seconds(20); $0.connection.attemptTimeout = .seconds(20) }) { source in
                let error = await #expect(throws: ResolutionError.self) { try await source.query(try HostName("serve.test"), families: .ipv4) }
                #expect(error?.code == .certificateRejected, "\(String(describing: error))")
            }
        }
    }

    /// The first address is down, or presents a certificate for another address: the next one answers.
    @Test func theNextAddressAnswersWhenTheFirstFails() async throws {
        let closed = try ClosedTCPPort()
        let closedPort = closed.port
        try await Self.withService { url, certificate in
            try await Self.using(try Self.source(["https://127.0.0.1:\(closedPort)", url], cacert: certificate)) { source in
                let answer = try await source.query(try HostName("serve.test"), families: .ipv4)
                #expect(Self.addresses(answer.ipv4) == [IPv4Address("127.0.0.1")!])
            }
            // A second service whose certificate names another address, trusted by its own file.
            try await Self.withService("IP:127.0.0.9") { wrongURL, wrongCertificate in
                let bundle = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-bundle-\(UUID().uuidString).pem").path
                defer { try? FileManager.default.removeItem(atPath: bundle) }
                let both = try String(contentsOfFile: wrongCertificate, encoding: .utf8) + String(contentsOfFile: certificate, encoding: .utf8)
                try both.write(toFile: bundle, atomically: true, encoding: .utf8)
                try await Self.using(try Self.source([wrongURL, url], cacert: bundle)) { source in
                    let answer = try await source.query(try HostName("serve.test"), families: .ipv4)
                    #expect(Self.addresses(answer.ipv4) == [IPv4Address("127.0.0.1")!])
                }
            }
        }
    }

    /// SPKI pins, computed by openssl from the certificate file: the right pin answers; a certificate that verifies
    /// but whose key is none of the pins is rejected at once, saying which key it presented.
    @Test func pinsAreCheckedBesideTheCertificate() async throws {
        try await Self.withService { url, certificate in
            let openssl = try #require(ChildProcess.find("openssl"), "openssl is missing: run scripts/install-deps.sh")
            let pinned = try await ChildProcess.run(
                executable: "/bin/sh",
                arguments: [
                    "-c",
                    "'\(openssl)' x509 -pubkey -noout -in '\(certificate)' | '\(openssl)' pkey -pubin -outform der"
                        + " | '\(openssl)' dgst -sha256 -binary | '\(openssl)' base64",
                ]
            )
            let pin = try SPKIPin(parsing: pinned.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            let other = try SPKIPin(parsing: "sha256//" + String(repeating: "A", count: 43) + "=")
            try await Self.using(try Self.source([url], cacert: certificate) { $0.connection.pins = [other, pin] }) { source in
                let answer = try await source.query(try HostName("serve.test"), families: .ipv4)
                #expect(Self.addresses(answer.ipv4) == [IPv4Address("127.0.0.1")!])
            }
            let source = try Self.source([url], cacert: certificate) {
                $0.connection.pins = [other]
                $0.connection.attemptTimeout = .seconds(20)
            }
            try await Self.using(source) { source in
                let error = await #expect(throws: ResolutionError.self) { try await source.query(try HostName("serve.test"), families: .ipv4) }
                #expect(error?.code == .certificateRejected, "\(String(describing: error))")
                #expect(error?.message.contains(pin.description) == true, "names the key presented: \(String(describing: error))")
            }
            #expect(throws: ConfigurationError.self) {
                try Self.source(["http://127.0.0.1:8053"], cacert: nil) { $0.connection.pins = [pin] }
            }
        }
    }

    /// Pre-resolution asks `/resolve` in batches of the service's size; a batch the service refuses (here: larger
    /// than its `maxHostsPerBatch`) is asked again name by name.
    @Test func preResolutionAsksInBatches() async throws {
        try await Self.withService { url, certificate in
            let names = ["serve.test", "other.test"] + (1...5).map { "absent\($0).test" }
            let hosts = try names.map { try HostName($0) }
            try await Self.using(try Self.source([url], cacert: certificate)) { source in
                let cache = try ResolverCache(source: source)
                let failures = try await cache.preResolve(hosts)
                #expect(failures.isEmpty, "\(failures)")
                #expect(cache.stats.upstreamQueries.values.reduce(0, +) == 2, "5 + 2: \(cache.stats.upstreamQueries)")
                let serve = try #require(try cache.cachedResolution(try HostName("serve.test")))
                #expect(serve.ipv4 == [IPv4Address("127.0.0.1")!] && serve.ipv6 == [IPv6Address("::1")!])
                #expect(cache.stats.entries == 7)
                let absent = #expect(throws: ResolutionError.self) { try cache.cachedResolution(try HostName("absent3.test")) }
                #expect(absent?.code == .noAddress, "cached as no data")
                // Asked again, nothing is fresh-missing: no request.
                _ = try await cache.preResolve(hosts)
                #expect(cache.stats.upstreamQueries.values.reduce(0, +) == 2)
            }
            try await Self.using(try Self.source([url], cacert: certificate) { $0.maxHostsPerBatch = 6 }) { source in
                let cache = try ResolverCache(source: source)
                let failures = try await cache.preResolve(Array(hosts.prefix(6)), families: .ipv4)
                #expect(failures.isEmpty, "\(failures)")
                #expect(cache.stats.upstreamQueries.values.reduce(0, +) == 7, "one refused batch, then 6 names: \(cache.stats.upstreamQueries)")
                #expect(try cache.cachedResolution(try HostName("other.test"), families: .ipv4)?.ipv4 == [IPv4Address("127.0.0.2")!])
            }
        }
    }

    /// After a network change the source opens new connections: the kept-alive one was made from the old network.
    @Test func aNetworkChangeOpensNewConnections() async throws {
        try await Self.withService { url, certificate in
            let port = try ServiceEndpoint(parsing: url).port
            try await Self.using(try Self.source([url], cacert: certificate)) { source in
                _ = try await source.query(try HostName("serve.test"), families: .ipv4)
                _ = try await source.query(try HostName("serve.test"), families: .ipv6)
                let before = try Self.establishedConnections(port: port)
                #expect(before.count == 1, "kept alive and reused: \(before)")
                await source.networkChanged()
                _ = try await source.query(try HostName("serve.test"), families: .ipv4)
                let after = try Self.establishedConnections(port: port)
                // The old one closes once its requests are over (at once here, none being in flight).
                #expect(!after.isSubset(of: before), "a new connection: \(before) then \(after)")
            }
        }
    }

    /// The client ends (address:port, as /proc writes them) of the established TCP connections whose local end is
    /// `address`:`port`: the server's side of each client connection (from /proc/net/tcp, so no tool is needed).
    static func establishedConnections(to address: String = "127.0.0.1", port: Int) throws -> Set<Substring> {
        // Read to the end: Foundation's String(contentsOfFile:) stops after the first page of a /proc file.
        let fd = open("/proc/net/tcp", O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        let table = String(decoding: bytes, as: UTF8.self)
        // The address as /proc writes it (the hex of its 32 bits in host, little-endian, order) and the port: a peer
        // of another test may listen on the same port at another 127.0.0.x.
        let octets = address.split(separator: ".").compactMap { UInt8($0) }
        try #require(octets.count == 4, "an IPv4 address: \(address)")
        let local = String(format: "%02X%02X%02X%02X:%04X", octets[3], octets[2], octets[1], octets[0], port)
        return Set(
            table.split(separator: "\n").dropFirst().compactMap { line in
                let fields = line.split(separator: " ")
                return fields.count > 3 && fields[1] == local && fields[3] == "01" ? fields[2] : nil
            }
        )
    }

    @Test func whenEveryAddressIsDownTheErrorSaysSo() async throws {
        let closed = [try ClosedTCPPort(), try ClosedTCPPort()]
        let ports = closed.map(\.port)
        let source = try Self.source(ports.map { "https://127.0.0.1:\($0)" }, cacert: nil)
        try await Self.using(source) { source in
            let error = await #expect(throws: ResolutionError.self) { try await source.query(try HostName("serve.test"), families: .ipv4) }
            #expect(error?.code == .serverUnreachable, "\(String(describing: error))")
            #expect(error?.message.contains("could not be reached") == true)
        }
    }
}
