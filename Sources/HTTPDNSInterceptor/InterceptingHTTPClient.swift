import AsyncHTTPClient
import FoundationEssentials
import HTTPDNSCore
import HTTPDNSNetworking
import HTTPDNSSynchronization
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// An HTTP client that sends each request straight to an address its `HostResolver` gives for the host, while the
/// Host header, TLS SNI and the certificate check keep the original name: the Linux counterpart of an iOS
/// NSURLProtocol that rewrites hosts to IPs, done without breaking HTTPS.
///
/// Use it as you would AsyncHTTPClient's `HTTPClient`: execute an `HTTPClientRequest`, get an `HTTPClientResponse`,
/// here with its ``CacheStoragePolicy`` and where it was sent.
///
/// For each request (and each redirect hop):
/// 1. **Take it or pass it.** A request to an address literal or to an excluded host is passed: sent as given
///    through a plain client.
/// 2. **Canonicalise** it (``CanonicalRequest``), **resolve** its host through the resolver, and **send** it to the
///    answer's addresses in the configured order. When connecting to one fails before the request was sent, the next
///    is tried (`httpdns_connect_failovers_total`); a certificate that is not valid for the host fails the request at
///    once.
/// 3. **Redirects** go through all of this again (``Redirect``), up to `maxRedirects`.
/// 4. The response streams to the caller; the body is not buffered.
///
/// Every request ends in `httpdns_interceptor_requests_total{outcome}`: `ok`, `passed`, or an
/// ``InterceptorError/Code``.
public final class InterceptingHTTPClient: Sendable {
    public struct Configuration: Sendable {
        /// Which family's addresses are tried first.
        public enum AddressOrder: String, Sendable, Hashable {
            case ipv4First
            case ipv6First
        }

        /// How requests are canonicalised.
        public var canonical = CanonicalRequest.Configuration()
        /// How each response's cache storage policy is decided.
        public var storagePolicy = CacheStoragePolicy.Configuration()
        /// Hosts never intercepted: their requests are sent as given, resolved by the system.
        public var excludedHosts = HostPatterns()
        /// The families resolved. Default both.
        public var families = AddressFamilies.all
        /// Default IPv4 first: a backend's network more often lacks IPv6 than has it.
        public var addressOrder = AddressOrder.ipv4First
        /// Redirects followed per request; 0 returns the first redirect itself. Default 10, as URLSession.
        public var maxRedirects = 10
        /// Whether a redirect from https to http is followed. Default no: such a request fails `insecureRedirect`.
        public var allowsInsecureRedirects = false
        /// The time to connect to one address (TCP and TLS) before it counts as failed. Default 5 s.
        public var connectTimeout: Duration = .seconds(5)
        /// Happy Eyeballs (RFC 8305): when an answer holds more than one address, connections to them are raced
        /// before the request is sent, in RFC 8305's order (the families alternating, ``addressOrder``'s first), a
        /// new attempt every `connectionAttemptDelay` or as soon as one fails, and the request goes to the first
        /// that connects; so a family whose packets are dropped costs about this delay, not ``connectTimeout``. The
        /// request is sent once. Nil tries the addresses one after the other, each for up to ``connectTimeout``.
        /// Default 250 ms, RFC 8305's recommendation; from 10 ms to 2 s.
        public var connectionAttemptDelay: Duration? = .milliseconds(250)
        /// The longest wait for the next bytes of a response. Default 30 s.
        public var readTimeout: Duration = .seconds(30)
        /// The most (host, address) clients kept, each with its own connections. Default 64.
        public var maxClients = 64
        /// TLS for origins. Certificate verification cannot be turned off: such a configuration is refused.
        public var tls = TLSConfiguration.makeClientConfiguration()
        /// Whether gzip and deflate bodies are decoded for the caller; then they are offered in `Accept-Encoding`.
        public var decompression = false

        public init() {}
    }

    /// A response, with what the interceptor did to get it.
    public struct Response: Sendable {
        /// The head and the streaming body. `history` is empty: ``redirects`` counts the hops.
        public var response: HTTPClientResponse
        /// Whether and where a URL cache may keep the response, decided from the request and the response head as
        /// they were when it arrived (later changes to ``response`` or ``request`` do not change it). Decided each
        /// time it is read, unless set, rather than for every response: most callers never ask.
        public var cacheStoragePolicy: CacheStoragePolicy {
            get { storagePolicy ?? storagePolicyInputs.decide() }
            set { storagePolicy = newValue }
        }
        /// The last request sent, canonical, after any redirects.
        public var request: CanonicalRequest
        /// The address connected to; nil when the request was passed (sent as given).
        public var connectedAddress: IPAddress?
        /// The redirects followed.
        public var redirects: Int
        /// Whether the resolver's answer came from a fallback rather than the trusted source.
        public var resolvedByFallback: Bool

