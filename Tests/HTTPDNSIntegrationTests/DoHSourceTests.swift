import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSTesting
import Testing

/// The DoH client against our own `httpdns serve` over TLS (certificates made at test time, dnsmasq upstream).
@Suite("DoHSource against httpdns serve over TLS", .timeLimit(.minutes(1)))
struct DoHSourceTests {
    static func source(_ url: String, cacert: String, method: DoHSource.Configuration.Method) throws -> DoHSource {
        var configuration = DoHSource.Configuration(servers: [try ServiceEndpoint(parsing: url)])
        configuration.connection.extraTrustRootsPEMFile = cacert
        configuration.method = method
        configuration.connection.budget = .seconds(20)
        configuration.connection.attemptTimeout = .seconds(10)
        return try DoHSource(configuration: configuration)
    }

    @Test(arguments: [DoHSource.Configuration.Method.get, .post])
    func answersBothFamiliesAndTellsNXDOMAINApart(method: DoHSource.Configuration.Method) async throws {
        try await NativeServiceSourceTests.withService { url, certificate in
            let source = try Self.source(url, cacert: certificate, method: method)
            do {
                let answer = try await source.query(try HostName("serve.test"), families: .all)
                #expect(NativeServiceSourceTests.addresses(answer.ipv4) == [IPv4Address("127.0.0.1")!])
                #expect(NativeServiceSourceTests.addresses(answer.ipv6) == [IPv6Address("::1")!])
                // other.test has an A record only: no data for AAAA.
                let v4only = try await source.query(try HostName("other.test"), families: .all)
                #expect(NativeServiceSourceTests.addresses(v4only.ipv4) == [IPv4Address("127.0.0.2")!])
                if case .negative(.noData, _)? = v4only.ipv6 {} else { Issue.record("expected no data for AAAA, got \(String(describing: v4only.ipv6))") }
                // A name that does not exist is NXDOMAIN, not merely no data: what the hijack guard needs to know.
                let missing = try await source.query(try HostName("missing.test"), families: .ipv4)
                if case .negative(.nameNotFound, _)? = missing.ipv4 {} else { Issue.record("expected NXDOMAIN, got \(String(describing: missing.ipv4))") }
                await source.shutdown()
            } catch {
                await source.shutdown()
                throw error
            }
        }
    }
}

/// The JSON DNS client against the same service.
@Suite("JSONDNSSource against httpdns serve over TLS", .timeLimit(.minutes(1)))
struct JSONDNSSourceTests {
    @Test func answersAndTellsNXDOMAINApart() async throws {
        try await NativeServiceSourceTests.withService { url, certificate in
            var configuration = JSONDNSSource.Configuration(servers: [try ServiceEndpoint(parsing: url)])
            configuration.connection.extraTrustRootsPEMFile = certificate
            configuration.connection.budget = .seconds(20)
            configuration.connection.attemptTimeout = .seconds(10)
            let source = try JSONDNSSource(configuration: configuration)
            do {
                let answer = try await source.query(try HostName("serve.test"), families: .all)
                #expect(NativeServiceSourceTests.addresses(answer.ipv4) == [IPv4Address("127.0.0.1")!])
                #expect(NativeServiceSourceTests.addresses(answer.ipv6) == [IPv6Address("::1")!])
                let missing = try await source.query(try HostName("missing.test"), families: .ipv4)
                if case .negative(.nameNotFound, _)? = missing.ipv4 {} else { Issue.record("expected NXDOMAIN, got \(String(describing: missing.ipv4))") }
                await source.shutdown()
            } catch {
                await source.shutdown()
                throw error
            }
        }
    }
}
