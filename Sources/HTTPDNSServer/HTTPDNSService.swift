import HTTPDNSCore
import HTTPDNSServerTransport
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOSSL

#if canImport(Glibc)
    import Glibc
#endif

/// The HTTPDNS service (`httpdns serve`): the native API, DoH, JSON DNS, `/metrics`, `/healthz`, `/readyz`,
/// answering from one `ResolverCache`.
public struct HTTPDNSService: Sendable {
    public let configuration: HTTPDNSServerConfiguration
    public let resolver: ResolverCache
    /// What `/metrics` serves; nil answers it 404. The service records through swift-metrics only: the executable
    /// bootstraps a backend and says here how to read it.
    public let metrics: MetricsEndpoint?
    private let unixTime: @Sendable () -> Int64
    private let native: NativeAPI
    private let doh: DoHAPI
    private let admission: Admission
    private let requestMetrics = RequestMetrics()
    /// The logger ``run()`` uses, as a `Service` in a `ServiceGroup`.
    public let logger: Logger

    /// - Parameters:
    ///   - configuration: where it listens, its limits, TLS and accounts.
    ///   - resolver: the cache it answers from; the service does not own it, nor the cache's source.
    ///   - metrics: what `/metrics` serves; nil answers it 404.
    ///   - clock: the clock of rate limits and relayed answers' ages.
    ///   - unixTime: the wall clock signatures are checked against.
    ///   - logger: the logger ``run()`` uses.
    /// - Throws: `ConfigurationError` when `configuration` does not pass ``HTTPDNSServerConfiguration/validate()``.
    public init(
        configuration: HTTPDNSServerConfiguration,
        resolver: ResolverCache,
        metrics: MetricsEndpoint?,
        clock: any MonotonicClock = SystemMonotonicClock(),
        unixTime: @escaping @Sendable () -> Int64 = { Int64(time(nil)) },
        logger: Logger = Logger(label: "httpdns.service")
    ) throws(ConfigurationError) {
        try configuration.validate()
        self.logger = logger
        self.configuration = configuration
        self.resolver = resolver
        self.metrics = metrics
        self.unixTime = unixTime
        native = NativeAPI(resolver: resolver, configuration: configuration)
        let relay = (resolver.source as? any MessageRelaying).map { source in
            var relayed = RelayedAnswers.Configuration()
            // The cache's settings in the relayed answers' whole seconds and milliseconds (the TTL clamps are whole
            // seconds already; the rest round up, so a short but non-zero setting stays non-zero).
            let cache = resolver.configuration
            relayed.minTTLSeconds = cache.minTTL.roundedUpSeconds
            relayed.maxTTLSeconds = cache.maxTTL.roundedUpSeconds
            relayed.negativeTTLSeconds = cache.negativeTTL.roundedUpSeconds
            relayed.minNegativeTTLSeconds = cache.minNegativeTTL.roundedUpSeconds
            relayed.maxNegativeTTLSeconds = cache.maxNegativeTTL.roundedUpSeconds
            relayed.maxStaleSeconds = cache.maxStale.roundedUpSeconds
            relayed.staleTTLSeconds = cache.staleAnswerTTL.roundedUpSeconds
            relayed.staleAnswerClientTimeoutMs = cache.staleAnswerClientTimeout.roundedUpMilliseconds
            relayed.staleRefreshRetrySeconds = cache.staleRefreshRetry.roundedUpSeconds
            return RelayedAnswers(relay: source, clock: clock, configuration: relayed)
        }
        doh = DoHAPI(resolver: resolver, configuration: configuration, relay: relay)
        admission = Admission(configuration: configuration, clock: clock)
    }