        /// The name in SNI and the certificate check (the URL's host).
        public var serverName: String { request.host }

        /// What ``cacheStoragePolicy`` is decided from, as the response arrived.
        private let storagePolicyInputs: StoragePolicyInputs
        /// The policy set by the caller, if any.
        private var storagePolicy: CacheStoragePolicy?

        init(
            response: HTTPClientResponse, request: CanonicalRequest, connectedAddress: IPAddress?, redirects: Int, resolvedByFallback: Bool,
            storagePolicy configuration: CacheStoragePolicy.Configuration
        ) {
            self.response = response
            self.request = request
            self.connectedAddress = connectedAddress
            self.redirects = redirects
            self.resolvedByFallback = resolvedByFallback
            self.storagePolicyInputs = StoragePolicyInputs(
                request: request, status: Int(response.status.code), headers: response.headers, configuration: configuration
            )
        }
    }

    /// A response's cache storage policy, not yet decided: copies of the request and the head (copied on write, so
    /// keeping them costs no copy).
    struct StoragePolicyInputs: Sendable {
        var request: CanonicalRequest
        var status: Int
        var headers: HTTPHeaders
        var configuration: CacheStoragePolicy.Configuration

        func decide() -> CacheStoragePolicy {
            CacheStoragePolicy.decide(
                method: request.method,
                scheme: request.scheme,
                requestHeaders: request.headers.map { ($0.name, $0.value) },
                status: status,
                responseHeaders: headers.map { ($0.name, $0.value) },
                configuration: configuration
            )
        }
    }

    /// Why a request is not taken, but passed as given.
    public enum PassReason: String, Sendable, Hashable {
        /// The URL's host is an address: nothing to resolve.
        case addressLiteral
        /// The host is in ``Configuration/excludedHosts``.
        case excluded
    }

    public let configuration: Configuration
    public let resolver: HostResolver
    let origins: OriginClients
    private let passthrough: PassthroughClient
    let logger: Logger
    /// `httpdns_interceptor_requests_total` by outcome: the two of almost every request at hand, the errors by code.
    let sent = Counter(label: "httpdns_interceptor_requests_total", dimensions: [("outcome", "ok")])
    private let passed = Counter(label: "httpdns_interceptor_requests_total", dimensions: [("outcome", "passed")])
    private let errorOutcomes: [InterceptorError.Code: Counter]
    let failovers = Counter(label: "httpdns_connect_failovers_total")
    /// `httpdns_interceptor_connection_races_total` by result: `first` (the first address in order connected first),
    /// `other` (a later one did: the first was slow or unreachable), `failed` (none did).
    private let raceResults: (first: Counter, other: Counter, failed: Counter) = (
        Counter(label: "httpdns_interceptor_connection_races_total", dimensions: [("result", "first")]),
        Counter(label: "httpdns_interceptor_connection_races_total", dimensions: [("result", "other")]),
        Counter(label: "httpdns_interceptor_connection_races_total", dimensions: [("result", "failed")])
    )
    /// Happy Eyeballs, unless the configuration turns it off.
    private let race: ConnectionRace?
    /// Per host, the address a request last succeeded on, while a connection to it is likely still pooled.
    let warmAddresses: WarmAddresses
    let retries = Counter(label: "httpdns_interceptor_retries_total")
    /// The event loops of the clients' group: a caller's loop among them can have AsyncHTTPClient complete its
    /// futures there directly (AsyncHTTPClient refuses any other).
    let eventLoops: Set<ObjectIdentifier>

