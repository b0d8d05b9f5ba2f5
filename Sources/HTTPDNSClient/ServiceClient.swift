import AsyncHTTPClient
import HTTPDNSCore
import HTTPDNSNetworking
import HTTPDNSSynchronization
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// HTTPS to the addresses of one HTTPDNS service: one kept-alive HTTP/2 connection per address
/// (``HTTP2ServiceConnection``: every request a stream of it, no pipeline per request), failover between them within a
/// time budget, and each address's health (``ServiceAddressHealth``). The sources of this module ask their service
/// through it.
///
/// An address whose TLS negotiates no HTTP/2 (ALPN) is asked through AsyncHTTPClient over HTTP/1.1 instead, until
/// the network changes; so is every plain `http://` address.
///
/// TLS always verifies the certificate. Without a server name it must hold an IP SAN for the address asked; with
/// one, that name is the SNI and the certificate must hold it as a DNS name: one valid for the address alone is
/// refused (AsyncHTTPClient's `dnsOverride` sends the request to the address while keeping the name). A certificate
/// that is not accepted fails that address's request as soon as its connection is up, with no retry until a connect
/// timeout; an HTTP/2 connection so refused fails every request given it for a few seconds (``RefusedConnection``).
final class ServiceClient: Sendable {
    struct Settings: Sendable {
        var connection: ServiceConnection
        /// The largest answer read; more is an error of the address that sent it.
        var maxAnswerBytes: Int
        var sourceName: String

        var endpoints: [ServiceEndpoint] { connection.servers }
        var serverName: String? { connection.serverName }
    }

    /// One address's answer: its status, headers and body.
    struct Answer: Sendable {
        var status: HTTPResponseStatus
        var body: ByteBuffer
        var endpoint: ServiceEndpoint
    }

    /// What an attempt's outcome means for the next address.
    typealias AttemptFailure = AddressFailover.AttemptFailure

    /// One AsyncHTTPClient per address (each with its own `dnsOverride`), and those a network change replaced.
    private struct Clients {
        var current: [HTTPClient]
        /// The HTTPS addresses found to speak no HTTP/2: asked through `current` until the network changes.
        var http1Only: Set<Int> = []
        /// Clients a network change replaced, each shut down by its task once every request that may still run on
        /// it has ended; ``shutdown()`` hurries and awaits them.
        var retirements: [UInt64: Task<Void, Never>] = [:]
        var nextRetirement: UInt64 = 0
        var shutDown = false
    }

    let settings: Settings
    private let makeClient: @Sendable (ServiceEndpoint) -> HTTPClient
    private let clients: Mutex<Clients>
    /// The HTTP/2 connections, one per HTTPS address.
    private let connections: ConnectionSlots<HTTP2ServiceConnection>
    private let http2: HTTP2ServiceConnection.Settings
    /// Internal, not private: tests read its health.
    let failover: AddressFailover
    private let logger: Logger

