import HTTPDNSCore
import HTTPDNSTesting
import Testing

@testable import HTTPDNSClient

#if canImport(Glibc)
    import Glibc
#endif

/// `startQuery`, through which `ResolverCache` fills itself, of the HTTPS sources (the native API and DoH) against our
/// own `httpdns serve` over TLS (certificates made at test time, dnsmasq upstream): a lookup whose first address has
/// its HTTP/2 connection open is sent and answered there, without a task; anything else takes the whole failover.
@Suite("The HTTPS sources' startQuery against httpdns serve over TLS", .timeLimit(.minutes(1)))
struct HTTPSSourcesStartQueryTests {
    /// What `ResolverCache` calls: `startQuery`, waited for here.
    static func started(_ source: some ResolutionSource, _ host: String, _ families: AddressFamilies) async throws -> SourceAnswer {
        let host = try HostName(host)
        return try await withCheckedThrowingContinuation { continuation in
            source.startQuery(host, families: families) { continuation.resume(with: $0) }
        }
    }

    /// The native API: the first lookup, with no connection open, takes the whole path and opens one; the next are
    /// sent on it and answered there.
    @Test func nativeLookupsOnAnOpenConnectionAreAnsweredWithoutATask() async throws {
        try await NativeServiceSourceTests.withService { url, certificate in
            try await NativeServiceSourceTests.using(try NativeServiceSourceTests.source([url], cacert: certificate)) { source in
                let first = try await Self.started(source, "serve.test", .all)
                #expect(NativeServiceSourceTests.addresses(first.ipv4) == [IPv4Address("127.0.0.1")!])
                #expect(NativeServiceSourceTests.addresses(first.ipv6) == [IPv6Address("::1")!])
                #expect(source.client.lookupsSentOnConnection == 0, "no connection was open")
                let again = try await Self.started(source, "serve.test", .all)
                #expect(NativeServiceSourceTests.addresses(again.ipv4) == [IPv4Address("127.0.0.1")!])
                #expect(NativeServiceSourceTests.addresses(again.ipv6) == [IPv6Address("::1")!])
                let noAAAA = try await Self.started(source, "other.test", .ipv6)
                if case .negative(.noData, _)? = noAAAA.ipv6 {} else { Issue.record("expected no data, got \(String(describing: noAAAA.ipv6))") }
                #expect(noAAAA.ipv4 == nil, "only the family asked")
                #expect(source.client.lookupsSentOnConnection == 2 && source.client.lookupsAnsweredOnConnection == 2)
                let error = await #expect(throws: ResolutionError.self) { try await Self.started(source, "serve.test", []) }
                #expect(error?.code == .noFamilies, "no family asked: \(String(describing: error))")
            }
        }
    }

    /// DoH, by GET and by POST: a request per family, each sent on the open connection and answered there; both
    /// families joined into one answer, NXDOMAIN told from no data.
    @Test(arguments: [DoHSource.Configuration.Method.get, .post])
    func dohLookupsOnAnOpenConnectionAreAnsweredWithoutATask(method: DoHSource.Configuration.Method) async throws {
        try await NativeServiceSourceTests.withService { url, certificate in
            let source = try DoHSourceTests.source(url, cacert: certificate, method: method)
            do {
                _ = try await Self.started(source, "serve.test", .all)
                #expect(source.client.lookupsSentOnConnection == 0, "no connection was open")
                let both = try await Self.started(source, "serve.test", .all)
                #expect(NativeServiceSourceTests.addresses(both.ipv4) == [IPv4Address("127.0.0.1")!])
                #expect(NativeServiceSourceTests.addresses(both.ipv6) == [IPv6Address("::1")!])
                let v4only = try await Self.started(source, "other.test", .all)
                #expect(NativeServiceSourceTests.addresses(v4only.ipv4) == [IPv4Address("127.0.0.2")!])
                if case .negative(.noData, _)? = v4only.ipv6 {} else { Issue.record("expected no data, got \(String(describing: v4only.ipv6))") }
                let missing = try await Self.started(source, "missing.test", .ipv4)
                if case .negative(.nameNotFound, _)? = missing.ipv4 {} else { Issue.record("expected NXDOMAIN, got \(String(describing: missing.ipv4))") }
                #expect(source.client.lookupsSentOnConnection == 5 && source.client.lookupsAnsweredOnConnection == 5)
                await source.shutdown()
            } catch {
                await source.shutdown()
                throw error
            }
        }
    }

    /// The first address's connection is open, and its service stops answering (the process is stopped, so the kernel
    /// keeps the connection): the lookup sent there times out after the attempt timeout, that address is held to
    /// blame as the failover would hold it, and the next address answers within the same budget.
    @Test func aLookupThatTimesOutOnAnOpenConnectionGoesOnToTheNextAddress() async throws {
        try await withDNSMasq(records: ServiceTestRecords.lines) { dns in
            try await TestCertificate.with(subjectAltName: "IP:127.0.0.1") { certificate, key in
                let arguments = ["--upstream", dns.address.description, "--tls-cert", certificate, "--tls-key", key]
                let first = try await ServiceProcess.start(arguments, environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "0"])
                defer { first.stop() }
                let second = try await ServiceProcess.start(arguments, environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "0"])
                defer { second.stop() }
                let urls = [first, second].map { "https://127.0.0.1:\($0.port)" }
                let source = try NativeServiceSourceTests.source(urls, cacert: certificate) { $0.connection.attemptTimeout = .seconds(1) }
                try await NativeServiceSourceTests.using(source) { source in
                    // Opens the first address's connection. The second, never asked, would be probed first next (an
                    // address with no latency yet is), unless it is known to be much slower.
                    _ = try await Self.started(source, "serve.test", .ipv4)
                    let failover = source.client.failover
                    failover.succeeded(1, generation: try #require(failover.first()).generation, elapsed: .seconds(3600))
                    try #require(failover.first()?.index == 0)
                    kill(first.process.pid, SIGSTOP)
                    defer { kill(first.process.pid, SIGCONT) }
                    let answer = try await Self.started(source, "other.test", .ipv4)
                    #expect(NativeServiceSourceTests.addresses(answer.ipv4) == [IPv4Address("127.0.0.2")!])
                    #expect(source.client.lookupsSentOnConnection == 1 && source.client.lookupsAnsweredOnConnection == 0)
                    #expect(failover.failuresInARow == [1, 0], "\(failover.failuresInARow)")
                }
            }
        }
    }
}
