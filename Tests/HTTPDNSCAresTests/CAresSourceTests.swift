import HTTPDNSCAres
import HTTPDNSCore
import Testing

/// `CAresSource` against a real c-ares (1.18.1 on the build machines) talking to ``FaultyDNSServer`` over loopback.
///
/// Serialized, with every other suite of this target nested in it: the lifecycle tests compare this process's
/// descriptors and threads before and after, which only means something while no other test opens any.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct CAresSourceTests {
    typealias Records = FaultyDNSServer.Records

    static func v4(_ text: String) -> IPv4Address { IPv4Address(text)! }
    static func v6(_ text: String) -> IPv6Address { IPv6Address(text)! }

    /// A source asking `servers`. The generous default timeout keeps a loaded 2-core machine from failing tests
    /// that expect an answer; tests that expect a timeout pass a short one.
    static func makeSource(
        _ servers: [DNSServerAddress],
        transport: CAresSource.Configuration.Transport = .udp,
        timeoutMs: Int = 5000,
        tries: Int = 1
    ) throws -> CAresSource {
        var configuration = CAresSource.Configuration(servers: servers, transport: transport)
        configuration.timeout = .milliseconds(timeoutMs)
        configuration.tries = tries
        return try CAresSource(configuration: configuration)
    }

    /// Runs `body` with a source asking `servers`, and shuts the source down however `body` ends.
    static func withSource<R>(
        _ servers: [DNSServerAddress],
        transport: CAresSource.Configuration.Transport = .udp,
        timeoutMs: Int = 5000,
        tries: Int = 1,
        _ body: (CAresSource) async throws -> R
    ) async throws -> R {
        let source = try makeSource(servers, transport: transport, timeoutMs: timeoutMs, tries: tries)
        do {
            let result = try await body(source)
            await source.shutdown()
            return result
        } catch {
            await source.shutdown()
            throw error
        }
    }

    /// The error a lookup of `name` fails with, when the server behaves as `behavior`.
    static func failure(
        of name: String = "fault.test",
        families: AddressFamilies = .ipv4,
        when behavior: FaultyDNSServer.Behavior,
        transport: CAresSource.Configuration.Transport = .udp
    ) async throws -> (error: ResolutionError?, server: DNSServerAddress, activity: FaultyDNSServer.Activity) {
        var configuration = FaultyDNSServer.Configuration()
        configuration.behavior = behavior
        return try await withFaultyDNSServer(configuration) { server in
            let error = try await withSource([server.address], transport: transport, timeoutMs: 100, tries: 1) { source in
                await #expect(throws: ResolutionError.self) {
                    try await source.query(HostName(name), families: families)
                }
            }
            return (error, server.address, server.activity)
        }
    }

    // MARK: - Answers

    @Test("A records come back in the server's order, with the smallest TTL")
    func answersA() async throws {
        var configuration = FaultyDNSServer.Configuration()
        configuration.records["two.test"] = Records(ipv4: [
            .init(address: Self.v4("192.0.2.10"), ttl: 300),
            .init(address: Self.v4("192.0.2.11"), ttl: 60),
            .init(address: Self.v4("192.0.2.12"), ttl: 3600),
        ])
        try await withFaultyDNSServer(configuration) { server in
            let answer = try await Self.withSource([server.address]) { source in
                try await source.query(HostName("two.test"), families: .ipv4)
            }
            #expect(
                answer
                    == SourceAnswer(
                        ipv4: .addresses(
                            [Self.v4("192.0.2.10"), Self.v4("192.0.2.11"), Self.v4("192.0.2.12")],
                            ttlSeconds: 60
                        )
                    )
            )
            #expect(server.activity.queries == [.init(transport: .udp, name: "two.test", type: 1)])
        }
    }

    @Test("AAAA records come back with the smallest TTL")
    func answersAAAA() async throws {
        var configuration = FaultyDNSServer.Configuration()
        configuration.records["six.test"] = Records(ipv6: [
            .init(address: Self.v6("2001:db8::6"), ttl: 600),
            .init(address: Self.v6("2001:db8::7"), ttl: 120),
        ])
        try await withFaultyDNSServer(configuration) { server in
            let answer = try await Self.withSource([server.address]) { source in
                try await source.query(HostName("six.test"), families: .ipv6)
            }
            #expect(answer == SourceAnswer(ipv6: .addresses([Self.v6("2001:db8::6"), Self.v6("2001:db8::7")], ttlSeconds: 120)))
            #expect(server.activity.queries == [.init(transport: .udp, name: "six.test", type: 28)])
        }
    }

    @Test("A+AAAA asks both types and keeps each family's own TTL")
    func answersBothFamilies() async throws {
        var configuration = FaultyDNSServer.Configuration()
        configuration.records["both.test"] = Records(
            ipv4: [.init(address: Self.v4("192.0.2.20"), ttl: 45)],
            ipv6: [.init(address: Self.v6("2001:db8::20"), ttl: 900), .init(address: Self.v6("2001:db8::21"), ttl: 700)]
        )
        try await withFaultyDNSServer(configuration) { server in
            let answer = try await Self.withSource([server.address]) { source in
                try await source.query(HostName("both.test"), families: .all)
            }
            #expect(
                answer
                    == SourceAnswer(
                        ipv4: .addresses([Self.v4("192.0.2.20")], ttlSeconds: 45),
                        ipv6: .addresses([Self.v6("2001:db8::20"), Self.v6("2001:db8::21")], ttlSeconds: 700)
                    )
            )
            #expect(Set(server.activity.queries.map(\.type)) == [1, 28])
            #expect(server.activity.tcpQueries == 0)
        }
    }

    @Test("A name with addresses of one family only answers no data for the other")
    func oneFamilyOnly() async throws {
        var configuration = FaultyDNSServer.Configuration()
        configuration.records["v4only.test"] = Records(ipv4: [.init(address: Self.v4("192.0.2.30"), ttl: 90)])
        try await withFaultyDNSServer(configuration) { server in
            let answer = try await Self.withSource([server.address]) { source in
                try await source.query(HostName("v4only.test"), families: .all)
            }
            #expect(
                answer
                    == SourceAnswer(
                        ipv4: .addresses([Self.v4("192.0.2.30")], ttlSeconds: 90),
                        ipv6: .negative(.noData, ttlSeconds: nil)
                    )
            )
        }
    }

    @Test(
        "A CNAME in the chain caps the TTL of the addresses behind it",
        arguments: [(alias: UInt32(20), ipv4: UInt32(20), ipv6: UInt32(20)), (alias: 900, ipv4: 300, ipv6: 60)]
    )
    func cnameTTL(ttls: (alias: UInt32, ipv4: UInt32, ipv6: UInt32)) async throws {
        var configuration = FaultyDNSServer.Configuration()
        configuration.records["alias.test"] = Records(
            alias: .init(target: "target.test", ttl: ttls.alias),
            ipv4: [.init(address: Self.v4("192.0.2.40"), ttl: 300)],
            ipv6: [.init(address: Self.v6("2001:db8::40"), ttl: 60)]
        )
        try await withFaultyDNSServer(configuration) { server in
            let answer = try await Self.withSource([server.address]) { source in
                try await source.query(HostName("alias.test"), families: .all)
            }
            #expect(
                answer
                    == SourceAnswer(
                        ipv4: .addresses([Self.v4("192.0.2.40")], ttlSeconds: ttls.ipv4),
                        ipv6: .addresses([Self.v6("2001:db8::40")], ttlSeconds: ttls.ipv6)
                    )
            )
        }
    }

    @Test("NXDOMAIN is a nameNotFound answer for every family asked, not an error")
    func nameNotFound() async throws {
        var configuration = FaultyDNSServer.Configuration()
        configuration.behavior = .nameNotFound
        try await withFaultyDNSServer(configuration) { server in
            try await Self.withSource([server.address]) { source in
                let both = try await source.query(HostName("gone.test"), families: .all)
                #expect(both == .negative(.nameNotFound, families: .all))
                let ipv6Only = try await source.query(HostName("gone.test"), families: .ipv6)
                #expect(ipv6Only == .negative(.nameNotFound, families: .ipv6))
            }
        }
    }

    @Test("NOERROR without records is a noData answer, not an error")
    func noData() async throws {
        var configuration = FaultyDNSServer.Configuration()
        configuration.behavior = .noData
        try await withFaultyDNSServer(configuration) { server in
            try await Self.withSource([server.address]) { source in
                let both = try await source.query(HostName("empty.test"), families: .all)
                #expect(both == .negative(.noData, families: .all))
                let ipv4Only = try await source.query(HostName("empty.test"), families: .ipv4)
                #expect(ipv4Only == .negative(.noData, families: .ipv4))
            }
        }
    }

    @Test("transport .tcp sends every query over TCP and none over UDP")
    func tcpOnly() async throws {
        try await withFaultyDNSServer { server in
            let answer = try await Self.withSource([server.address], transport: .tcp) { source in
                try await source.query(HostName("tcp.test"), families: .all)
            }
            #expect(answer.ipv4 == .addresses([Self.v4("192.0.2.1")], ttlSeconds: 300))
            #expect(answer.ipv6 == .addresses([Self.v6("2001:db8::1")], ttlSeconds: 300))
            #expect(server.activity.udpQueries == 0)
            #expect(server.activity.tcpQueries == 2)
        }
    }

    @Test(
        "An IPv6 server address works",
        .enabled(if: FaultyDNSServer.canBindIPv6Loopback, "::1 cannot be bound here (no IPv6 on loopback)"),
        arguments: [CAresSource.Configuration.Transport.udp, .tcp]
    )
    func ipv6Server(transport: CAresSource.Configuration.Transport) async throws {
        var configuration = FaultyDNSServer.Configuration()
        configuration.loopback = .ipv6
        try await withFaultyDNSServer(configuration) { server in
            #expect(server.address.description == "[::1]:\(server.port)")
            let answer = try await Self.withSource([server.address], transport: transport) { source in
                try await source.query(HostName("six.test"), families: .all)
            }
            #expect(answer.ipv4 == .addresses([Self.v4("192.0.2.1")], ttlSeconds: 300))
            #expect(answer.ipv6 == .addresses([Self.v6("2001:db8::1")], ttlSeconds: 300))
            #expect(server.activity.queries.count == 2)
        }
    }

    // MARK: - Faults

    @Test("A silent server times out, and the error names the server", arguments: [CAresSource.Configuration.Transport.udp, .tcp])
    func silentServer(transport: CAresSource.Configuration.Transport) async throws {
        let (error, server, activity) = try await Self.failure(when: .silent, transport: transport)
        #expect(error?.code == .timeout)
        #expect(error?.message.contains("127.0.0.1:\(server.port)") == true, "\(String(describing: error))")
        #expect(activity.queries.count == 1)
    }

    /// c-ares never fails a query for a bad packet: it matches an answer to its query by ID *and* question
    /// (`same_questions`), and a packet that does not match, or whose question does not parse, is dropped as
    /// if it had not arrived. So garbage — even garbage that carries the right ID — ends in a timeout.
    @Test("Garbage is dropped, so the lookup times out", arguments: [true, false], [CAresSource.Configuration.Transport.udp, .tcp])
    func garbage(keepID: Bool, transport: CAresSource.Configuration.Transport) async throws {
        let (error, server, activity) = try await Self.failure(when: .garbage(keepID: keepID), transport: transport)
        #expect(error?.code == .timeout)
        #expect(error?.message.contains("127.0.0.1:\(server.port)") == true)
        #expect(activity.queries.count == 1)
    }

    /// An answer that matches the query but whose records run past the end fails in `ares_getaddrinfo`'s
    /// parser with ARES_EBADRESP.
    @Test("An answer whose records are cut short is malformedAnswer")
    func malformedRecords() async throws {
        let (error, server, _) = try await Self.failure(when: .malformedRecords)
        #expect(error?.code == .malformedAnswer)
        #expect(error?.message.contains("127.0.0.1:\(server.port)") == true)
    }

    @Test("A truncated UDP answer is asked again over TCP", arguments: [AddressFamilies.ipv4, .all])
    func truncation(families: AddressFamilies) async throws {
        var configuration = FaultyDNSServer.Configuration()
        configuration.behavior = .truncateOverUDP
        try await withFaultyDNSServer(configuration) { server in
            let answer = try await Self.withSource([server.address]) { source in
                try await source.query(HostName("big.test"), families: families)
            }
            #expect(answer.ipv4 == .addresses([Self.v4("192.0.2.1")], ttlSeconds: 300))
            #expect(answer.ipv6 == (families.contains(.ipv6) ? .addresses([Self.v6("2001:db8::1")], ttlSeconds: 300) : nil))
            let asked = families.members.count
            #expect(server.activity.udpQueries == asked)
            #expect(server.activity.tcpQueries == asked)
        }
    }

    static let mismatches: [FaultyDNSServer.Behavior] = [.mismatchedID(thenAnswer: false), .mismatchedQuestion(thenAnswer: false)]

    @Test(
        "An answer with another ID or question is dropped, so the lookup times out",
        arguments: mismatches,
        [CAresSource.Configuration.Transport.udp, .tcp]
    )
    func mismatchedAnswerAlone(behavior: FaultyDNSServer.Behavior, transport: CAresSource.Configuration.Transport) async throws {
        let (error, _, activity) = try await Self.failure(families: .all, when: behavior, transport: transport)
        #expect(error?.code == .timeout)
        #expect(activity.queries.count == 2)
    }

    static let mismatchesThenAnswers: [FaultyDNSServer.Behavior] = [.mismatchedID(thenAnswer: true), .mismatchedQuestion(thenAnswer: true)]

    @Test(
        "An answer with another ID or question is skipped for the right one that follows",
        arguments: mismatchesThenAnswers,
        [CAresSource.Configuration.Transport.udp, .tcp]
    )
    func mismatchedAnswerThenRightOne(behavior: FaultyDNSServer.Behavior, transport: CAresSource.Configuration.Transport) async throws {
        var configuration = FaultyDNSServer.Configuration()
        configuration.behavior = behavior
        // The wrong answer carries other addresses, so taking it would show.
        configuration.records["fault.test"] = Records(ipv4: [.init(address: Self.v4("192.0.2.50"), ttl: 50)])
        configuration.records["wrong.fault.test"] = Records(ipv4: [.init(address: Self.v4("198.51.100.66"), ttl: 66)])
        try await withFaultyDNSServer(configuration) { server in
            let answer = try await Self.withSource([server.address], transport: transport) { source in
                try await source.query(HostName("fault.test"), families: .ipv4)
            }
            #expect(answer == SourceAnswer(ipv4: .addresses([Self.v4("192.0.2.50")], ttlSeconds: 50)))
        }
    }

    @Test("REFUSED is refused", arguments: [CAresSource.Configuration.Transport.udp, .tcp])
    func refused(transport: CAresSource.Configuration.Transport) async throws {
        let (error, server, activity) = try await Self.failure(families: .all, when: .refused, transport: transport)
        #expect(error?.code == .refused)
        #expect(error?.message.contains("127.0.0.1:\(server.port)") == true)
        // The answer is final: nothing is asked twice.
        #expect(activity.queries.count == 2)
    }

    @Test("SERVFAIL is serverFailure", arguments: [CAresSource.Configuration.Transport.udp, .tcp])
    func serverFailure(transport: CAresSource.Configuration.Transport) async throws {
        let (error, server, _) = try await Self.failure(families: .all, when: .serverFailure, transport: transport)
        #expect(error?.code == .serverFailure)
        #expect(error?.message.contains("127.0.0.1:\(server.port)") == true)
    }

    @Test(
        "With several servers, a REFUSED or SERVFAIL answer moves on to the next server",
        arguments: [FaultyDNSServer.Behavior.refused, .serverFailure]
    )
    func failoverOnRefusal(behavior: FaultyDNSServer.Behavior) async throws {
        var failing = FaultyDNSServer.Configuration()
        failing.behavior = behavior
        try await withFaultyDNSServer(failing) { first in
            try await withFaultyDNSServer { second in
                let answer = try await Self.withSource([first.address, second.address]) { source in
                    try await source.query(HostName("failover.test"), families: .ipv4)
                }
                #expect(answer == SourceAnswer(ipv4: .addresses([Self.v4("192.0.2.1")], ttlSeconds: 300)))
                #expect(first.activity.queries.count == 1)
                #expect(second.activity.queries.count == 1)
            }
        }
    }

    /// c-ares 1.18 ends a query that every server answered REFUSED or SERVFAIL with the status it started with,
    /// ARES_ECONNREFUSED, so with several servers that reads as unreachable. (Later c-ares versions keep the
    /// RCODE.) With one server the source passes the RCODE through; see ``refused(transport:)``.
    @Test("With several servers that all refuse, c-ares 1.18 reports serverUnreachable")
    func everyServerRefuses() async throws {
        var failing = FaultyDNSServer.Configuration()
        failing.behavior = .refused
        try await withFaultyDNSServer(failing) { first in
            try await withFaultyDNSServer(failing) { second in
                let error = try await Self.withSource([first.address, second.address], timeoutMs: 100) { source in
                    await #expect(throws: ResolutionError.self) {
                        try await source.query(HostName("refused.test"), families: .ipv4)
                    }
                }
                #expect(error?.code == .serverUnreachable)
                #expect(error?.message.contains("127.0.0.1:\(first.port), 127.0.0.1:\(second.port)") == true)
                #expect(first.activity.queries.count == 1)
                #expect(second.activity.queries.count == 1)
            }
        }
    }

    /// Over TCP the connect is refused outright. Over UDP c-ares's socket is connected, so the ICMP port
    /// unreachable comes back as ECONNREFUSED from the next recv or send on it: also serverUnreachable.
    /// (One quirk: for A+AAAA with tries 1 over UDP, the error is consumed by sending the second query, the
    /// first is left to time out, and `ares_getaddrinfo` reports the status of whichever query ended last —
    /// the timeout. A single family, or more tries, gives serverUnreachable.)
    @Test("A port where nothing listens is serverUnreachable", arguments: [CAresSource.Configuration.Transport.udp, .tcp])
    func nothingListening(transport: CAresSource.Configuration.Transport) async throws {
        // A port that was free a moment ago; the stub closed both its sockets.
        let vacated = try FaultyDNSServer()
        vacated.stop()
        let error = try await Self.withSource([vacated.address], transport: transport, timeoutMs: 100) { source in
            await #expect(throws: ResolutionError.self) {
                try await source.query(HostName("nobody.test"), families: .ipv4)
            }
        }
        #expect(error?.code == .serverUnreachable)
        #expect(error?.message.contains("127.0.0.1:\(vacated.port)") == true)
    }

    // MARK: - Load

    @Test("500 concurrent lookups of distinct names all get their own answers")
    func manyConcurrentLookups() async throws {
        let count = 500
        var configuration = FaultyDNSServer.Configuration()
        for index in 0..<count {
            configuration.records["host-\(index).test"] = Records(
                ipv4: [.init(address: IPv4Address(0xC633_6400 + UInt32(index)), ttl: 100 + UInt32(index))],  // 198.51.100.0 onwards
                ipv6: [.init(address: IPv6Address(high: 0x2001_0DB8_0000_0000, low: UInt64(index)), ttl: 1000)]
            )
        }
        try await withFaultyDNSServer(configuration) { server in
            // A thousand queries leave c-ares's one UDP socket in a burst, and while its thread is still sending,
            // answers can overflow that socket's receive buffer and be dropped by the kernel (the stub's own
            // buffer is made large enough). A dropped answer costs one retry after the timeout, not the test.
            let answers = try await Self.withSource([server.address], timeoutMs: 1000, tries: 4) { source in
                try await withThrowingTaskGroup(of: (Int, SourceAnswer).self) { group in
                    for index in 0..<count {
                        group.addTask { (index, try await source.query(HostName("host-\(index).test"), families: .all)) }
                    }
                    return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
                }
            }
            #expect(answers.count == count)
            for index in 0..<count {
                #expect(
                    answers[index]
                        == SourceAnswer(
                            ipv4: .addresses([IPv4Address(0xC633_6400 + UInt32(index))], ttlSeconds: 100 + UInt32(index)),
                            ipv6: .addresses([IPv6Address(high: 0x2001_0DB8_0000_0000, low: UInt64(index))], ttlSeconds: 1000)
                        )
                )
            }
            #expect(Set(server.activity.queries.map(\.name)).count == count)
        }
    }
}