    /// - Throws: `ConfigurationError` for a limit that is not positive, or a TLS configuration without
    ///   certificate verification.
    public init(
        resolver: HostResolver,
        configuration: Configuration = Configuration(),
        eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup,
        logger: Logger = Logger(label: "httpdns.interceptor")
    ) throws(ConfigurationError) {
        guard configuration.maxRedirects >= 0 else {
            throw ConfigurationError(.outOfRange, key: "maxRedirects", reason: "must be 0 or more, not \(configuration.maxRedirects)")
        }
        guard configuration.maxClients > 0 else {
            throw ConfigurationError(.outOfRange, key: "maxClients", reason: "must be a positive number of clients, not \(configuration.maxClients)")
        }
        guard configuration.connectTimeout > .zero else {
            throw ConfigurationError(.outOfRange, key: "connectTimeout", reason: "must be positive, not \(configuration.connectTimeout)")
        }
        guard configuration.readTimeout > .zero else {
            throw ConfigurationError(.outOfRange, key: "readTimeout", reason: "must be positive, not \(configuration.readTimeout)")
        }
        guard configuration.tls.certificateVerification == .fullVerification else {
            throw ConfigurationError(
                key: "tls",
                reason: "certificate verification cannot be turned off, in whole or for the host name: the certificate must hold the original host"
            )
        }
        guard !configuration.families.isEmpty else {
            throw ConfigurationError(key: "families", reason: "must hold IPv4, IPv6 or both")
        }
        if let delay = configuration.connectionAttemptDelay, !(.milliseconds(10) ... .seconds(2)).contains(delay) {
            throw ConfigurationError(
                .outOfRange,
                key: "connectionAttemptDelay",
                reason: "must be from 10 ms to 2 s (RFC 8305; 250 ms recommended), or nil to try addresses one after the other, not \(delay)"
            )
        }
        var configuration = configuration
        if configuration.decompression { configuration.canonical.decodedEncodings = ["gzip", "deflate"] }
        // Each AsyncHTTPClient builds its own TLS context, and with the default trust roots each would read and
        // parse the system's bundle again: ~1 MiB and ~5 ms of CPU a client. Parsed once, the certificates are
        // shared by reference.
        if configuration.tls.trustRoots == nil || configuration.tls.trustRoots == .default, let bundle = SystemTrustRoots.certificates {
            configuration.tls.trustRoots = .certificates(bundle)
        }
        self.configuration = configuration
        self.resolver = resolver
        self.logger = logger
        eventLoops = Set(eventLoopGroup.makeIterator().map { ObjectIdentifier($0) })
        let base: HTTPClient.Configuration = {
            var client = HTTPClient.Configuration(
                tlsConfiguration: configuration.tls,
                redirectConfiguration: .disallow,
                timeout: .init(connect: .nanoseconds(configuration.connectTimeout.clampedNanoseconds), read: .nanoseconds(configuration.readTimeout.clampedNanoseconds)),
                decompression: configuration.decompression ? .enabled(limit: .ratio(100)) : .disabled
            )
            // A failed connection is this address's, reported now, so the next address is tried; a certificate
            // error is the request's, reported now rather than retried until the connect timeout.
            client.connectionPool.retryConnectionEstablishment = false
            return client
        }()
        origins = OriginClients(limit: configuration.maxClients, logger: logger) { key in
            var client = base
            client.dnsOverride = [key.host: key.address.description]
            // NIOSSL would also take a certificate for the address connected to: the name is what must be proven.
            let host = key.host
            client.http1_1ConnectionDebugInitializer = { HostCertificateMismatch.check($0, host: host) }
            client.http2ConnectionDebugInitializer = { HostCertificateMismatch.check($0, host: host, http2: true) }
            client.http2StreamChannelDebugInitializer = { RefusedConnection.checkStream($0) }
            return HTTPClient(eventLoopGroup: eventLoopGroup, configuration: client)
        }
        passthrough = PassthroughClient(HTTPClient(eventLoopGroup: eventLoopGroup, configuration: base), logger: logger)
        // A group NIO's bootstraps cannot use (not a POSIX one) gets no race: the addresses are tried in turn.
        race = configuration.connectionAttemptDelay.flatMap { delay in
            ClientBootstrap(validatingGroup: eventLoopGroup).map { _ in
                ConnectionRace(eventLoopGroup: eventLoopGroup, attemptDelay: delay, connectTimeout: configuration.connectTimeout)
            }
        }
        warmAddresses = WarmAddresses(lifetime: base.connectionPool.idleTimeout, limit: configuration.maxClients)
        var failures: [InterceptorError.Code: Counter] = [:]
        for code in InterceptorError.Code.all {
            failures[code] = Counter(label: "httpdns_interceptor_requests_total", dimensions: [("outcome", code.description)])
        }
        self.errorOutcomes = failures
    }

    /// How many (host, address) clients are kept now.
    public var clientCount: Int { origins.count }

    /// What the pipeline does with a request.
    public enum Decision: Sendable, Hashable {
        /// Resolve this host and send the request to its addresses.
        case take(HostName)
        /// Send the request as given.
        case pass(PassReason)
        /// Refuse it: the host is neither an address nor a name DNS can hold (`a_b.example`). Passing it would
        /// resolve it around HTTPDNS.
        case refuse(HostNameError)
    }

    /// Whether the pipeline takes a request to `canonical`, passes it as given, or refuses it.
    public func decide(_ canonical: CanonicalRequest) -> Decision {
        decide(host: canonical.host)
    }

