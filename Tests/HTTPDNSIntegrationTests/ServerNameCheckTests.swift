import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSTesting
import Testing

/// A configured server name is the only name accepted. The service's certificate holds `IP:127.0.0.1` and the name
/// `dns.test` only: NIOSSL alone would take it for any server name asked of 127.0.0.1 (the IP SAN matches the
/// address connected to). With `serverName` `wrong.test`, every client of the service refuses it, saying the
/// certificate does not hold the name; with `dns.test` it is accepted; with none, the IP SAN is what is checked.
@Suite("A configured server name is really checked", .timeLimit(.minutes(2)))
struct ServerNameCheckTests {
    enum Client: String, CaseIterable, Sendable {
        case native, doh, json
    }

    static func source(_ client: Client, url: String, cacert: String, serverName: String?) throws -> any ResolutionSource {
        var connection = ServiceConnection(servers: [try ServiceEndpoint(parsing: url)])
        connection.extraTrustRootsPEMFile = cacert
        connection.serverName = serverName
        connection.budget = .seconds(10)
        connection.attemptTimeout = .seconds(10)
        switch client {
        case .native: return try NativeServiceSource(configuration: .init(connection: connection))
        case .doh: return try DoHSource(configuration: .init(connection: connection))
        case .json: return try JSONDNSSource(configuration: .init(connection: connection))
        }
    }

    /// The outcome of one lookup of serve.test, the source shut down afterwards.
    static func lookUp(_ client: Client, url: String, cacert: String, serverName: String?) async throws -> Result<SourceAnswer, ResolutionError> {
        let source = try source(client, url: url, cacert: cacert, serverName: serverName)
        let outcome: Result<SourceAnswer, ResolutionError>
        do {
            outcome = .success(try await source.query(try HostName("serve.test"), families: .ipv4))
        } catch let error as ResolutionError {
            outcome = .failure(error)
        }
        await source.shutdown()
        return outcome
    }

    /// The service's cache lookups, from its metrics: how many requests reached it.
    static func cacheLookups(_ url: String, _ certificate: String) async throws -> Double {
        let curl = try #require(ChildProcess.find("curl"), "curl is missing: run scripts/install-deps.sh")
        let run = try await ChildProcess.run(executable: curl, arguments: ["-s", "--max-time", "10", "--cacert", certificate, url + "/metrics"])
        #expect(run.status == .exited(0), "\(run)")
        return DoTUpstreamTests.metric(run.stdout, "httpdns_cache_lookups_total", [:])
    }

    /// Each client (over HTTP/2, which the service offers first) refuses the certificate before a request goes out:
    /// the service has looked nothing up until the right name is given.
    @Test(arguments: Client.allCases)
    func everyClientOfTheServiceChecksTheName(_ client: Client) async throws {
        try await NativeServiceSourceTests.withService("IP:127.0.0.1,DNS:dns.test") { url, certificate in
            let rejected = try await Self.lookUp(client, url: url, cacert: certificate, serverName: "wrong.test")
            #expect(try await Self.cacheLookups(url, certificate) == 0, "\(client): no request reached the service")
            switch rejected {
            case .success(let answer):
                Issue.record("\(client): a certificate without wrong.test was accepted: \(answer)")
            case .failure(let error):
                #expect(error.code == .certificateRejected, "\(client): \(error)")
                #expect(error.message.contains("does not hold wrong.test as a DNS name"), "\(client): \(error)")
                #expect(error.message.contains("127.0.0.1"), "\(client): the address is named: \(error)")
            }
            for serverName in ["dns.test", nil] {
                if case .failure(let error) = try await Self.lookUp(client, url: url, cacert: certificate, serverName: serverName) {
                    Issue.record("\(client) with server name \(serverName ?? "none"): \(error)")
                }
            }
            #expect(try await Self.cacheLookups(url, certificate) >= 1, "the control: a request that reaches the service is counted")
        }
    }

    /// unbound's DoH speaks HTTP/2 only: the name is checked on HTTP/2 connections too. Its certificate holds its
    /// address and `other.test`: `dot.test` is refused, saying so; `other.test` and no name at all are accepted.
    @Test func anHTTP2OnlyResolverIsCheckedToo() async throws {
        let ip = "127.0.\(Int.random(in: 1...254)).\(Int.random(in: 2...254))"
        try await TestCertificate.with(subjectAltName: "IP:\(ip),DNS:other.test") { certificate, key in
            try await withUnbound(at: ip, lines: DoTUpstreamTests.zone, tls: .init(certificate: certificate, key: key)) { unbound in
                func lookUp(_ serverName: String?) async throws -> Result<SourceAnswer, ResolutionError> {
                    var connection = ServiceConnection(servers: [try ServiceEndpoint(parsing: "https://\(ip):\(unbound.httpsPort!)")])
                    connection.extraTrustRootsPEMFile = certificate
                    connection.serverName = serverName
                    connection.budget = .seconds(30)
                    connection.attemptTimeout = .seconds(30)
                    let source = try DoHSource(configuration: .init(connection: connection))
                    defer { Task { await source.shutdown() } }
                    do {
                        return .success(try await source.query(try HostName("a.dot.test"), families: .ipv4))
                    } catch let error as ResolutionError {
                        return .failure(error)
                    }
                }
                let started = ContinuousClock.now
                switch try await lookUp("dot.test") {
                case .success(let answer):
                    Issue.record("a certificate without dot.test was accepted: \(answer)")
                case .failure(let error):
                    #expect(error.code == .certificateRejected, "\(error)")
                    #expect(error.message.contains("does not hold dot.test as a DNS name") && error.message.contains(ip), "\(error)")
                    // Refused when the connection is up, not at the end of the attempt's 30 s (the bound is loose: the
                    // whole suite runs at once on two cores).
                    #expect(ContinuousClock.now - started < .seconds(15), "\(error)")
                }
                for serverName in ["other.test", nil] {
                    let outcome = try await lookUp(serverName)
                    #expect((try? outcome.get())?.ipv4 == .addresses([IPv4Address("192.0.2.1")!], ttlSeconds: 300), "\(serverName ?? "none"): \(outcome)")
                }
            }
        }
    }

    /// The command line, as the issue found it: `httpdns resolve --server-name wrong.example` fails, exit 3, saying
    /// why; the right name passes.
    @Test func resolveRefusesTheWrongServerName() async throws {
        try await NativeServiceSourceTests.withService("IP:127.0.0.1,DNS:dns.test") { url, certificate in
            let base = ["serve.test", "--source", "httpdns", "--server", url, "--cacert", certificate, "--budget-ms", "10000", "--attempt-timeout-ms", "10000"]
            let wrong = try await ServiceProcess.runCommand("resolve", base + ["--server-name", "wrong.example"], environment: [:])
            #expect(wrong.status == .exited(3), "\(wrong)")
            #expect(wrong.stderr.contains("does not hold wrong.example as a DNS name"), "\(wrong)")
            let right = try await ServiceProcess.runCommand("resolve", base + ["--server-name", "dns.test"], environment: [:])
            #expect(right.status == .exited(0), "\(right)")
        }
    }
}