    init(settings: Settings, clock: any MonotonicClock, logger: Logger) throws(ConfigurationError) {
        let connection = settings.connection
        guard !connection.servers.isEmpty else { throw ConfigurationError(key: "servers", reason: "must name at least one service") }
        var settings = settings
        try connection.validateTiming()
        settings.connection.serverName = try connection.checkedServerName()
        let tls = try connection.makeTLSConfiguration()
        if !connection.pins.isEmpty, let plain = settings.endpoints.first(where: { $0.scheme == .http }) {
            throw ConfigurationError(.inconsistent, key: "pin", reason: "pins need HTTPS, and \(plain) is plain HTTP")
        }
        for endpoint in settings.endpoints where endpoint.scheme == .http {
            logger.warning(
                "asking an HTTPDNS service over plain HTTP: answers can be read and changed on the way",
                metadata: ["httpdns.service": "\(endpoint)"]
            )
        }
        self.settings = settings
        self.logger = logger
        // Both offered: a server that speaks only HTTP/1.1 may refuse a handshake whose ALPN offers nothing it has.
        var http2TLS = tls
        http2TLS.applicationProtocols = ["h2", "http/1.1"]
        do {
            http2 = HTTP2ServiceConnection.Settings(
                tls: try NIOSSLContext(configuration: http2TLS),
                serverName: settings.serverName,
                pins: Set(connection.pins),
                maxAnswerBytes: settings.maxAnswerBytes,
                maxStreams: Self.maxStreams,
                idleTimeout: Self.idleTimeout,
                silenceToGiveUp: .nanoseconds(connection.silenceToGiveUp.clampedNanoseconds)
            )
        } catch {
            throw ConfigurationError(.unreadable, key: "cacert", reason: "TLS could not be set up with these trust roots: \(error)", cause: error)
        }
        connections = ConnectionSlots(count: settings.endpoints.count)
        // Converted once: every attempt's timeouts are counted in SwiftNIO's nanoseconds.
        let attemptTimeoutNanoseconds = connection.attemptTimeout.clampedNanoseconds
        failover = AddressFailover(
            count: settings.endpoints.count,
            timing: connection,
            sourceName: settings.sourceName,
            noun: "service",
            clock: clock,
            logger: logger
        )
        makeClient = { [settings, tls] endpoint in
            var configuration = HTTPClient.Configuration(
                tlsConfiguration: tls,
                redirectConfiguration: .disallow,
                timeout: .init(connect: .nanoseconds(attemptTimeoutNanoseconds), read: .nanoseconds(attemptTimeoutNanoseconds))
            )
            // A failed connection is this address's failure, reported now: the next address is tried instead of
            // this one again until the connect timeout. Certificate errors above all.
            configuration.connectionPool.retryConnectionEstablishment = false
            if let name = settings.serverName {
                configuration.dnsOverride = [name: endpoint.address.description]
            }
            if endpoint.scheme == .https, settings.serverName != nil || !settings.connection.pins.isEmpty {
                // Called on each new connection once TLS is up, before the pool takes it: with a server name, the
                // certificate must hold it as a DNS name (NIOSSL alone also takes one whose IP SAN is the address
                // connected to, whatever name was asked); with pins, its key must be one of them. An HTTP/1.1
                // connection that fails is reported to the pool as failed; an HTTP/2 one is refused
                // (RefusedConnection): every request given it fails with the check's error, never written. (A plain
                // `http://` address has no certificate to check; it is logged as insecure at start.)
                let (name, pins) = (settings.serverName, Set(settings.connection.pins))
                configuration.http1_1ConnectionDebugInitializer = { PeerCertificateCheck.check($0, serverName: name, pins: pins) }
                configuration.http2ConnectionDebugInitializer = { PeerCertificateCheck.checkHTTP2($0, serverName: name, pins: pins) }
                configuration.http2StreamChannelDebugInitializer = { RefusedConnection.checkStream($0) }
            }
            return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        }
        clients = Mutex(Clients(current: settings.endpoints.map(makeClient)))
    }

    /// Requests in flight at once on one connection; more fail with `tooManyPendingQueries`.
    static let maxStreams = 1024
    /// How long a connection with nothing in flight stays open.
    static let idleTimeout = TimeAmount.seconds(60)
    /// How many times one attempt sends its request at most, each time on a new connection after the last one's
    /// server did not process it.
    static let maxSends = 5

    /// What one lookup sends: the same to every address tried.
    private struct Request: Sendable {
        var target: String
        var accept: String
        var body: (contentType: String, bytes: [UInt8])?
    }

    /// The authority of `endpoint`: the server name when there is one, else the IP; with its port when not 443/80.
    private func authority(of endpoint: ServiceEndpoint) -> String {
        let host = settings.serverName ?? endpoint.urlHost
        let defaultPort = endpoint.scheme == .https ? 443 : 80
        return endpoint.port == defaultPort ? host : "\(host):\(endpoint.port)"
    }

    /// The URL of `target` (path and query) on `endpoint`: by the server name when there is one, else by IP.
    private func url(_ target: String, on endpoint: ServiceEndpoint) -> String {
        "\(endpoint.scheme.rawValue)://\(authority(of: endpoint))\(endpoint.path)\(target)"
    }

