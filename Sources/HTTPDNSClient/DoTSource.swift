import HTTPDNSCore
import HTTPDNSNetworking
import HTTPDNSSynchronization
import HTTPDNSWire
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// Resolves through DNS over TLS (RFC 7858) to resolvers addressed by IP: `tls://IP[:PORT]`, port 853 by default.
///
/// **Connections.** One kept-alive TLS connection per server, opened at the first query and closed after
/// ``Configuration-swift.struct/idleTimeout`` without one. Queries are pipelined on it (RFC 7766): many in flight at
/// once, each with an ID of the connection's own, their answers matched by ID in whatever order they come; a burst
/// goes out in one write. Up to ``Configuration-swift.struct/maxQueriesInFlight`` are in flight per connection, up to
/// ``Configuration-swift.struct/maxQueriesWaiting`` more wait for room, and more still fail at once
/// (`tooManyPendingQueries`). A server may close a connection it has found idle
/// at any time (RFC 7766 §6.2.3): a query lost to the close of its connection is sent once more, on a new connection.
///
/// **Trust.** The certificate is always verified: its chain against the system's roots and
/// ``Configuration-swift.struct/extraTrustRootsPEMFile``; with a ``Configuration-swift.struct/serverName``, that name
/// is the SNI and the certificate must hold it **as a DNS name** (a certificate valid for the address alone, through an
/// IP SAN, is refused); without one, the certificate must hold the address. With SPKI pins, its public key must be
/// one of them as well. A certificate that fails is a `certificateRejected` error naming the server; nothing falls back
/// to plaintext.
///
/// **Failover** as for the HTTPS sources: servers in order of health, each given its attempt timeout, a failed one
/// cooling down, all within the lookup's budget.
///
/// **Answers** are checked as a resolver's are: a response (QR set) to the question asked, addresses only from records
/// owned by the name or by the CNAME chain from it. NXDOMAIN and NODATA are answers, with the SOA's negative TTL
/// (RFC 2308); after SERVFAIL or REFUSED the next server is asked, the one that answered cooled down only when a
/// later one answers the query.
///
/// As a `MessageRelaying`, it sends any DNS message as it is (the service's upstream for the types it relays).
///
/// Call ``shutdown()`` when done: it closes the connections.
public final class DoTSource: ResolutionSource, MessageRelaying {
    public struct Configuration: Sendable, Hashable {
        /// The resolvers, `tls://IP[:PORT]` each; tried in order of health.
        public var servers: [DoTEndpoint]
        /// The name the resolvers' certificate must hold as a DNS name, and the SNI. Default none: the certificate
        /// must then hold an IP SAN for each address.
        public var serverName: String?
        /// A PEM file of certificates to trust besides the system's (a private CA). Default none.
        public var extraTrustRootsPEMFile: String?
        /// SPKI SHA-256 pins: when any are given, the resolver's public key must be one of them, besides the
        /// certificate verifying as usual. Default none.
        public var pins: [SPKIPin] = []
        /// How long one lookup may take, over every server tried. Default 2,000 ms.
        public var budget: Duration = .milliseconds(2000)
        /// How long one server is given, connecting and TLS included. Default 1,000 ms.
        public var attemptTimeout: Duration = .milliseconds(1000)
        /// How long a failed server is left alone, doubled for each failure in a row. Default 1,000 ms.
        public var coolDown: Duration = .milliseconds(1000)
        /// The longest cool-down, at most a day. Default 60 s.
        public var maxCoolDown: Duration = .seconds(60)
        /// How long a connection with no query in flight stays open. Default 30 s.
        public var idleTimeout: Duration = .seconds(30)
        /// Queries in flight at once on one connection; more wait for room. Default 128.
        public var maxQueriesInFlight = 128
        /// Queries waiting for room on one connection; more fail at once with `tooManyPendingQueries`. Default 1,024.
        public var maxQueriesWaiting = 1024
        /// The name in stats, logs and metric dimensions. Default `dot`.
        public var name = "dot"

        public init(servers: [DoTEndpoint]) {
            self.servers = servers
        }

        /// The settings shared with the HTTPS sources, checked by the same rules.
        var connection: ServiceConnection {
            var connection = ServiceConnection(servers: [])
            connection.serverName = serverName
            connection.extraTrustRootsPEMFile = extraTrustRootsPEMFile
            connection.pins = pins
            connection.budget = budget
            connection.attemptTimeout = attemptTimeout
            connection.coolDown = coolDown
            connection.maxCoolDown = maxCoolDown
            return connection
        }