    /// ``decide(_:)`` for a canonical request's host, read from its URL by the caller (once for the whole hop).
    func decide(host: String) -> Decision {
        guard let name = CanonicalRequest.nameToResolve(host: host) else { return .pass(.addressLiteral) }
        let host: HostName
        do {
            host = try HostName(name)
        } catch {
            return .refuse(error)
        }
        if configuration.excludedHosts.matches(host) { return .pass(.excluded) }
        return .take(host)
    }

    /// Sends `request` through the pipeline, following redirects.
    /// - Parameters:
    ///   - request: the request, as to AsyncHTTPClient; a streamed body is sent once (a 307 or 308 then returns the
    ///     redirect).
    ///   - timeout: until the response head of the last hop arrives, resolution and redirects included. The body
    ///     then streams at its own pace (each read within ``Configuration/readTimeout``).
    ///   - logger: for this request; default the client's.
    /// - Throws: ``InterceptorError``.
    public func execute(_ request: HTTPClientRequest, timeout: Duration, logger: Logger? = nil) async throws(InterceptorError) -> Response {
        try await sendCounted(
            method: request.method.rawValue, url: request.url, fields: Self.fields(of: request.headers), body: request.body.map(Body.opaque),
            redirects: 0, deadline: .now() + .nanoseconds(timeout.clampedNanoseconds), logger: logger ?? self.logger
        )
    }

    /// Sends a request whose body is in memory, so that it can be sent again on a 307 or 308 redirect.
    public func execute(
        method: String = "GET",
        url: String,
        headers: HTTPHeaders = [:],
        body: ByteBuffer? = nil,
        timeout: Duration,
        logger: Logger? = nil
    ) async throws(InterceptorError) -> Response {
        try await sendCounted(
            method: method, url: url, fields: Self.fields(of: headers), body: body.map(Body.bytes), redirects: 0,
            deadline: .now() + .nanoseconds(timeout.clampedNanoseconds), logger: logger ?? self.logger
        )
    }

    /// A request body: in memory, so it can be sent again after a 307 or 308, or the caller's own, which can be sent
    /// again only when it was never read (a connect failure).
    enum Body: Sendable {
        case bytes(ByteBuffer)
        case opaque(HTTPClientRequest.Body)

        /// Whether it can be sent again whole: in memory, yes; the caller's own stream, no.
        var canBeSentAgain: Bool {
            if case .bytes = self { true } else { false }
        }

        var requestBody: HTTPClientRequest.Body {
            switch self {
            case .bytes(let buffer): .bytes(buffer)
            case .opaque(let body): body
            }
        }
    }

    func execute(_ request: HTTPClientRequest, body: Body?, deadline: NIODeadline, logger: Logger?) async throws(InterceptorError) -> Response {
        try await sendCounted(
            method: request.method.rawValue, url: request.url, fields: Self.fields(of: request.headers), body: body, redirects: 0,
            deadline: deadline, logger: logger ?? self.logger
        )
    }

    /// ``send(method:url:fields:body:redirects:deadline:logger:)``, its outcome counted in
    /// `httpdns_interceptor_requests_total` (a failure logged too): once per request, whichever hop it starts from.
    func sendCounted(
        method: String,
        url: String,
        fields: [CanonicalRequest.Header],
        body: Body?,
        redirects: Int,
        deadline: NIODeadline,
        logger: Logger
    ) async throws(InterceptorError) -> Response {
        do {
            let response = try await send(method: method, url: url, fields: fields, body: body, redirects: redirects, deadline: deadline, logger: logger)
            (response.connectedAddress == nil ? passed : sent).increment()
            return response
        } catch {
            count(error, logger: logger)
            throw error
        }
    }

    /// Counts a request failed, in `httpdns_interceptor_requests_total`, and logs it.
    func count(_ error: InterceptorError, logger: Logger) {
        errorOutcomes[error.code]?.increment()
        logger.debug("request failed", metadata: ["error": "\(error)"])
    }

    /// The port a canonical request goes to: its own, else its scheme's.
    static func port(of canonical: CanonicalRequest) -> Int {
        canonical.port ?? (canonical.scheme == "https" ? 443 : 80)
    }