    /// Sends `GET target` (or, with a body, `POST`) to the service's addresses in order of health until one answers
    /// in a way `accept` takes, within the budget.
    /// - Parameter host: what is asked, for messages: the host name, or a relayed query.
    /// - Parameter accept: reads an answer; throws ``AttemptFailure/tryNextAnswered(_:)`` for a SERVFAIL or REFUSED,
    ///   ``AttemptFailure/tryNext(_:)`` when the address failed (the next
    ///   is tried) or ``AttemptFailure/final(_:)`` when no address would answer otherwise.
    /// - Throws: ``ResolutionError``: a rejected certificate first, else the first address's failure when all failed,
    ///   `.timeout` when the budget ran out (``AddressFailover``).
    func send<Result: Sendable>(
        _ target: String,
        accept acceptHeader: String,
        body: (contentType: String, bytes: [UInt8])? = nil,
        host: String,
        _ accept: (Answer) throws(AttemptFailure) -> Result
    ) async throws(ResolutionError) -> Result {
        let endpoints = settings.endpoints
        let request = Request(target: target, accept: acceptHeader, body: body)
        return try await failover.run(subject: host, describe: { endpoints[$0].description }) { index, deadline in
            await attempt(request, on: index, until: deadline, host: host, accept)
        }
    }

    /// One address's attempt: the request and the whole body within `deadline`, then `accept`.
    private func attempt<Result: Sendable>(
        _ request: Request,
        on index: Int,
        until deadline: NIODeadline,
        host: String,
        _ accept: (Answer) throws(AttemptFailure) -> Result
    ) async -> Swift.Result<Result, AttemptFailure> {
        let endpoint = settings.endpoints[index]
        let fetched: Swift.Result<Answer, AttemptFailure>
        if endpoint.scheme == .https, !clients.withLock({ $0.http1Only.contains(index) }),
            let answer = await fetchHTTP2(request, on: index, until: deadline, host: host)
        {
            fetched = answer
        } else {
            fetched = await fetchHTTP1(request, on: index, until: deadline, host: host)
        }
        switch fetched {
        case .success(let answer):
            do {
                return .success(try accept(answer))
            } catch {
                return .failure(error)
            }
        case .failure(let failure):
            return .failure(failure)
        }
    }

    /// The request as a stream of the address's HTTP/2 connection (a new one when it has none open). Sent again on a
    /// new connection when the server said it did not process it (a GOAWAY before its stream, REFUSED_STREAM), up to
    /// ``maxSends`` times in all, and once when the connection it went out on had answered before and closed before
    /// answering it (a server closing an idle connection as it was written).
    /// - Returns: nil when the address speaks no HTTP/2: it is asked over HTTP/1.1 from now on.
    private func fetchHTTP2(_ request: Request, on index: Int, until deadline: NIODeadline, host: String) async -> Swift.Result<Answer, AttemptFailure>? {
        let endpoint = settings.endpoints[index]
        var headers = [("accept", request.accept)]
        if let body = request.body { headers.append(("content-type", body.contentType)) }
        let message = HTTP2ServiceRequest(
            method: request.body == nil ? .GET : .POST,
            path: endpoint.path + request.target,
            authority: authority(of: endpoint),
            headers: headers,
            body: request.body?.bytes
        )
        let settings = http2
        var resentAfterClose = false
        var lastError: any Error = HTTP2TransportError.unprocessed
        // A connection that ends (closed, told to go away, out of time) closes itself once its streams are over, and
        // the slot opens a new one for the next request: nothing here closes one that other requests may be using.
        for _ in 1...Self.maxSends {
            let connection: HTTP2ServiceConnection
            do {
                connection = try await connections.connection(at: index, deadline: deadline) {
                    HTTP2ServiceConnection.connect(to: endpoint, settings: settings, eventLoopGroup: MultiThreadedEventLoopGroup.singleton, deadline: deadline)
                }
            } catch HTTP2TransportError.notHTTP2(let negotiated) {
                let first = clients.withLock { $0.http1Only.insert(index).inserted }
                if first {
                    logger.notice(
                        "the service negotiated no HTTP/2: asking it over HTTP/1.1",
                        metadata: ["httpdns.service": "\(endpoint)", "httpdns.alpn": "\(negotiated ?? "none")"]
                    )
                }
                return nil
            } catch is CancellationError where Task.isCancelled {
                return .failure(.final(ResolutionError(.timeout, "the lookup of \(host) was cancelled")))
            } catch {
                return .failure(.tryNext(Self.describe(error, endpoint: endpoint, host: host, connecting: true)))
            }
            let promise = connection.send(message, deadline: deadline)
            do {
                let response = try await withTaskCancellationHandler {
                    try await promise.futureResult.get()
                } onCancel: {
                    promise.fail(CancellationError())
                }
                return .success(Answer(status: response.status, body: response.body, endpoint: endpoint))
            } catch HTTP2TransportError.unprocessed {
                lastError = HTTP2TransportError.unprocessed
            } catch HTTP2TransportError.closed(reused: true) where !resentAfterClose {
                resentAfterClose = true
                lastError = HTTP2TransportError.closed(reused: true)
            } catch is CancellationError where Task.isCancelled {
                return .failure(.final(ResolutionError(.timeout, "the lookup of \(host) was cancelled")))
            } catch {
                return .failure(.tryNext(Self.describe(error, endpoint: endpoint, host: host)))
            }
        }
        return .failure(.tryNext(Self.describe(lastError, endpoint: endpoint, host: host)))
    }