        /// Takes the settings shared with the HTTPS sources from `connection` (all but its servers).
        mutating func adopt(_ connection: ServiceConnection) {
            serverName = connection.serverName
            extraTrustRootsPEMFile = connection.extraTrustRootsPEMFile
            pins = connection.pins
            budget = connection.budget
            attemptTimeout = connection.attemptTimeout
            coolDown = connection.coolDown
            maxCoolDown = connection.maxCoolDown
        }

        /// - Throws: `ConfigurationError` naming the setting that cannot work (the trust file is read when the
        ///   source is made).
        public func validate() throws(ConfigurationError) {
            guard !servers.isEmpty else { throw ConfigurationError(key: "servers", reason: "must name at least one DNS-over-TLS server") }
            try connection.validateTiming()
            _ = try connection.checkedServerName()
            guard idleTimeout > .zero else {
                throw ConfigurationError(.outOfRange, key: "idleTimeout", reason: "must be a positive duration, not \(idleTimeout)")
            }
            guard (1...65_535).contains(maxQueriesInFlight) else {
                throw ConfigurationError(.outOfRange, key: "maxQueriesInFlight", reason: "must be 1 to 65,535, not \(maxQueriesInFlight)")
            }
            guard (0...1_000_000).contains(maxQueriesWaiting) else {
                throw ConfigurationError(.outOfRange, key: "maxQueriesWaiting", reason: "must be 0 to 1,000,000, not \(maxQueriesWaiting)")
            }
            guard !name.isEmpty else { throw ConfigurationError(key: "name", reason: "must not be empty") }
        }
    }

    public let configuration: Configuration
    public var name: String { configuration.name }
    public var upstreamDescription: String { "\(name) via \(configuration.servers.map(\.description).joined(separator: ", "))" }

    private let settings: DoTConnection.Settings
    private let eventLoopGroup: any EventLoopGroup
    /// Internal, not private: tests read its health.
    let failover: AddressFailover
    private let connections: ConnectionSlots<DoTConnection>
    private let logger: Logger
    private let sentOnConnection = Atomic<Int>(0)
    private let answeredOnConnection = Atomic<Int>(0)

    /// Lookups ``startQuery(_:families:completion:)`` sent on an open connection without a task, and those of them
    /// answered there, for tests.
    var lookupsSentOnConnection: Int { sentOnConnection.load(ordering: .relaxed) }
    var lookupsAnsweredOnConnection: Int { answeredOnConnection.load(ordering: .relaxed) }