    /// A canonical request's fields as AsyncHTTPClient's headers. No Host field of our own: AsyncHTTPClient writes the
    /// URL's host, and its port when not the scheme's default, which is `canonical.hostHeader` exactly (over HTTP/2,
    /// as :authority alone).
    static func headers(of canonical: CanonicalRequest) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.reserveCapacity(canonical.headers.count)
        for header in canonical.headers { headers.add(name: header.name, value: header.value) }
        return headers
    }

    /// The caller's fields, minus Host: the Host header is always the URL's authority.
    static func fields(of headers: HTTPHeaders) -> [CanonicalRequest.Header] {
        var fields: [CanonicalRequest.Header] = []
        fields.reserveCapacity(headers.count)
        for field in headers where !equalIgnoringASCIICase(field.name, "host") { fields.append(.init(field.name, field.value)) }
        return fields
    }

    /// Sends a request through the pipeline, following redirects: the caller's, or the next hop of one already
    /// `redirects` hops in.
    func send(
        method: String,
        url: String,
        fields: [CanonicalRequest.Header],
        body: Body?,
        redirects: Int,
        deadline: NIODeadline,
        logger: Logger
    ) async throws(InterceptorError) -> Response {
        var method = method
        var url = url
        var fields = fields
        var body = body
        var redirects = redirects
        while true {
            do throws(InterceptorError) {
                let normalized: CanonicalRequest?
                do {
                    normalized = try CanonicalRequest.normalize(
                        method: method, url: url, headers: fields, hasBody: body != nil, configuration: configuration.canonical
                    )
                } catch {
                    throw InterceptorError(.invalidRequest, error.reason + " ('\(error.url)')", cause: error)
                }
                guard let canonical = normalized else { throw InterceptorError(.invalidRequest, "'\(url)' is not an http or https URL") }
                var request = HTTPClientRequest(url: canonical.url)
                request.method = HTTPMethod(rawValue: canonical.method)
                request.headers = Self.headers(of: canonical)
                request.body = body?.requestBody

                let replayable = body?.canBeSentAgain ?? true
                let hop = try await sendHop(request, canonical: canonical, replayable: replayable, deadline: deadline, logger: logger)
                let status = Int(hop.response.status.code)
                // Not a redirect, or no hop allowed (0: the redirect is the answer, whatever its Location says).
                guard Redirect.statuses.contains(status), configuration.maxRedirects > 0 else {
                    return finish(hop, canonical: canonical, redirects: redirects)
                }
                let next = try Redirect.follow(
                    status: status, location: hop.response.headers.first(name: "location"), method: canonical.method, from: canonical,
                    headers: fields, allowingInsecure: configuration.allowsInsecureRedirects
                )
                // No Location; or a body the caller streamed, which cannot be sent again: the redirect is the answer, as
                // AsyncHTTPClient does.
                guard let next, replayable || !next.keepsBody else {
                    return finish(hop, canonical: canonical, redirects: redirects)
                }
                guard redirects < configuration.maxRedirects else {
                    throw InterceptorError(.tooManyRedirects, "\(canonical.host) was redirected more than \(configuration.maxRedirects) times; the last to \(next.url)")
                }
                redirects += 1
                // The redirect's own body is dropped unread (its connection closes): reading it would not be bounded by
                // the request's deadline, which AsyncHTTPClient stops watching once the head arrives.
                _ = consume hop
                logger.debug("following a redirect", metadata: ["status": "\(status)", "to": "\(next.url)"])
                method = next.method
                url = next.url
                fields = next.headers
                if !next.keepsBody { body = nil }
            } catch where error.code == .invalidRequest && redirects > 0 {
                // A hop the origin sent us to that cannot be sent: the origin's fault, not the caller's.
                throw InterceptorError(.invalidRedirect, error.message, cause: error.cause)
            }
        }
    }

    /// One hop's response, and what it was sent to.
    private struct Hop {
        var response: HTTPClientResponse
        var address: IPAddress?
        var fallback: Bool
    }

    private func finish(_ hop: Hop, canonical: CanonicalRequest, redirects: Int) -> Response {
        Response(
            response: hop.response, request: canonical, connectedAddress: hop.address, redirects: redirects, resolvedByFallback: hop.fallback,
            storagePolicy: configuration.storagePolicy
        )
    }

    /// Sends one hop: passed as given, or resolved and sent to the answer's addresses in turn.
    /// - Parameter replayable: whether the body (if any) can be sent again: none, or in memory.
    private func sendHop(
        _ request: HTTPClientRequest,
        canonical: CanonicalRequest,
        replayable: Bool,
        deadline: NIODeadline,
        logger: Logger
    ) async throws(InterceptorError) -> Hop {
        let origin = canonical.host  // Read from the canonical URL once, for the decision and the origin client.
        let host: HostName
        switch decide(host: origin) {
        case .pass(let reason):
            // `192.0.2.1.` is no address to AsyncHTTPClient: it would look it up in DNS, around HTTPDNS.
            if reason == .addressLiteral, origin.hasSuffix(".") {
                throw InterceptorError(.invalidRequest, "\(origin) is an address with a trailing dot; write it without")
            }
            logger.trace("passing a request", metadata: ["reason": "\(reason.rawValue)"])
            do {
                var response = try await passthrough.client.execute(request, deadline: deadline, logger: logger)
                // The body holds the client, so that dropping the interceptor does not close it under the body.
                response.body = .stream(LeasedBody(base: response.body, lease: passthrough))
                return Hop(response: response, address: nil, fallback: false)
            } catch {
                throw describe(error, host: origin, address: nil, method: canonical.method, replayable: replayable)
            }
        case .take(let name):
            host = name
        case .refuse(let error):
            throw InterceptorError(.invalidRequest, "\(error)", cause: error)
        }
        // A hit in the trusted cache is answered without suspending.
        let answer: HostResolver.Answer
        if let cached = try cachedAnswer(host) { answer = cached } else { answer = try await resolve(host, before: deadline) }
        let resolution = answer.resolution
        let addresses = orderedAddresses(of: resolution)
        guard !addresses.isEmpty else {
            throw InterceptorError(.resolutionFailed, "\(host) has no address of the families asked")
        }
        // The override is looked up by the host AsyncHTTPClient reads from the URL: were it to read another, the
        // request would be resolved by the system instead. The canonical form makes them agree for a URL of scheme,
        // host, port and path, whose host is a checked name; with user information (where an `@` could be read in
        // two ways) this makes sure.
        guard canonical.userInfo == nil || URL(string: request.url)?.host?.lowercased() == origin else {
            throw InterceptorError(.invalidRequest, "the URL's host cannot be read the same way by every parser: \(origin)")
        }
        let port = Self.port(of: canonical)
        var candidates = ConnectionRace.interleave(addresses)
        var failures: [String] = []
        // With one address there is nothing to choose: no race, and no warm address to keep.
        let choosing = candidates.count > 1
        // Warm per origin (scheme, host and port): an address proven for one port says nothing of another. Made only
        // when there is a choice: a one-address answer (the common case) builds no key.
        let warmKey = choosing ? Self.warmKey(canonical, port: port) : ""
        if choosing, let warm = warmAddresses.address(of: warmKey, among: candidates), let index = candidates.firstIndex(of: warm) {
            // A request succeeded there lately, so AsyncHTTPClient likely holds a connection to it: no race.
            candidates.insert(candidates.remove(at: index), at: 0)
        } else {
            try await raceConnections(&candidates, port: port, host: host, deadline: deadline, failures: &failures, logger: logger)
        }
        while !candidates.isEmpty {
            let address = candidates.removeFirst()
            guard let lease = origins.lease(.init(host: origin, address: address)) else {
                throw InterceptorError(.shutdown, "the interceptor was shut down")
            }
            do {
                let response: HTTPClientResponse
                do {
                    response = try await lease.client.execute(request, deadline: deadline, logger: logger)
                } catch where replayable && Self.idempotentMethods.contains(canonical.method) && neverAnswered(error) {
                    // The stream ended before an answer, most often refused by the server's GOAWAY, which AsyncHTTPClient
                    // does not send again (swift-server/async-http-client#505). An idempotent request may be sent
                    // twice (RFC 9110 §9.2.2): once more, on a new stream.
                    retries.increment()
                    logger.debug("the stream ended before an answer; sending once more", metadata: ["error": "\(error)"])
                    response = try await lease.client.execute(request, deadline: deadline, logger: logger)
                }
                if choosing { warmAddresses.record(address, for: warmKey) }
                var leased = response
                leased.body = .stream(LeasedBody(base: response.body, lease: lease))
                return Hop(response: leased, address: address, fallback: answer.fallback)
            } catch {
                // Whatever went wrong before the response head (a timeout, a connection lost), the address is no
                // longer one to go to first without a race.
                if choosing { warmAddresses.forget(address, for: warmKey) }
                let failure = describe(error, host: origin, address: address, method: canonical.method, replayable: replayable)
                guard failure.code == .connectFailed else { throw failure }
                failures.append(failure.message)
                if !candidates.isEmpty {
                    failovers.increment()
                    logger.debug("connecting failed; trying the next address", metadata: ["address": "\(address)", "error": "\(error)"])
                    try await raceConnections(&candidates, port: port, host: host, deadline: deadline, failures: &failures, logger: logger)
                }
            }
        }
        throw InterceptorError(.connectFailed, "no address of \(host) could be connected to: \(failures.joined(separator: "; "))")
    }

    /// An answer's addresses in the configured order of families.
    func orderedAddresses(of resolution: Resolution) -> [IPAddress] {
        configuration.addressOrder == .ipv4First
            ? resolution.ipv4.map(IPAddress.v4) + resolution.ipv6.map(IPAddress.v6)
            : resolution.ipv6.map(IPAddress.v6) + resolution.ipv4.map(IPAddress.v4)
    }

    /// The key of an origin's warm address: its scheme, host and port.
    static func warmKey(_ canonical: CanonicalRequest, port: Int) -> String {
        "\(canonical.scheme)://\(canonical.host):\(port)"
    }

    /// Happy Eyeballs over `candidates` (when there is more than one and it is on): the address that connected
    /// first is moved to the front, the others keep their order for failover. Nothing is sent.
    /// - Throws: `connectFailed` when none connected, `timeout` past the request's deadline, `cancelled`.
    private func raceConnections(
        _ candidates: inout [IPAddress],
        port: Int,
        host: HostName,
        deadline: NIODeadline,
        failures: inout [String],
        logger: Logger
    ) async throws(InterceptorError) {
        guard let race, candidates.count > 1 else { return }
        // No connections opened for an interceptor shut down (sending checks it too, when it leases a client).
        guard !origins.isShutDown else { throw InterceptorError(.shutdown, "the interceptor was shut down") }
        let addresses = candidates
        let outcome: ConnectionRace.Outcome?
        do {
            outcome = try await withDeadline(deadline) { await race.run(addresses, port: port) }
        } catch {
            outcome = nil
        }
        if Task.isCancelled { throw InterceptorError(.cancelled, "the request to \(host) was cancelled") }
        switch outcome {
        case nil:
            throw InterceptorError(.timeout, "no address of \(host) connected before the request's deadline")
        case .connected(let index)?:
            (index == 0 ? raceResults.first : raceResults.other).increment()
            if index > 0 {
                logger.debug("a later address connected first", metadata: ["address": "\(candidates[index])", "skipped": "\(candidates[0])"])
                candidates.insert(candidates.remove(at: index), at: 0)
            }
        case .failed(let reasons)?:
            raceResults.failed.increment()
            throw InterceptorError(.connectFailed, "no address of \(host) could be connected to: \((failures + reasons).joined(separator: "; "))")
        }
    }

    /// The trusted cache's answer for `host`, if it holds one: no lookup, and no race to set up (which costs more
    /// than the rest of the interceptor's own work together; PERFORMANCE.md).
    /// - Throws: `resolutionFailed` for a negative answer cached; any other failure is left to ``resolve(_:before:)``.
    private func cachedAnswer(_ host: HostName) throws(InterceptorError) -> HostResolver.Answer? {
        do {
            return try resolver.cachedAnswer(host, families: configuration.families)
        } catch let error as ResolutionError where error.code.isNegativeAnswer {
            throw InterceptorError(.resolutionFailed, "\(host) could not be resolved: \(error.message)", cause: error)
        } catch {
            // Anything else: the resolver's own path decides (the fallbacks, the guard).
            return nil
        }
    }

    /// The resolver's answer for `host`, the lookup raced against what is left of the request's deadline (the lookup
    /// itself goes on for whoever else waits on it).
    private func resolve(_ host: HostName, before deadline: NIODeadline) async throws(InterceptorError) -> HostResolver.Answer {
        let families = configuration.families
        do {
            guard let answer = try await withDeadline(deadline, { try await self.resolver.resolve(host, families: families) }) else {
                throw InterceptorError(.timeout, "\(host) was not resolved before the request's deadline")
            }
            return answer
        } catch let error as InterceptorError {
            throw error
        } catch let error as ResolutionError {
            throw InterceptorError(.resolutionFailed, "\(host) could not be resolved: \(error.message)", cause: error)
        } catch {
            throw InterceptorError(Task.isCancelled ? .cancelled : .resolutionFailed, "\(host) could not be resolved: \(error)", cause: error)
        }
    }

    /// Whether `error` says the request's stream ended before any answer, without the caller cancelling: a stream
    /// the server refused or cancelled (its GOAWAY: NIOHTTP2 closes the streams above the last one the server
    /// took with CANCEL), or one AsyncHTTPClient cancelled as its connection went.
    func neverAnswered(_ error: any Error) -> Bool {
        guard !Task.isCancelled else { return false }
        if let closed = error as? NIOHTTP2Errors.StreamClosed { return closed.errorCode == .cancel || closed.errorCode == .refusedStream }
        // A closed HTTP/1.1 connection says nothing of whether the request was processed: not retried.
        if let error = error as? HTTPClientError { return error == .cancelled }
        return false
    }

    /// Methods a server may get twice without harm (RFC 9110 §9.2.2).
    static let idempotentMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]

    /// An error of AsyncHTTPClient, NIO or TLS as what it means for the request: only a connection that was never
    /// made (so the request was never sent) is `connectFailed`, which lets the next address be tried.
    func describe(_ error: any Error, host: String, address: IPAddress?, method: String, replayable: Bool) -> InterceptorError {
        let target = address.map { "\(host) at \($0)" } ?? host
        if let reason = CertificateRejection.reason(error) {
            return InterceptorError(.certificateRejected, "the TLS certificate of \(target) was not accepted for \(host): \(reason)", cause: error)
        }
        if Task.isCancelled { return InterceptorError(.cancelled, "the request to \(target) was cancelled", cause: error) }
        switch error {
        case is NIOConnectionError, ChannelError.connectTimeout:
            return InterceptorError(.connectFailed, "\(target): \(error)", cause: error)
        case let error as IOError where [ECONNREFUSED, EADDRNOTAVAIL].contains(error.errnoCode):
            // Only ever the connect's own failure: a connection once made is reset, not refused.
            return InterceptorError(.connectFailed, "\(target): \(error)", cause: error)
        case let error as IOError where [ENETUNREACH, EHOSTUNREACH].contains(error.errnoCode):
            // Linux also reports these on a connection already made, when it gives up on it: only a request that may
            // reach the server twice, with a body that can be sent again whole, moves on.
            guard Self.idempotentMethods.contains(method), replayable else {
                return InterceptorError(.transportFailed, "\(target): \(error); a \(method) is not sent again", cause: error)
            }
            return InterceptorError(.connectFailed, "\(target): \(error)", cause: error)
        case let error as NIOSSLError:
            if case .handshakeFailed = error { return InterceptorError(.connectFailed, "\(target): the TLS handshake failed: \(error)", cause: error) }
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout, .tlsHandshakeTimeout:
                return InterceptorError(.connectFailed, "\(target): \(error)", cause: error)
            case .deadlineExceeded, .readTimeout:
                return InterceptorError(.timeout, "\(target) did not answer in time", cause: error)
            case .cancelled:
                // AsyncHTTPClient says so of a stream the server refused (an HTTP/2 GOAWAY) too: the caller's
                // cancellation was caught above.
                return InterceptorError(.transportFailed, "\(target): the request was cancelled on its connection (\(error))", cause: error)
            case .alreadyShutdown:
                return InterceptorError(.shutdown, "the interceptor was shut down", cause: error)
            default:
                break
            }
        case is CancellationError:
            return InterceptorError(.cancelled, "the request to \(target) was cancelled", cause: error)
        default:
            break
        }
        return InterceptorError(.transportFailed, "\(target): \(error)", cause: error)
    }

    /// Shuts every client down (requests still running fail) and returns once all are.
    public func shutdown() async {
        await origins.shutdown()
        await passthrough.shutdown()
    }
}