    /// The routes, with the service's middleware in front.
    public func makeRouter() -> Router<HTTPDNSRequestContext> {
        let router = Router(context: HTTPDNSRequestContext.self)
        router.add(middleware: ServiceMiddleware(admission: admission, requestMetrics: requestMetrics))
        let (native, doh) = (native, doh)
        let authenticator = AccountAuthenticator(
            accounts: configuration.accounts,
            maxValiditySeconds: configuration.signatureMaxValiditySeconds,
            now: unixTime
        )

        router.get("/d") { request, _ in try await native.single(request) }
        router.get("/resolve") { request, _ in try await native.batch(request) }
        router.get("/:account/d") { request, context in
            try authenticator.authorizeUnsigned(account: context.parameters.require("account"))
            return try await native.single(request)
        }
        router.get("/:account/resolve") { request, context in
            try authenticator.authorizeUnsigned(account: context.parameters.require("account"))
            return try await native.batch(request)
        }
        router.get("/:account/sign_d") { request, context in
            try Self.authorizeSigned(request, context, authenticator)
            return try await native.single(request)
        }
        router.get("/:account/sign_resolve") { request, context in
            try Self.authorizeSigned(request, context, authenticator)
            return try await native.batch(request)
        }
        router.get("/dns-query") { request, _ in try await doh.get(request) }
        router.post("/dns-query") { request, _ in try await doh.post(request) }

        router.get("/healthz") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        router.get("/readyz") { _, _ in try await ready() }
        if let metrics {
            router.get("/metrics") { _, _ in
                Response(
                    status: .ok,
                    headers: [.contentType: metrics.contentType],
                    body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition()))
                )
            }
        }

        // Every endpoint is GET-only except /dns-query: other methods get 405 with the code, not a bare 404.
        let readOnly =
            ["/d", "/resolve", "/:account/d", "/:account/resolve", "/:account/sign_d", "/:account/sign_resolve", "/healthz", "/readyz"]
            + (metrics == nil ? [] : ["/metrics"])
        for path in readOnly {
            for method in [HTTPRequest.Method.post, .put, .delete, .patch] {
                router.on(RouterPath(path), method: method) { request, _ -> Response in
                    throw ServiceError.methodNotAllowed(request.method, allowed: "GET")
                }
            }
        }
        for method in [HTTPRequest.Method.put, .delete, .patch] {
            router.on("/dns-query", method: method) { request, _ -> Response in
                throw ServiceError.methodNotAllowed(request.method, allowed: "GET, POST")
            }
        }
        return router
    }

    /// Runs the service until SIGTERM or SIGINT, then stops accepting connections, lets the requests in flight
    /// finish, and returns. Plain HTTP/1.1, or TLS offering `h2` and `http/1.1` when a certificate is configured.
    /// - Parameters:
    ///   - logger: the service's logger; each request's lines carry its id.
    ///   - onListening: called with the bound port once the server listens (port 0 picks one).
    public func run(logger: Logger, onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        try await makeApplication(logger: logger, onListening: onListening).runService()
    }

    /// The service as a Hummingbird application, with cache hits for `/d` and `/dns-query` answered on the event
    /// loop (`CacheHitResponder`) and everything else through ``makeRouter()``.
    /// - Parameters:
    ///   - logger: the service's logger.
    ///   - onListening: called with the bound port once the server listens.
    public func makeApplication(logger: Logger, onListening: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some ApplicationProtocol {
        let cacheHits = cacheHitResponder(logger: logger)
        let idleTimeout = configuration.idleTimeout
        let headerTimeout = configuration.headerTimeout
        let router = makeRouter()
        let server: HTTPServerBuilder
        if let tls = try configuration.tlsConfiguration() {
            let sslContext = try ServiceTLSChannel.makeSSLContext(tls)
            let bridge = RouterBridge(responder: router.buildResponder(), logger: logger, maxBodyBytes: configuration.maxDNSMessageBytes)
            let bodyBudget = RequestBudget(bodyBytes: configuration.maxRequestBodyBytesHeld, streams: configuration.maxOpenStreams)
            server = HTTPServerBuilder { responder in
                ServiceTLSChannel(
                    sslContext: sslContext,
                    responder: responder,
                    cacheHits: cacheHits,
                    router: bridge,
                    idleTimeout: idleTimeout,
                    headerTimeout: headerTimeout,
                    bodyBudget: bodyBudget
                )
            }
        } else {
            server = HTTPServerBuilder { responder in
                ServiceHTTP1Channel(responder: responder, cacheHits: cacheHits, idleTimeout: idleTimeout, headerTimeout: headerTimeout)
            }
        }
        return Application(
            router: router,
            server: server,
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port),
                serverName: nil,
                availableConnectionsDelegate: ConnectionLimit(limit: configuration.maxConnections)
            ),
            onServerRunning: { await onListening($0.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    func cacheHitResponder(logger: Logger) -> CacheHitResponder {
        CacheHitResponder(native: native, doh: doh, admission: admission, requestMetrics: requestMetrics, logger: logger)
    }

    private static func authorizeSigned(_ request: Request, _ context: HTTPDNSRequestContext, _ authenticator: AccountAuthenticator) throws {
        let parameters = request.uri.queryParameters
        guard let host = parameters["host"], !host.isEmpty else { throw ServiceError.missingArgument("host") }
        try authenticator.authorizeSigned(
            account: context.parameters.require("account"),
            host: host,
            expiry: parameters["t"],
            signature: parameters["s"]
        )
    }

    /// Ready when an upstream answers: the probe name (always NXDOMAIN) is asked of the source directly, past the
    /// cache, and any answer counts.
    private func ready() async throws -> Response {
        let probe = try HostName(configuration.readinessProbeName)
        do {
            _ = try await resolver.source.query(probe, families: .ipv4)
            return Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ready"}"#))
            )
        } catch {
            throw ServiceError.upstreamUnavailable("no upstream answered: \(error)", retryAfterSeconds: configuration.upstreamRetryAfterSeconds)
        }
    }
}

/// How `/metrics` reads the metrics backend the executable chose.
public struct MetricsEndpoint: Sendable {
    /// The exposition's media type, such as `text/plain; version=0.0.4; charset=utf-8` for Prometheus text.
    public var contentType: String
    /// The current exposition.
    public var exposition: @Sendable () -> [UInt8]

    public init(contentType: String, exposition: @escaping @Sendable () -> [UInt8]) {
        self.contentType = contentType
        self.exposition = exposition
    }
}