    /// - Parameters:
    ///   - configuration: the servers, trust and timing.
    ///   - eventLoopGroup: where the connections run. Default NIO's shared group.
    ///   - clock: the clock of the servers' cool-downs.
    ///   - logger: for failures of servers.
    /// - Throws: `ConfigurationError` naming a setting that cannot work.
    public init(
        configuration: Configuration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        clock: any MonotonicClock = SystemMonotonicClock(),
        logger: Logger = Logger(label: "httpdns.client")
    ) throws(ConfigurationError) {
        try configuration.validate()
        var configuration = configuration
        configuration.serverName = try configuration.connection.checkedServerName()
        let tls = try configuration.connection.makeTLSConfiguration()
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: tls)
        } catch {
            throw ConfigurationError(.unreadable, key: "cacert", reason: "TLS could not be set up with these trust roots: \(error)", cause: error)
        }
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        settings = DoTConnection.Settings(
            tls: context,
            serverName: configuration.serverName,
            pins: Set(configuration.pins),
            maxInFlight: configuration.maxQueriesInFlight,
            maxWaiting: configuration.maxQueriesWaiting,
            idleTimeout: .nanoseconds(configuration.idleTimeout.clampedNanoseconds),
            silenceToGiveUp: .nanoseconds(configuration.connection.silenceToGiveUp.clampedNanoseconds)
        )
        failover = AddressFailover(
            count: configuration.servers.count,
            timing: configuration.connection,
            sourceName: configuration.name,
            clock: clock,
            logger: logger
        )
        connections = ConnectionSlots(count: configuration.servers.count)
    }

    public func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        try await FamilyQueries.answer(host, families) { family throws(ResolutionError) in try await self.lookUp(host, family) }
    }

    private func lookUp(
        _ host: HostName,
        _ family: AddressFamily,
        resuming: AddressFailover.Resumption? = nil
    ) async throws(ResolutionError) -> FamilyAnswer<IPAddress> {
        let (bytes, type) = try FamilyQueries.query(host, family)
        return try await exchange(bytes, subject: "\(host)", resuming: resuming) { answer, server throws(AddressFailover.AttemptFailure) in
            try Self.familyAnswer(answer, from: server, host: host, type: type)
        }
    }

    /// As ``query(_:families:)``, for `ResolverCache`, which fills itself through it. When the server to ask first
    /// has its connection open, each family's query goes out on it from here, and its answer is read on the
    /// connection's event loop: no task, and no hop through one; when every family is answered there, `completion` is
    /// called there too. A family the server does not answer goes on at once, in a task, through the whole failover,
    /// within what is left of the same budget: the server's failure is counted as the failover counts any other, and
    /// the server is not asked that family again; the lookup fails as soon as its outcome is known (A's failure
    /// without waiting for AAAA). A connection closed under the query is replaced, and the server asked again on the
    /// new one, not blamed: as a new attempt, with its own attempt timeout within the budget (the failover's path
    /// sends once more within the first attempt's), so a server whose connections keep closing is sent the query at
    /// most three times. Without an open connection, the whole lookup takes the failover's path.
    public func startQuery(
        _ host: HostName,
        families: AddressFamilies,
        completion: @escaping @Sendable (Result<SourceAnswer, ResolutionError>) -> Void
    ) {
        let asked = families.members
        guard !asked.isEmpty, let first = failover.first(), let connection = connections.openConnection(at: first.index),
            let queries = try? asked.map({ family throws(ResolutionError) in (family, try FamilyQueries.query(host, family)) })
        else {
            return completeInTask(completion) { try await self.query(host, families: families) }
        }
        sentOnConnection.add(1, ordering: .relaxed)
        let (budgetEnds, attemptEnds, ownTimeout) = failover.deadlines()
        let server = configuration.servers[first.index]
        // With one family asked, its result is the lookup's, settled once: nothing to join.
        let lookup = asked.count > 1 ? FamilyLookups(families: asked) : nil
        let settle: @Sendable (AddressFamily, Result<FamilyAnswer<IPAddress>, ResolutionError>, Bool) -> Void = {
            [self] family, result, onConnection in
            let outcome: Result<SourceAnswer, ResolutionError>
            let everyOnConnection: Bool
            if let lookup {
                guard let settled = lookup.settle(family, result, onConnection: onConnection) else { return }
                (outcome, everyOnConnection) = settled
            } else {
                outcome = result.map { family == .ipv4 ? FamilyQueries.sourceAnswer(ipv4: $0) : FamilyQueries.sourceAnswer(ipv6: $0) }
                everyOnConnection = onConnection && (try? result.get()) != nil
            }
            if everyOnConnection { answeredOnConnection.add(1, ordering: .relaxed) }
            completion(outcome)
        }
        for (family, query) in queries {
            let started = ContinuousClock.now
            connection.send(query.bytes, deadline: attemptEnds).whenComplete { [self] result in
                let failure: AddressFailover.AttemptFailure?
                do throws(AddressFailover.AttemptFailure) {
                    switch result {
                    case .success(let bytes):
                        let answer = try Self.familyAnswer(bytes, from: server, host: host, type: query.type)
                        failover.succeeded(first.index, generation: first.generation, elapsed: started.duration(to: .now))
                        settle(family, .success(answer), true)
                        return
                    case .failure(DoTTransportError.closed):
                        // As on the failover's path: the server asked again, on a new connection, and not blamed.
                        failure = nil
                    case .failure(let error):
                        throw .tryNext(describe(error, server: server))
                    }
                } catch {
                    failure = error
                }
                if !connection.isActive { forget(connection, at: first.index) }
                let resumption = AddressFailover.Resumption(
                    budgetEnds: budgetEnds,
                    failed: failure.map {
                        AddressFailover.FirstFailure(
                            index: first.index, generation: first.generation, failure: $0, attemptEnds: attemptEnds, ownTimeout: ownTimeout
                        )
                    }
                )
                Task {
                    do throws(ResolutionError) {
                        settle(family, .success(try await lookUp(host, family, resuming: resumption)), false)
                    } catch {
                        settle(family, .failure(error), false)
                    }
                }
            }
        }
    }

    /// Sends `query`, a DNS message of any type, as it is, and returns the answer as the server sent it (with
    /// `query`'s ID): every section kept. NXDOMAIN and NODATA are answers like any other; SERVFAIL and REFUSED are
    /// too when no other server is left to ask.
    /// - Throws: `ResolutionError`: `badName` for a query shorter than a DNS header or longer than 65,535 bytes,
    ///   else as for a lookup.
    public func send(_ query: [UInt8]) async throws -> [UInt8] {
        guard query.count >= 12, query.count <= DNSMessage.maxSize else {
            throw ResolutionError(.badName, "a DNS query of \(query.count) bytes cannot be sent: it must be 12 to 65,535 bytes")
        }
        // A SERVFAIL or REFUSED moves on to the next server; the last of them is the answer when none does better.
        var refusal: [UInt8]?
        do {
            return try await exchange(query, subject: "a query of \(query.count) bytes") { answer, server throws(AddressFailover.AttemptFailure) in
                do throws(ResolutionError) {
                    return try RelayAnswer.accept(answer, to: query, from: "\(server)", refusal: &refusal)
                } catch {
                    throw .answer(error)
                }
            }
        } catch {
            if let refusal, error.code != .shutdown { return refusal }
            throw error
        }
    }

    /// Sends `query` to the servers in order of health until `accept` takes an answer.
    private func exchange<Result: Sendable>(
        _ query: [UInt8],
        subject: @autoclosure () -> String,
        resuming: AddressFailover.Resumption? = nil,
        _ accept: ([UInt8], DoTEndpoint) throws(AddressFailover.AttemptFailure) -> Result
    ) async throws(ResolutionError) -> Result {
        let servers = configuration.servers
        return try await failover.run(subject: subject(), describe: { servers[$0].description }, resuming: resuming) { index, deadline in
            let server = servers[index]
            let answer: [UInt8]
            do {
                answer = try await self.send(query, to: index, deadline: deadline)
            } catch let error as ResolutionError {
                return .failure(error.code == .timeout && Task.isCancelled ? .final(error) : .tryNext(error))
            } catch {
                return .failure(.tryNext(ResolutionError(.internalError, "\(server): \(error)", cause: error)))
            }
            do throws(AddressFailover.AttemptFailure) {
                return .success(try accept(answer, server))
            } catch {
                return .failure(error)
            }
        }
    }

    /// One server's exchange: on its open connection, or a new one; once more on a new connection when the one it
    /// went out on closed before answering (a server closing it as idle, RFC 7766 §6.2.3).
    private func send(_ query: [UInt8], to index: Int, deadline: NIODeadline) async throws -> [UInt8] {
        let server = configuration.servers[index]
        for attempt in 1...2 {
            let connection = try await connection(to: index, deadline: deadline)
            do {
                return try await connection.send(query, deadline: deadline).get()
            } catch DoTTransportError.closed where attempt == 1 {
                forget(connection, at: index)
                continue
            } catch {
                if !connection.isActive { forget(connection, at: index) }
                throw describe(error, server: server)
            }
        }
        throw ResolutionError(.serverUnreachable, "\(server) closed the connection twice before answering")
    }

    /// The server's open connection, or a new one, waited for by at most `deadline`.
    private func connection(to index: Int, deadline: NIODeadline) async throws(ResolutionError) -> DoTConnection {
        let server = configuration.servers[index]
        do {
            return try await connections.connection(at: index, deadline: deadline) {
                DoTConnection.connect(to: server, settings: settings, eventLoopGroup: eventLoopGroup, deadline: deadline)
            }
        } catch ConnectionSlotsError.shutDown {
            throw ResolutionError(.shutdown, "the \(name) source was shut down")
        } catch {
            throw describe(error, server: server, connecting: true)
        }
    }

    /// How many connections were begun.
    var connectionsOpened: Int { connections.opened }

    /// The connection to the server at `index`, once open (nil when there is none, or it failed to open).
    func currentConnection(at index: Int) async -> DoTConnection? {
        await connections.current(at: index)
    }

    private func forget(_ connection: DoTConnection, at index: Int) {
        connections.forget(connection, at: index)
    }

    /// An error of NIO, TLS or the transport, as what it says about the server.
    private func describe(_ error: any Error, server: DoTEndpoint, connecting: Bool = false) -> ResolutionError {
        if let error = error as? ResolutionError { return error }
        if let reason = CertificateRejection.reason(error) {
            let name = configuration.serverName.map { "for \($0) " } ?? ""
            return ResolutionError(.certificateRejected, "the TLS certificate of \(server) \(name)was not accepted: \(reason)", cause: error)
        }
        if case .timedOut = error as? ConnectionSlotsError {
            return ResolutionError(.timeout, "\(server) did not connect in time", cause: error)
        }
        if let transport = error as? DoTTransportError {
            switch transport {
            case .timedOut:
                return ResolutionError(.timeout, "\(server) did not \(connecting ? "connect" : "answer") in time", cause: error)
            case .overloaded:
                return ResolutionError(.tooManyPendingQueries, "\(server): \(transport)", cause: error)
            case .malformedFrame:
                return ResolutionError(.malformedAnswer, "\(server): \(transport)", cause: error)
            case .closed, .closedDuringHandshake:
                return ResolutionError(.serverUnreachable, "\(server): \(transport)", cause: error)
            }
        }
        if error is CancellationError { return ResolutionError(.timeout, "the query to \(server) was cancelled", cause: error) }
        if case .connectTimeout = error as? ChannelError {
            return ResolutionError(.timeout, "\(server) did not connect in time", cause: error)
        }
        return ResolutionError(.serverUnreachable, "\(server) could not be reached: \(error)", cause: error)
    }

    /// Reads a server's answer to the query for `host` and `type`.
    static func familyAnswer(_ bytes: [UInt8], from server: DoTEndpoint, host: HostName, type: DNSRecordType) throws(AddressFailover.AttemptFailure)
        -> FamilyAnswer<IPAddress>
    {
        let message: DNSMessage
        do {
            message = try DNSMessage(parsing: bytes)
        } catch {
            throw .tryNext(ResolutionError(.malformedAnswer, "\(server) sent a malformed DNS response for \(host): \(error.reason)", cause: error))
        }
        switch DoHSource.familyAnswer(message, from: "\(server)", host: host, type: type) {
        case .success(let answer): return answer
        case .failure(let error): throw .answer(error)
        }
    }

    /// Closes the connections and counts every server healthy again: the next queries open new ones, from the new
    /// network.
    public func networkChanged() async {
        // The connections first: a lookup that starts in between then opens a new one and is counted in the old
        // generation (not at all), never the other way round.
        connections.closeAll()
        failover.reset()
    }

    /// Closes the connections. Queries after it fail with `shutdown`.
    public func shutdown() async {
        await connections.shutdown()
    }
}

