import HTTPDNSCAres
import HTTPDNSCore
import HTTPDNSTesting
import Testing

@Suite("c-ares against a real dnsmasq")
struct CAresAgainstDNSMasqTests {
    private func withSource<T>(
        transport: CAresSource.Configuration.Transport = .udp,
        _ body: (CAresSource, DNSMasqServer) async throws -> T
    ) async throws -> T {
        try await withDNSMasq(records: TestRecords.lines) { server in
            let source = try CAresSource(configuration: .init(servers: [server.address], transport: transport))
            do {
                let result = try await body(source, server)
                await source.shutdown()
                return result
            } catch {
                await source.shutdown()
                throw error
            }
        }
    }

    @Test("A and AAAA come back in one lookup with their TTLs")
    func dualStack() async throws {
        try await withSource { source, _ in
            let answer = try await source.query(HostName("dual.test"), families: .all)
            #expect(answer.ipv4 == .addresses([IPv4Address("192.0.2.10")!], ttlSeconds: 60))
            #expect(answer.ipv6 == .addresses([IPv6Address("2001:db8::10")!], ttlSeconds: 60))
        }
    }

    @Test("Several A records keep their order")
    func severalAddresses() async throws {
        try await withSource { source, _ in
            let answer = try await source.query(HostName("multi.test"), families: .ipv4)
            #expect(answer.ipv4 == .addresses([IPv4Address("192.0.2.21")!, IPv4Address("192.0.2.22")!], ttlSeconds: 300))
            #expect(answer.ipv6 == nil)
        }
    }

    @Test("The TTL is the smallest along the CNAME chain")
    func cnameChain() async throws {
        try await withSource { source, _ in
            let answer = try await source.query(HostName("alias2.test"), families: .all)
            #expect(answer.ipv4 == .addresses([IPv4Address("192.0.2.10")!], ttlSeconds: 15))
            #expect(answer.ipv6 == .addresses([IPv6Address("2001:db8::10")!], ttlSeconds: 15))
        }
    }

    @Test("NXDOMAIN is a negative answer, not an error")
    func nxdomain() async throws {
        try await withSource { source, _ in
            let answer = try await source.query(HostName("missing.test"), families: .all)
            #expect(answer == .negative(.nameNotFound, families: .all))
        }
    }

    @Test("An AAAA-only name has no A data")
    func aaaaOnly() async throws {
        try await withSource { source, _ in
            let v4 = try await source.query(HostName("v6only.test"), families: .ipv4)
            #expect(v4 == .negative(.noData, families: .ipv4))
            let both = try await source.query(HostName("v6only.test"), families: .all)
            #expect(both.ipv4 == .negative(.noData, ttlSeconds: nil))
            #expect(both.ipv6 == .addresses([IPv6Address("2001:db8::66")!], ttlSeconds: 120))
        }
    }

    @Test("TCP transport reaches the same answers")
    func tcp() async throws {
        try await withSource(transport: .tcp) { source, _ in
            let answer = try await source.query(HostName("dual.test"), families: .ipv4)
            #expect(answer.ipv4 == .addresses([IPv4Address("192.0.2.10")!], ttlSeconds: 60))
        }
    }
}