    /// The request through the address's AsyncHTTPClient (HTTP/1.1, or plain HTTP): the request and the whole body
    /// within `deadline` (AsyncHTTPClient's deadline ends when the head arrives, so the body is raced against the
    /// deadline here).
    private func fetchHTTP1(_ request: Request, on index: Int, until deadline: NIODeadline, host: String) async -> Swift.Result<Answer, AttemptFailure> {
        let endpoint = settings.endpoints[index]
        guard let client = clients.withLock({ $0.shutDown ? nil : $0.current[index] }) else {
            return .failure(.tryNext(ResolutionError(.shutdown, "the \(settings.sourceName) client was shut down")))
        }
        var message = HTTPClientRequest(url: url(request.target, on: endpoint))
        message.headers.add(name: "Accept", value: request.accept)
        if let body = request.body {
            message.method = .POST
            message.headers.add(name: "Content-Type", value: body.contentType)
            message.body = .bytes(body.bytes)
        }
        let (logger, maxAnswerBytes) = (logger, settings.maxAnswerBytes)
        do {
            let answer = try await withDeadline(deadline) { [message] in
                let response = try await client.execute(message, deadline: deadline, logger: logger)
                let body = try await response.body.collect(upTo: maxAnswerBytes)
                return Answer(status: response.status, body: body, endpoint: endpoint)
            }
            guard let answer else { throw HTTPClientError.deadlineExceeded }
            return .success(answer)
        } catch is CancellationError where Task.isCancelled {
            return .failure(.final(ResolutionError(.timeout, "the lookup of \(host) was cancelled")))
        } catch {
            return .failure(.tryNext(Self.describe(error, endpoint: endpoint, host: host)))
        }
    }