/// The families of one lookup ``DoTSource/startQuery(_:families:completion:)`` began with both asked, each settled on
/// its own (on the connection's event loop, or in a task for one that went on to the failover): the last one settled
/// completes the lookup.
private final class FamilyLookups: Sendable {
    private struct State {
        var ipv4: Result<FamilyAnswer<IPAddress>, ResolutionError>?
        var ipv6: Result<FamilyAnswer<IPAddress>, ResolutionError>?
        var answeredOnConnection = 0
        /// The outcome was handed out: later families are not waited for.
        var done = false
    }

    private let families: [AddressFamily]
    private let state = Mutex(State())

    init(families: [AddressFamily]) {
        self.families = families
    }

    /// Settles `family` (`onConnection`: answered on the open connection).
    /// - Returns: the lookup's outcome once it is known, exactly once: the answers when every family has one, or a
    ///   family's failure as soon as every family asked before it has answered (A's failure before AAAA's, as
    ///   ``FamilyQueries/answer(_:_:lookUp:)`` reports them, without waiting for AAAA); and whether every family was
    ///   answered on the connection. Nil while the outcome is open, and for a family settled after it was handed out.
    func settle(
        _ family: AddressFamily,
        _ result: Result<FamilyAnswer<IPAddress>, ResolutionError>,
        onConnection: Bool
    ) -> (outcome: Result<SourceAnswer, ResolutionError>, everyOnConnection: Bool)? {
        state.withLock { state in
            guard !state.done else { return nil }
            switch family {
            case .ipv4: state.ipv4 = result
            case .ipv6: state.ipv6 = result
            }
            if onConnection { state.answeredOnConnection += 1 }
            var answers: (ipv4: FamilyAnswer<IPAddress>?, ipv6: FamilyAnswer<IPAddress>?)
            for asked in families {
                switch asked == .ipv4 ? state.ipv4 : state.ipv6 {
                case nil:
                    return nil
                case .failure(let error):
                    state.done = true
                    return (.failure(error), false)
                case .success(let answer):
                    if asked == .ipv4 { answers.ipv4 = answer } else { answers.ipv6 = answer }
                }
            }
            state.done = true
            let outcome = FamilyQueries.sourceAnswer(ipv4: answers.ipv4, ipv6: answers.ipv6)
            return (.success(outcome), state.answeredOnConnection == families.count)
        }
    }
}
