import Foundation
import HTTPDNSCore
import HTTPDNSTesting
import HTTPDNSWire
import NIOSSL
import Testing

@testable import HTTPDNSClient

/// `DoTSource` against unbound serving DNS over TLS on 127.0.0.x with a certificate made at test time. `kdig +tls`
/// checks the unbound side of the fixture first, so a failure here is ours, not the fixture's.
@Suite("DNS over TLS against unbound", .timeLimit(.minutes(2)))
struct DoTSourceTests {
    static let zone = [
        #"local-zone: "dot.test." static"#,
        #"local-data: "dot.test. 300 IN SOA ns.dot.test. hostmaster.dot.test. 1 3600 600 86400 60""#,
        #"local-data: "a.dot.test. 300 IN A 192.0.2.1""#,
        #"local-data: "a.dot.test. 300 IN AAAA 2001:db8::1""#,
        #"local-data: "v4.dot.test. 120 IN A 192.0.2.4""#,
        #"local-data: "dot.test. 300 IN MX 10 mail.dot.test.""#,
    ] + (0..<200).map { #"local-data: "n\#($0).dot.test. 300 IN A 198.51.100.\#($0 % 250 + 1)""# }

    /// unbound with DoT, its certificate for `subjectAltName`; `body` gets it, the certificate's path and its DoT
    /// endpoint. `extraLines` go into unbound's server section.
    static func withDoT(
        subjectAltName: String = "DNS:dot.test",
        extraLines: [String] = [],
        _ body: (UnboundServer, String, DoTEndpoint) async throws -> Void
    ) async throws {
        try await TestCertificate.with(subjectAltName: subjectAltName) { certificate, key in
            try await withUnbound(lines: zone + extraLines, tls: .init(certificate: certificate, key: key)) { unbound in
                let endpoint = try DoTEndpoint(address: unbound.address.ip, port: unbound.tlsPort!)
                try await body(unbound, certificate, endpoint)
            }
        }
    }

    static func configuration(_ servers: [DoTEndpoint], certificate: String, serverName: String? = "dot.test") -> DoTSource.Configuration {
        var configuration = DoTSource.Configuration(servers: servers)
        configuration.serverName = serverName
        configuration.extraTrustRootsPEMFile = certificate
        // Generous: these tests check what is answered, not how fast, beside the other suites' servers on two cores.
        configuration.budget = .seconds(10)
        configuration.attemptTimeout = .seconds(10)
        return configuration
    }

    /// Runs `body` with a source, shut down afterwards however `body` ends.
    static func withSource(_ configuration: DoTSource.Configuration, _ body: (DoTSource) async throws -> Void) async throws {
        let source = try DoTSource(configuration: configuration)
        do {
            try await body(source)
        } catch {
            await source.shutdown()
            throw error
        }
        await source.shutdown()
    }

    /// The fixture itself: kdig, which none of us wrote, gets the answer over TLS with the name checked.
    @Test func kdigReadsTheFixture() async throws {
        try await Self.withDoT { unbound, certificate, endpoint in
            guard let kdig = ChildProcess.find("kdig") else { Issue.record("kdig is not installed: run scripts/install-deps.sh"); return }
            let run = try await ChildProcess.run(
                executable: kdig,
                arguments: [
                    "@\(endpoint.address)", "-p", "\(endpoint.port)", "+tls", "+tls-ca=\(certificate)", "+tls-hostname=dot.test",
                    "a.dot.test", "A", "+short",
                ]
            )
            #expect(run.stdout.contains("192.0.2.1"), "\(run.stdout) \(run.stderr)")
        }
    }

    @Test func answersBothFamilies() async throws {
        try await Self.withDoT { _, certificate, endpoint in
            try await Self.withSource(Self.configuration([endpoint], certificate: certificate)) { source in
                let answer = try await source.query(try HostName("a.dot.test"), families: .all)
                #expect(answer.ipv4 == .addresses([IPv4Address("192.0.2.1")!], ttlSeconds: 300))
                #expect(answer.ipv6 == .addresses([IPv6Address("2001:db8::1")!], ttlSeconds: 300))
                #expect(source.connectionsOpened == 1)
            }
        }
    }

    /// NXDOMAIN and no data are answers, with the SOA's negative TTL (RFC 2308: min(TTL, MINIMUM) = 60).
    @Test func negativeAnswersCarryTheSOAsTTL() async throws {
        try await Self.withDoT { _, certificate, endpoint in
            try await Self.withSource(Self.configuration([endpoint], certificate: certificate)) { source in
                let missing = try await source.query(try HostName("nosuch.dot.test"), families: .ipv4)
                #expect(missing.ipv4 == .negative(.nameNotFound, ttlSeconds: 60))
                let noData = try await source.query(try HostName("v4.dot.test"), families: .ipv6)
                #expect(noData.ipv6 == .negative(.noData, ttlSeconds: 60))
            }
        }
    }

    /// 200 names, both families, all at once: 400 queries on one connection, at most 128 in flight, the rest waiting
    /// their turn, every answer matched to its question.
    @Test func pipelinesManyQueriesOnOneConnection() async throws {
        try await Self.withDoT { _, certificate, endpoint in
            var configuration = Self.configuration([endpoint], certificate: certificate)
            configuration.budget = .seconds(10)
            configuration.attemptTimeout = .seconds(10)
            configuration.maxQueriesInFlight = 128
            try await Self.withSource(configuration) { source in
                // The connection open first, so that every query finds it.
                _ = try await source.query(try HostName("a.dot.test"), families: .ipv4)
                let answers = try await withThrowingTaskGroup(of: (Int, SourceAnswer).self) { group in
                    for index in 0..<200 {
                        group.addTask { (index, try await source.query(try HostName("n\(index).dot.test"), families: .all)) }
                    }
                    var answers: [Int: SourceAnswer] = [:]
                    for try await (index, answer) in group { answers[index] = answer }
                    return answers
                }
                for index in 0..<200 {
                    #expect(answers[index]?.ipv4 == .addresses([IPv4Address("198.51.100.\(index % 250 + 1)")!], ttlSeconds: 300), "n\(index)")
                    #expect(answers[index]?.ipv6 == .negative(.noData, ttlSeconds: 60), "n\(index)")
                }
                #expect(source.connectionsOpened == 1)
            }
        }
    }

    /// Past the queries in flight and those waiting, a query fails at once, typed, and is never sent.
    @Test func boundsTheQueriesWaiting() async throws {
        try await Self.withDoT { _, certificate, endpoint in
            var configuration = Self.configuration([endpoint], certificate: certificate)
            configuration.maxQueriesInFlight = 1
            configuration.maxQueriesWaiting = 0
            try await Self.withSource(configuration) { source in
                _ = try await source.query(try HostName("a.dot.test"), families: .ipv4)
                let outcomes = await withTaskGroup(of: ResolutionError?.self) { group in
                    for index in 0..<20 {
                        group.addTask {
                            do {
                                _ = try await source.query(try HostName("n\(index).dot.test"), families: .ipv4)
                                return nil
                            } catch {
                                return error as? ResolutionError
                            }
                        }
                    }
                    var errors: [ResolutionError?] = []
                    for await outcome in group { errors.append(outcome) }
                    return errors
                }
                #expect(outcomes.contains { $0 == nil }, "one query at least had room")
                #expect(outcomes.contains { $0?.code == .tooManyPendingQueries }, "\(outcomes)")
                #expect(outcomes.allSatisfy { $0 == nil || $0?.code == .tooManyPendingQueries }, "\(outcomes)")
            }
        }
    }

    /// unbound closes a connection idle for 3 s; the next query goes out on a new one and is answered. (Not 1 s: a
    /// machine busy with the other suites can take that long to open the next connection and send its query, and
    /// unbound then closes it too; a query lost to a close is sent once more, not forever.)
    @Test func reconnectsAfterTheServerClosesAnIdleConnection() async throws {
        try await Self.withDoT(extraLines: ["tcp-idle-timeout: 3000"]) { _, certificate, endpoint in
            try await Self.withSource(Self.configuration([endpoint], certificate: certificate)) { source in
                _ = try await source.query(try HostName("a.dot.test"), families: .ipv4)
                // The signal: the connection unbound closed.
                let first = try #require(await source.currentConnection(at: 0))
                try await first.channel.closeFuture.get()
                let answer = try await source.query(try HostName("v4.dot.test"), families: .ipv4)
                #expect(answer.ipv4 == .addresses([IPv4Address("192.0.2.4")!], ttlSeconds: 120))
                // A new connection at least (on a busy machine unbound may close that one too before the query, which
                // is then sent once more on a third).
                #expect(source.connectionsOpened >= 2)
            }
        }
    }

    /// A certificate for another name fails closed, at once, as a rejected certificate naming the server.
    @Test func refusesACertificateForAnotherName() async throws {
        try await Self.withDoT(subjectAltName: "DNS:other.test") { _, certificate, endpoint in
            try await Self.withSource(Self.configuration([endpoint], certificate: certificate)) { source in
                // Failed closed at the handshake, as a certificate's rejection, not after the 10 s budget as a timeout.
                let error = await #expect(throws: ResolutionError.self) { try await source.query(try HostName("a.dot.test"), families: .ipv4) }
                #expect(error?.code == .certificateRejected)
                #expect(error?.message.contains("\(endpoint)") == true, "\(String(describing: error))")
                #expect(error?.message.contains("dot.test") == true, "\(String(describing: error))")
            }
        }
    }

    /// A certificate that holds the address (an IP SAN) and another name: NIOSSL would take it for any server name,
    /// so a configured name is checked once more and it is refused; without a server name, the address is what is
    /// checked, and it is accepted.
    @Test func aConfiguredNameIsTheOnlyNameAccepted() async throws {
        try await Self.withIPCertificate { certificate, endpoint in
            try await Self.withSource(Self.configuration([endpoint], certificate: certificate, serverName: "dot.test")) { source in
                let error = await #expect(throws: ResolutionError.self) { try await source.query(try HostName("a.dot.test"), families: .ipv4) }
                #expect(error?.code == .certificateRejected)
                #expect(error?.message.contains("does not hold dot.test as a DNS name") == true, "\(String(describing: error))")
            }
            try await Self.withSource(Self.configuration([endpoint], certificate: certificate, serverName: nil)) { source in
                let answer = try await source.query(try HostName("a.dot.test"), families: .ipv4)
                #expect(answer.ipv4 == .addresses([IPv4Address("192.0.2.1")!], ttlSeconds: 300))
            }
        }
    }

    /// unbound with a certificate holding its own address as an IP SAN and the name other.test.
    static func withIPCertificate(_ body: (String, DoTEndpoint) async throws -> Void) async throws {
        // The address first, so that the certificate can hold it; unbound then starts on it.
        let ip = "127.0.0.\(Int.random(in: 2...254))"
        try await TestCertificate.with(subjectAltName: "DNS:other.test,IP:\(ip)") { certificate, key in
            try await withUnbound(at: ip, lines: zone, tls: .init(certificate: certificate, key: key)) { unbound in
                try await body(certificate, try DoTEndpoint(address: unbound.address.ip, port: unbound.tlsPort!))
            }
        }
    }

    /// A pin that is not the server's key fails closed; its own key's pin passes.
    @Test func checksPins() async throws {
        try await Self.withDoT { _, certificate, endpoint in
            var pinned = Self.configuration([endpoint], certificate: certificate)
            pinned.pins = [try SPKIPin(parsing: "sha256//" + String(repeating: "A", count: 43) + "=")]
            try await Self.withSource(pinned) { source in
                let error = await #expect(throws: ResolutionError.self) { try await source.query(try HostName("a.dot.test"), families: .ipv4) }
                #expect(error?.code == .certificateRejected)
            }
            pinned.pins = [try SPKIPin(of: try NIOSSLCertificate.fromPEMFile(certificate)[0])]
            try await Self.withSource(pinned) { source in
                let answer = try await source.query(try HostName("a.dot.test"), families: .ipv4)
                #expect(answer.ipv4 == .addresses([IPv4Address("192.0.2.1")!], ttlSeconds: 300))
            }
        }
    }

    /// The first server refuses connections; the second answers, and the first then cools down.
    @Test func failsOverToTheNextServer() async throws {
        try await Self.withDoT { _, certificate, endpoint in
            let closed = try ClosedTCPPort()
            let dead = try DoTEndpoint(address: IPAddress("127.0.0.1")!, port: closed.port)
            try await Self.withSource(Self.configuration([dead, endpoint], certificate: certificate)) { source in
                let answer = try await source.query(try HostName("a.dot.test"), families: .ipv4)
                #expect(answer.ipv4 == .addresses([IPv4Address("192.0.2.1")!], ttlSeconds: 300))
            }
            withExtendedLifetime(closed) {}
        }
    }

    /// REFUSED (or SERVFAIL) is an answer: the next server is asked, but when none answers better the one that refused
    /// is not held to blame. Else any client could cool down every server by asking for a name that fails everywhere.
    /// A server that does not answer is.
    @Test func aRefusalEverywhereCoolsNoServerDown() async throws {
        try await Self.withDoT(extraLines: [#"local-zone: "bad.dot.test." always_refuse"#]) { _, certificate, endpoint in
            let closed = try ClosedTCPPort()
            let dead = try DoTEndpoint(address: IPAddress("127.0.0.1")!, port: closed.port)
            try await Self.withSource(Self.configuration([endpoint, dead], certificate: certificate)) { source in
                let error = await #expect(throws: ResolutionError.self) { try await source.query(try HostName("bad.dot.test"), families: .ipv4) }
                #expect(error?.code == .refused, "\(String(describing: error))")
                let query = try DNSMessage(id: 9, recursionDesired: true, questions: [.init(name: "bad.dot.test", type: .txt)]).encoded()
                #expect(try DNSMessage(parsing: try await source.send(query)).responseCode == .refused)
                // unbound refused twice, the dead port failed twice: only the dead one is blamed.
                #expect(source.failover.failuresInARow == [0, 2], "\(source.failover.failuresInARow)")
            }
            withExtendedLifetime(closed) {}
        }
    }

    /// A server that refuses what the next one answers is cooled down: a wrong ACL or a broken resolver would
    /// otherwise be asked first, for nothing, on every query.
    @Test func aRefusalAnotherServerAnswersCoolsTheRefuserDown() async throws {
        try await Self.withRefusingThenAnswering { source in
            // The second server answers (NXDOMAIN: the name is under its static zone).
            let answer = try await source.query(try HostName("bad.dot.test"), families: .ipv4)
            #expect(answer.ipv4 == .negative(.nameNotFound, ttlSeconds: 60))
            #expect(source.failover.failuresInARow == [1, 0], "\(source.failover.failuresInARow)")
        }
    }

    /// A source over two unbounds, in this order: one that refuses `bad.dot.test`, one that answers it (NXDOMAIN).
    static func withRefusingThenAnswering(_ body: (DoTSource) async throws -> Void) async throws {
        try await TestCertificate.with(subjectAltName: "DNS:dot.test") { certificate, key in
            let tls = UnboundServer.TLS(certificate: certificate, key: key)
            try await withUnbound(lines: Self.zone + [#"local-zone: "bad.dot.test." always_refuse"#], tls: tls) { refusing in
                try await withUnbound(lines: Self.zone, tls: tls) { answering in
                    let servers = [
                        try DoTEndpoint(address: refusing.address.ip, port: refusing.tlsPort!),
                        try DoTEndpoint(address: answering.address.ip, port: answering.tlsPort!),
                    ]
                    try await Self.withSource(Self.configuration(servers, certificate: certificate), body)
                }
            }
        }
    }

    /// What ``ResolverCache`` calls: `startQuery`, waited for here.
    static func started(_ source: DoTSource, _ host: String, _ families: AddressFamilies) async throws -> SourceAnswer {
        let host = try HostName(host)
        return try await withCheckedThrowingContinuation { continuation in
            source.startQuery(host, families: families) { continuation.resume(with: $0) }
        }
    }

    /// The cache's lookups go out on the first server's open connection and are answered there, without a task:
    /// both families, or one. The first, with no connection yet, takes the whole path and opens it.
    @Test func aLookupOnAnOpenConnectionIsAnsweredWithoutATask() async throws {
        try await Self.withDoT { _, certificate, endpoint in
            try await Self.withSource(Self.configuration([endpoint], certificate: certificate)) { source in
                let first = try await Self.started(source, "a.dot.test", .all)
                #expect(first.ipv4 == .addresses([IPv4Address("192.0.2.1")!], ttlSeconds: 300))
                #expect(source.lookupsAnsweredOnConnection == 0, "no connection was open")
                let both = try await Self.started(source, "a.dot.test", .all)
                #expect(both == first)
                #expect(try await Self.started(source, "v4.dot.test", .ipv4).ipv4 == .addresses([IPv4Address("192.0.2.4")!], ttlSeconds: 120))
                #expect(try await Self.started(source, "v4.dot.test", .ipv6).ipv6 == .negative(.noData, ttlSeconds: 60))
                #expect(source.lookupsSentOnConnection == 3 && source.lookupsAnsweredOnConnection == 3)
                #expect(source.connectionsOpened == 1)
            }
        }
    }

    /// On the open connection, the first server refuses what the next answers: the lookup goes on to the next server
    /// within the same budget, and the first is cooled down as the failover would have cooled it.
    @Test func aLookupRefusedOnAnOpenConnectionGoesOnToTheNextServer() async throws {
        try await Self.withRefusingThenAnswering { source in
            // Opens the first server's connection; the second, never asked, would be tried first next (an address with
            // no latency yet is probed), unless it is known to be much slower (the first's sample includes its
            // handshake).
            _ = try await Self.started(source, "a.dot.test", .ipv4)
            let generation = try #require(source.failover.first()).generation
            source.failover.succeeded(1, generation: generation, elapsed: .seconds(3600))
            #expect(source.failover.first()?.index == 0)
            let answer = try await Self.started(source, "bad.dot.test", .all)
            #expect(answer.ipv4 == .negative(.nameNotFound, ttlSeconds: 60))
            #expect(answer.ipv6 == .negative(.nameNotFound, ttlSeconds: 60))
            #expect(source.lookupsSentOnConnection == 1 && source.lookupsAnsweredOnConnection == 0)
            // Each family's refusal counts, as each family's failover would count it.
            #expect(source.failover.failuresInARow == [2, 0], "\(source.failover.failuresInARow)")
            // Cooling down, the first server is asked last: the next lookup goes out on the second's connection,
            // which the refused lookup opened.
            #expect(try await Self.started(source, "a.dot.test", .ipv4).ipv4 == .addresses([IPv4Address("192.0.2.1")!], ttlSeconds: 300))
            #expect(source.lookupsAnsweredOnConnection == 1)
            #expect(source.connectionsOpened == 2)
        }
    }

    /// As a relay: any type goes out as it is and comes back with every section and the query's own ID.
    @Test func relaysOtherTypes() async throws {
        try await Self.withDoT { _, certificate, endpoint in
            try await Self.withSource(Self.configuration([endpoint], certificate: certificate)) { source in
                let query = try DNSMessage(id: 0x1234, recursionDesired: true, questions: [.init(name: "dot.test", type: .mx)]).encoded()
                let answer = try DNSMessage(parsing: try await source.send(query))
                #expect(answer.id == 0x1234)
                #expect(answer.answers.contains { $0.type == .mx })
                let missing = try DNSMessage(id: 7, recursionDesired: true, questions: [.init(name: "nosuch.dot.test", type: .txt)]).encoded()
                let negative = try DNSMessage(parsing: try await source.send(missing))
                #expect(negative.responseCode == .nameError)
                #expect(negative.authorities.contains { $0.type == .soa })
            }
        }
    }

    @Test func parsesEndpoints() throws {
        #expect(try DoTEndpoint(parsing: "tls://192.0.2.53").description == "tls://192.0.2.53")
        #expect(try DoTEndpoint(parsing: "tls://192.0.2.53").port == 853)
        #expect(try DoTEndpoint(parsing: "tls://[2001:db8::53]:8853").port == 8853)
        for (text, code) in [
            ("https://192.0.2.53", ServiceEndpointError.Code.invalidScheme), ("tls://resolver.example", .invalidAddress),
            ("tls://192.0.2.53:0", .invalidPort), ("tls://192.0.2.53/dns-query", .invalidPath), ("tls://192.0.2.53/", .invalidPath),
        ] {
            #expect(throws: ServiceEndpointError.self, "\(text)") { try DoTEndpoint(parsing: text) }
            #expect((try? DoTEndpoint(parsing: text)) == nil)
            do {
                _ = try DoTEndpoint(parsing: text)
            } catch {
                #expect(error.code == code, "\(text): \(error)")
            }
        }
        // A reason that shows the endpoint shows it as written, with tls://.
        do {
            _ = try DoTEndpoint(parsing: "tls://::1")
            Issue.record("tls://::1 was taken")
        } catch {
            #expect(error.code == .invalidAddress, "\(error)")
            #expect(error.reason.contains("tls://[::1]") && !error.reason.contains("https://"), "\(error.reason)")
        }
    }

    @Test func refusesSettingsThatCannotWork() throws {
        let endpoint = try DoTEndpoint(parsing: "tls://127.0.0.1:8853")
        var empty = DoTSource.Configuration(servers: [])
        #expect(throws: ConfigurationError.self) { try empty.validate() }
        empty.servers = [endpoint]
        empty.maxQueriesInFlight = 0
        #expect(throws: ConfigurationError.self) { try empty.validate() }
        var badName = DoTSource.Configuration(servers: [endpoint])
        badName.serverName = "not a name"
        #expect(throws: ConfigurationError.self) { try DoTSource(configuration: badName) }
        var missingFile = DoTSource.Configuration(servers: [endpoint])
        missingFile.extraTrustRootsPEMFile = "/nonexistent/ca.pem"
        #expect(throws: ConfigurationError.self) { try DoTSource(configuration: missingFile) }
    }
}

/// `DoHSource` as a relay, against unbound's own DoH (HTTP/2): any type goes out as it is and comes back whole.
@Suite("DoH relaying against unbound", .timeLimit(.minutes(2)))
struct DoHRelayingTests {
    @Test func relaysOtherTypesAndNegativeAnswers() async throws {
        let ip = "127.0.0.\(Int.random(in: 2...254))"
        try await TestCertificate.with(subjectAltName: "IP:\(ip)") { certificate, key in
            try await withUnbound(at: ip, lines: DoTSourceTests.zone, tls: .init(certificate: certificate, key: key)) { unbound in
                var configuration = DoHSource.Configuration(servers: [try ServiceEndpoint(parsing: "https://\(ip):\(unbound.httpsPort!)")])
                configuration.connection.extraTrustRootsPEMFile = certificate
                configuration.connection.budget = .seconds(10)
                configuration.connection.attemptTimeout = .seconds(10)
                let source = try DoHSource(configuration: configuration)
                do {
                    let query = try DNSMessage(id: 0, recursionDesired: true, questions: [.init(name: "dot.test", type: .mx)]).encoded()
                    let answer = try DNSMessage(parsing: try await source.send(query))
                    #expect(answer.isResponse && answer.answers.contains { $0.type == .mx })
                    let missing = try DNSMessage(id: 0, recursionDesired: true, questions: [.init(name: "nosuch.dot.test", type: .txt)]).encoded()
                    let negative = try DNSMessage(parsing: try await source.send(missing))
                    #expect(negative.responseCode == .nameError)
                    #expect(negative.authorities.contains { $0.type == .soa })
                    await #expect(throws: ResolutionError.self) { try await source.send([1, 2, 3]) }
                } catch {
                    await source.shutdown()
                    throw error
                }
                await source.shutdown()
            }
        }
    }

    /// As for DoT: REFUSED from unbound's DoH, for a lookup and for a relayed query, moves on to the next address but,
    /// with nothing better there (a closed port), blames only the address that did not answer.
    @Test func aRefusalEverywhereCoolsNoAddressDown() async throws {
        let ip = "127.0.0.\(Int.random(in: 2...254))"
        try await TestCertificate.with(subjectAltName: "IP:\(ip)") { certificate, key in
            let lines = DoTSourceTests.zone + [#"local-zone: "bad.dot.test." always_refuse"#]
            try await withUnbound(at: ip, lines: lines, tls: .init(certificate: certificate, key: key)) { unbound in
                let closed = try ClosedTCPPort()
                var configuration = DoHSource.Configuration(servers: [
                    try ServiceEndpoint(parsing: "https://\(ip):\(unbound.httpsPort!)"), try ServiceEndpoint(parsing: "https://127.0.0.1:\(closed.port)"),
                ])
                configuration.connection.extraTrustRootsPEMFile = certificate
                configuration.connection.budget = .seconds(10)
                configuration.connection.attemptTimeout = .seconds(10)
                let source = try DoHSource(configuration: configuration)
                do {
                    let error = await #expect(throws: ResolutionError.self) { try await source.query(try HostName("bad.dot.test"), families: .ipv4) }
                    #expect(error?.code == .refused, "\(String(describing: error))")
                    let query = try DNSMessage(id: 0, recursionDesired: true, questions: [.init(name: "bad.dot.test", type: .txt)]).encoded()
                    #expect(try DNSMessage(parsing: try await source.send(query)).responseCode == .refused)
                    #expect(source.client.failover.failuresInARow == [0, 2], "\(source.client.failover.failuresInARow)")
                } catch {
                    await source.shutdown()
                    throw error
                }
                await source.shutdown()
                withExtendedLifetime(closed) {}
            }
        }
    }
}
