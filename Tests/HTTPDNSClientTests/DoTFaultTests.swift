import HTTPDNSCore
import HTTPDNSSynchronization
import HTTPDNSTesting
import HTTPDNSWire
import NIOCore
import NIOPosix
import NIOSSL
import Testing

@testable import HTTPDNSClient

/// `DoTSource` against servers that misbehave, for faults unbound will not produce: a TLS server that takes queries
/// and never answers, one that echoes each query back (not a response), and a TCP listener that never speaks TLS.
/// The certificates are made at test time; the servers are SwiftNIO's, on 127.0.0.1, stopped at the end.
@Suite("DNS over TLS against faulty servers", .timeLimit(.minutes(2)))
struct DoTFaultTests {
    enum Behaviour: Sendable {
        /// Reads and never writes.
        case silent
        /// Writes every frame back as it came.
        case echo
        /// Writes the server's first frame back, on whichever connection; reads every later one and never writes.
        case echoFirst(FirstFrame)
        /// Writes back the queries for one record type (a query's last four bytes are its question's type and class);
        /// reads the others and never writes. The client writes the queries of one tick together: each is found by
        /// its two-byte length.
        case echoType(UInt16)
    }

    /// Whether a server has echoed its first frame yet, over all its connections.
    final class FirstFrame: Sendable {
        private let taken = Mutex(false)
        func take() -> Bool { taken.withLock { taken in defer { taken = true }; return !taken } }
    }