/// The client for requests the interceptor passes (address literals, excluded hosts). Dropped without
/// ``shutdown()`` (the interceptor dropped, and no response body holding it any more), it closes in the background
/// with a warning, as ``OriginClients`` does for the origins' clients, never stopping the process.
final class PassthroughClient: Sendable {
    let client: HTTPClient
    private let logger: Logger
    private let isShutDown = Mutex(false)

    init(_ client: HTTPClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    func shutdown() async {
        isShutDown.withLock { $0 = true }
        try? await client.shutdown()
    }

    deinit {
        guard !isShutDown.withLock({ $0 }) else { return }
        DroppedClients.shutDown([client], owner: "InterceptingHTTPClient", logger: logger)
    }
}

/// A response body that holds its client (an origin client's lease, or the passthrough client) until the body is
/// read or dropped, so the client is not shut down under it.
struct LeasedBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let base: HTTPClientResponse.Body
    let lease: any AnyObject & Sendable

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: HTTPClientResponse.Body.AsyncIterator
        let lease: any AnyObject & Sendable

        mutating func next() async throws -> ByteBuffer? {
            try await base.next()
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), lease: lease)
    }
}

/// The system's CA bundle, read and parsed once for every client the interceptor makes; nil where there is none of
/// the usual files (the clients then use NIOSSL's default, which finds its own).
enum SystemTrustRoots {
    static let certificates: [NIOSSLCertificate]? = {
        for path in ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"] {
            if let certificates = try? NIOSSLCertificate.fromPEMFile(path), !certificates.isEmpty { return certificates }
        }
        return nil
    }()
}