    /// An error of AsyncHTTPClient, NIO or TLS, as what it says about the address. Only a certificate that failed
    /// verification (or does not hold the name or address asked) is `certificateRejected`: a connection closed during
    /// the handshake, or TLS spoken to a port that does not, is the address being unreachable, not an attack.
    static func describe(_ error: any Error, endpoint: ServiceEndpoint, host: String, connecting: Bool = false) -> ResolutionError {
        let text = "\(error)"
        if let reason = CertificateRejection.reason(error) {
            return ResolutionError(.certificateRejected, "the TLS certificate of \(endpoint) was not accepted: \(reason)", cause: error)
        }
        if let error = error as? ConnectionSlotsError {
            switch error {
            case .shutDown: return ResolutionError(.shutdown, "the client of \(endpoint) was shut down", cause: error)
            case .timedOut: return ResolutionError(.timeout, "\(endpoint) did not connect in time for \(host)", cause: error)
            }
        }
        if let transport = error as? HTTP2TransportError {
            switch transport {
            case .timedOut:
                return ResolutionError(.timeout, "\(endpoint) did not \(connecting ? "connect" : "answer") for \(host) in time", cause: error)
            case .overloaded:
                return ResolutionError(.tooManyPendingQueries, "\(endpoint): \(transport)", cause: error)
            case .tooLarge:
                return ResolutionError(.malformedAnswer, "\(endpoint) sent more than the answer for \(host) can hold", cause: error)
            case .malformedResponse:
                return ResolutionError(.malformedAnswer, "\(endpoint) sent an answer for \(host) that could not be read: \(transport)", cause: error)
            case .closed, .unprocessed, .reset, .notHTTP2, .closedDuringHandshake:
                return ResolutionError(.serverUnreachable, "\(endpoint) could not be reached for \(host): \(transport)", cause: error)
            }
        }
        if case .connectTimeout = error as? ChannelError {
            return ResolutionError(.timeout, "\(endpoint) did not connect in time for \(host)", cause: error)
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .tlsHandshakeTimeout:
                return ResolutionError(.timeout, "\(endpoint) did not answer for \(host) in time", cause: error)
            case .alreadyShutdown:
                return ResolutionError(.shutdown, "the \(endpoint) client was shut down", cause: error)
            case .bodyLengthMismatch:
                return ResolutionError(.malformedAnswer, "\(endpoint) sent an answer for \(host) that could not be read: \(error)", cause: error)
            default:
                break
            }
        }
        if error is NIOTooManyBytesError {
            return ResolutionError(.malformedAnswer, "\(endpoint) sent more than the answer for \(host) can hold", cause: error)
        }
        return ResolutionError(.serverUnreachable, "\(endpoint) could not be reached for \(host): \(text)", cause: error)
    }

    /// The network changed: every address counts as healthy again, and new clients (so new connections, from the
    /// new network) serve the requests from now on. The old clients are shut down once the budget of every request
    /// that may still run on them has passed.
    func networkChanged() async {
        // Every attempt ends within the budget; a second more covers the time between its deadline and its end.
        let grace = settings.connection.budget + .seconds(1)
        let closingBy = NIODeadline.now() + .nanoseconds(grace.clampedNanoseconds)
        connections.closeAll { $0.retire(closingBy: closingBy) }
        clients.withLock { clients in
            guard !clients.shutDown else { return }
            clients.http1Only = []
            let old = clients.current
            clients.current = settings.endpoints.map(makeClient)
            let id = clients.nextRetirement
            clients.nextRetirement += 1
            clients.retirements[id] = Task { [self] in
                // Cancelled by shutdown(): then at once.
                try? await Task.sleep(for: grace)
                for client in old { try? await client.shutdown() }
                self.clients.withLock { _ = $0.retirements.removeValue(forKey: id) }
            }
        }
        // The addresses' health last: a lookup that starts in between (on a new connection, or an old HTTP/1.1 client
        // about to be retired) is counted in the old generation (not at all), never on the old network in the new one.
        failover.reset()
    }

    // Dropped without shutdown(): the clients are shut down in the background, with a warning, rather than left for
    // AsyncHTTPClient's deinit check, which stops a debug build. (Retired clients hold this object through their
    // retirement task, so none is left by then.)
    deinit {
        let current = clients.withLock { $0.shutDown ? [] : $0.current }
        DroppedClients.shutDown(current, owner: "the \(settings.sourceName) source", logger: logger)
    }

    /// Shuts every client down, those a network change retired included, and returns once all are.
    func shutdown() async {
        let (current, retirements) = clients.withLock { clients -> ([HTTPClient], [Task<Void, Never>]) in
            guard !clients.shutDown else { return ([], []) }
            clients.shutDown = true
            defer { clients.retirements = [:] }
            return (clients.current, Array(clients.retirements.values))
        }
        await connections.shutdown()
        for retirement in retirements {
            retirement.cancel()
            await retirement.value
        }
        for client in current { try? await client.shutdown() }
    }
}