    final class FaultyHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let behaviour: Behaviour
        init(_ behaviour: Behaviour) { self.behaviour = behaviour }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch behaviour {
            case .silent: break
            case .echo: context.writeAndFlush(data, promise: nil)
            case .echoFirst(let first): if first.take() { context.writeAndFlush(data, promise: nil) }
            case .echoType(let type):
                var bytes = unwrapInboundIn(data)
                while let length = bytes.readInteger(as: UInt16.self), let query = bytes.readSlice(length: Int(length)) {
                    guard query.getInteger(at: query.writerIndex - 4, as: UInt16.self) == type else { continue }
                    var frame = context.channel.allocator.buffer(capacity: 2 + query.readableBytes)
                    frame.writeInteger(length)
                    frame.writeImmutableBuffer(query)
                    context.writeAndFlush(NIOAny(frame), promise: nil)
                }
            }
        }
    }

    /// A TLS server on 127.0.0.1 with a certificate for dot.test, behaving as `behaviour`; `body` gets its endpoint and
    /// the certificate's path.
    static func withFaultyServer(_ behaviour: Behaviour, _ body: (DoTEndpoint, String) async throws -> Void) async throws {
        try await TestCertificate.with(subjectAltName: "DNS:dot.test") { certificate, key in
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            )
            tls.minimumTLSVersion = .tlsv12
            let context = try NIOSSLContext(configuration: tls)
            let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers([NIOSSLServerHandler(context: context), FaultyHandler(behaviour)])
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            do {
                try await body(try DoTEndpoint(address: IPAddress("127.0.0.1")!, port: server.localAddress!.port!), certificate)
            } catch {
                try? await server.close()
                throw error
            }
            try await server.close()
        }
    }

    static func source(
        _ endpoint: DoTEndpoint,
        certificate: String,
        attempt: Duration = .milliseconds(300),
        budget: Duration? = nil
    ) throws -> DoTSource {
        var configuration = DoTSource.Configuration(servers: [endpoint])
        configuration.serverName = "dot.test"
        configuration.extraTrustRootsPEMFile = certificate
        configuration.budget = budget ?? attempt
        configuration.attemptTimeout = attempt
        return try DoTSource(configuration: configuration)
    }

    /// The server takes the query and never answers: the lookup times out, and the connection, on which nothing at all
    /// was read since the query went out, is closed, so that the next query opens a new one instead of waiting on a
    /// dead one. So too with a budget shorter than the attempt timeout, which then bounds every query's time out.
    @Test(arguments: [(budget: 8, attempt: 8), (budget: 6, attempt: 30)])
    func aServerThatNeverAnswersLosesItsConnection(seconds: (budget: Int, attempt: Int)) async throws {
        try await Self.withFaultyServer(.silent) { endpoint, certificate in
            // Long enough for the handshake on a busy machine: the query itself must be what times out, and be out for
            // at least half the time it could have (the silence that gives a connection up), whatever the handshake
            // took of it.
            let source = try Self.source(endpoint, certificate: certificate, attempt: .seconds(seconds.attempt), budget: .seconds(seconds.budget))
            let error = await #expect(throws: ResolutionError.self) { try await source.query(try HostName("a.dot.test"), families: .ipv4) }
            #expect(error?.code == .timeout, "\(String(describing: error))")
            #expect(error?.message.contains("did not answer") == true, "the query timed out, not the connect: \(String(describing: error))")
            // Given up: the next query opens a new connection.
            #expect(await source.currentConnection(at: 0)?.isActive != true)
            _ = try? await source.query(try HostName("b.dot.test"), families: .ipv4)
            #expect(source.connectionsOpened == 2)
            await source.shutdown()
        }
    }

    /// The server echoes the query: an ID that matches but no response. A relay refuses it as not the response to
    /// the query, and so does a lookup.
    @Test func aQueryEchoedBackIsNotTakenForItsAnswer() async throws {
        try await Self.withFaultyServer(.echo) { endpoint, certificate in
            // Long enough for the handshake beside every other suite's servers: once, under the whole suite's load,
            // 5 s was not, and the relay timed out instead of reading the echo.
            let source = try Self.source(endpoint, certificate: certificate, attempt: .seconds(10))
            let query = try DNSMessage(id: 42, recursionDesired: true, questions: [.init(name: "dot.test", type: .mx)]).encoded()
            let relayed = await #expect(throws: ResolutionError.self) { try await source.send(query) }
            #expect(relayed?.code == .malformedAnswer, "\(String(describing: relayed))")
            #expect(relayed?.message.contains("not a response") == true, "\(String(describing: relayed))")
            let looked = await #expect(throws: ResolutionError.self) { try await source.query(try HostName("a.dot.test"), families: .ipv4) }
            #expect(looked?.code == .malformedAnswer, "\(String(describing: looked))")
            await source.shutdown()
        }
    }

    /// A lookup that the cache starts on the open connection, which then closes under it: as on the failover's path,
    /// the server is asked again on a new connection, and not blamed for the close. (Here it never answers there: the
    /// lookup times out at the end of its one budget, which cut that attempt short, so that is not blamed either.)
    @Test func aLookupWhoseConnectionClosesUnderItIsAskedAgainOnANewOne() async throws {
        try await Self.withFaultyServer(.echoFirst(FirstFrame())) { endpoint, certificate in
            // Long enough for the handshake beside every other suite's servers (the lookup that times out takes it all).
            let source = try Self.source(endpoint, certificate: certificate, attempt: .seconds(10))
            let host = try HostName("a.dot.test")
            // The echo is no answer: a failure, which leaves the connection open (it was read from).
            let echoed = await #expect(throws: ResolutionError.self) { try await source.query(host, families: .ipv4) }
            #expect(echoed?.code == .malformedAnswer, "\(String(describing: echoed))")
            #expect(source.failover.failuresInARow == [1])
            let connection = try #require(await source.currentConnection(at: 0))
            let result = await withCheckedContinuation { continuation in
                source.startQuery(host, families: .ipv4) { continuation.resume(returning: $0) }
                // Queued on the connection's loop after the query's submission: the query is in flight (taken by the
                // handler, an ID given) when the connection closes.
                connection.close()
            }
            #expect(source.lookupsSentOnConnection == 1)
            guard case .failure(let error) = result else { Issue.record("answered: \(result)"); return }
            #expect(error.code == .timeout, "\(error)")
            #expect(source.connectionsOpened == 2, "asked again on a new connection")
            #expect(source.failover.failuresInARow == [1], "neither the close nor the attempt the budget cut short is blamed")
            await source.shutdown()
        }
    }

    /// A lookup of both families started on the open connection, whose A the server fails at once while its AAAA
    /// goes unanswered: the lookup fails with A's failure then, as the failover's path fails it, without waiting for
    /// AAAA's attempt to time out.
    @Test func aLookupFailsWithItsFirstFamilysFailureWithoutWaitingForTheOther() async throws {
        try await Self.withFaultyServer(.echoType(1)) { endpoint, certificate in
            let source = try Self.source(endpoint, certificate: certificate, attempt: .seconds(20))
            let host = try HostName("a.dot.test")
            // Opens the connection (the echo is no answer: a failure, which leaves the connection open).
            let echoed = await #expect(throws: ResolutionError.self) { try await source.query(host, families: .ipv4) }
            #expect(echoed?.code == .malformedAnswer, "\(String(describing: echoed))")
            let started = ContinuousClock.now
            let result = await withCheckedContinuation { continuation in
                source.startQuery(host, families: .all) { continuation.resume(returning: $0) }
            }
            #expect(source.lookupsSentOnConnection == 1)
            guard case .failure(let error) = result else { Issue.record("answered: \(result)"); return }
            #expect(error.code == .malformedAnswer, "A's failure: \(error)")
            #expect(started.duration(to: .now) < .seconds(10), "not after AAAA's attempt (20 s)")
            await source.shutdown()
        }
    }

    /// A port that takes the TCP connection and never speaks TLS: the handshake is bounded by the attempt's
    /// deadline, and the lookup fails as a timeout.
    @Test func aPeerThatNeverSpeaksTLSTimesOut() async throws {
        let listener = try SilentTCPListener()
        let endpoint = try DoTEndpoint(address: IPAddress("127.0.0.1")!, port: listener.port)
        try await TestCertificate.with(subjectAltName: "DNS:dot.test") { certificate, _ in
            let source = try Self.source(endpoint, certificate: certificate)
            let error = await #expect(throws: ResolutionError.self) { try await source.query(try HostName("a.dot.test"), families: .ipv4) }
            #expect(error?.code == .timeout, "\(String(describing: error))")
            await source.shutdown()
        }
        withExtendedLifetime(listener) {}
    }

    /// The connection keeps one timer for the deadlines of its queries in flight, set for the earliest: a query sent
    /// after another, with an earlier deadline, brings the timer forward and times out at its own deadline. Nothing
    /// having been read since, the connection is then given up, and the first query fails as closed long before its
    /// own deadline (with the timer left at that one, both would wait for it and time out together).
    @Test func aLaterQueryWithAnEarlierDeadlineTimesOutAtItsOwn() async throws {
        try await Self.withFaultyServer(.silent) { endpoint, certificate in
            let dot = try await Self.connect(endpoint, certificate: certificate, maxInFlight: 8)
            let query = try DNSMessage(id: 1, recursionDesired: true, questions: [.init(name: "a.dot.test", type: .a)]).encoded()
            let first = dot.send(query, deadline: .now() + .seconds(20))
            let second = dot.send(query, deadline: .now() + .milliseconds(200))
            await Self.expectFailure(second, "the second query") { if case .timedOut = $0 { true } else { false } }
            await Self.expectFailure(first, "the first query, given up with its connection") { if case .closed = $0 { true } else { false } }
            dot.close()
        }
    }

    /// A query waiting for room whose deadline has come by the time room is made fails as timed out, unsent: sent, it
    /// would time out at once with nothing read since it went out, and the connection, which is answering, would be
    /// given up with every other query on it. (The in-flight query and the waiting one share a deadline; SwiftNIO runs
    /// tasks due at the same time in the order they were scheduled, so the connection's timer, set when the in-flight
    /// query was written, fires before the waiting query's own and makes the room.)
    @Test func aWaitingQueryWhoseDeadlineCameIsNotSent() async throws {
        try await Self.withFaultyServer(.echoType(DNSRecordType.a.rawValue)) { endpoint, certificate in
            let dot = try await Self.connect(endpoint, certificate: certificate, maxInFlight: 2)
            let answered = try DNSMessage(id: 1, recursionDesired: true, questions: [.init(name: "a.dot.test", type: .a)]).encoded()
            let unanswered = try DNSMessage(id: 2, recursionDesired: true, questions: [.init(name: "a.dot.test", type: .aaaa)]).encoded()
            // Time for the answer below to come first, on a busy machine.
            let deadline = NIODeadline.now() + .seconds(5)
            // In flight: one query the server never answers, then one it answers, read after the first went out.
            let timingOut = dot.send(unanswered, deadline: deadline)
            _ = try await dot.send(answered, deadline: .now() + .seconds(20)).get()
            // In flight, full: that one and another the server never answers; waiting: one due with the first.
            try #require(NIODeadline.now() < deadline, "the machine took the whole deadline to answer one query")
            let pending = dot.send(unanswered, deadline: .now() + .seconds(20))
            let waiting = dot.send(unanswered, deadline: deadline)
            for (name, future) in [("the query in flight", timingOut), ("the waiting query", waiting)] {
                await Self.expectFailure(future, name) { if case .timedOut = $0 { true } else { false } }
            }
            #expect(dot.isActive, "the connection still answers: it is kept")
            dot.close()
            await #expect(throws: DoTTransportError.self) { try await pending.get() }
        }
    }

    /// A query whose deadline came before its turn on the event loop fails as timed out, unsent: the connection, which
    /// answers, is kept for the next query.
    @Test func aQueryAlreadyDueIsNotSent() async throws {
        try await Self.withFaultyServer(.echo) { endpoint, certificate in
            let dot = try await Self.connect(endpoint, certificate: certificate, maxInFlight: 8)
            let query = try DNSMessage(id: 1, recursionDesired: true, questions: [.init(name: "a.dot.test", type: .a)]).encoded()
            await Self.expectFailure(dot.send(query, deadline: .now() - .milliseconds(1)), "the query already due") {
                if case .timedOut = $0 { true } else { false }
            }
            #expect(try await dot.send(query, deadline: .now() + .seconds(20)).get() == query, "the echo of the next query")
            #expect(dot.isActive)
            dot.close()
        }
    }

    /// A query sent shortly before its deadline times out for want of time, not because the server went silent: with
    /// nothing read since it went out, but out for less than the silence that gives a connection up, it fails alone,
    /// and the connection answers the next query.
    @Test func aQueryThatHadLittleTimeLeavesTheConnectionUp() async throws {
        try await Self.withFaultyServer(.echoType(DNSRecordType.a.rawValue)) { endpoint, certificate in
            let dot = try await Self.connect(endpoint, certificate: certificate, maxInFlight: 8, silenceToGiveUp: .seconds(30))
            defer { dot.close() }
            let answered = try DNSMessage(id: 1, recursionDesired: true, questions: [.init(name: "a.dot.test", type: .a)]).encoded()
            let unanswered = try DNSMessage(id: 2, recursionDesired: true, questions: [.init(name: "a.dot.test", type: .aaaa)]).encoded()
            // A second: long enough not to be due before its turn on the event loop, however busy the machine.
            await Self.expectFailure(dot.send(unanswered, deadline: .now() + .seconds(1)), "the query with a second") {
                if case .timedOut = $0 { true } else { false }
            }
            #expect(dot.isActive, "the connection is kept")
            #expect(try await dot.send(answered, deadline: .now() + .seconds(20)).get() == answered, "the echo of the next query")
        }
    }

    /// Waits for `future`, an exchange on a connection, and records an issue unless it fails with an error `expected`
    /// takes.
    static func expectFailure(_ future: EventLoopFuture<[UInt8]>, _ what: String, _ expected: (DoTTransportError) -> Bool) async {
        do {
            _ = try await future.get()
            Issue.record("\(what) was answered")
        } catch let error as DoTTransportError where expected(error) {
        } catch {
            Issue.record("\(what) failed otherwise: \(error)")
        }
    }

    /// A connection to `endpoint` whose certificate holds dot.test. With `silenceToGiveUp` at zero, any query that times
    /// out with nothing read since it went out gives the connection up: a sign, in these tests, that it was sent.
    static func connect(
        _ endpoint: DoTEndpoint,
        certificate: String,
        maxInFlight: Int,
        silenceToGiveUp: TimeAmount = .zero
    ) async throws -> DoTConnection {
        var connection = ServiceConnection(servers: [])
        connection.extraTrustRootsPEMFile = certificate
        let settings = DoTConnection.Settings(
            tls: try NIOSSLContext(configuration: try connection.makeTLSConfiguration()), serverName: "dot.test", pins: [],
            maxInFlight: maxInFlight, maxWaiting: 8, idleTimeout: .seconds(60), silenceToGiveUp: silenceToGiveUp
        )
        return try await DoTConnection.connect(
            to: endpoint, settings: settings, eventLoopGroup: MultiThreadedEventLoopGroup.singleton, deadline: .now() + .seconds(30)
        ).get()
    }

    /// The relay's check of an answer against its query, byte by byte.
    @Test func relayAnswersAreCheckedAgainstTheirQuery() throws {
        let query = try DNSMessage(id: 7, recursionDesired: true, questions: [.init(name: "Example.test", type: .txt)]).encoded()
        var answer = query
        answer[2] |= 0x80
        #expect(RelayAnswer.mismatch(query: query, answer: answer) == nil)
        var lowered = answer
        for index in 12..<lowered.count where (65...90).contains(lowered[index]) { lowered[index] |= 0x20 }
        #expect(RelayAnswer.mismatch(query: query, answer: lowered) == nil, "case does not matter")
        #expect(RelayAnswer.mismatch(query: query, answer: query) != nil, "QR clear")
        var otherID = answer
        otherID[1] = 8
        #expect(RelayAnswer.mismatch(query: query, answer: otherID) != nil)
        let other = try DNSMessage(id: 7, recursionDesired: true, questions: [.init(name: "example.test", type: .a)]).encoded()
        var otherAnswer = other
        otherAnswer[2] |= 0x80
        #expect(RelayAnswer.mismatch(query: query, answer: otherAnswer) != nil, "another type")
        #expect(RelayAnswer.mismatch(query: query, answer: Array(answer.prefix(11))) != nil)
    }
}
