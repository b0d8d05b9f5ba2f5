import HTTPDNSCore
import HTTPTypes
import Hummingbird
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL
import Prometheus

#if canImport(Glibc)
    import Glibc
#endif

/// The HTTPDNS service (`httpdns serve`): the native API, DoH, JSON DNS, `/metrics`, `/healthz`, `/readyz`,
/// answering from one ``ResolverCache``.
public struct HTTPDNSService: Sendable {
    public let configuration: HTTPDNSServerConfiguration
    public let resolver: ResolverCache
    /// Where `/metrics` reads from; the caller bootstraps swift-metrics with a factory writing to it.
    public let registry: PrometheusCollectorRegistry
    private let clock: any MonotonicClock
    private let unixTime: @Sendable () -> Int64

    public init(
        configuration: HTTPDNSServerConfiguration,
        resolver: ResolverCache,
        registry: PrometheusCollectorRegistry,
        clock: any MonotonicClock = SystemMonotonicClock(),
        unixTime: @escaping @Sendable () -> Int64 = { Int64(time(nil)) }
    ) {
        self.configuration = configuration
        self.resolver = resolver
        self.registry = registry
        self.clock = clock
        self.unixTime = unixTime
    }

    /// The routes, with the service's middleware in front.
    public func makeRouter() -> Router<HTTPDNSRequestContext> {
        let router = Router(context: HTTPDNSRequestContext.self)
        let rateLimiter =
            configuration.rateLimitPerSecond > 0
            ? RateLimiter(ratePerSecond: configuration.rateLimitPerSecond, burst: configuration.rateLimitBurst)
            : nil
        router.add(middleware: ServiceMiddleware(configuration: configuration, rateLimiter: rateLimiter, clock: clock))

        let native = NativeAPI(resolver: resolver, configuration: configuration)
        let doh = DoHAPI(resolver: resolver, configuration: configuration)
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
        router.get("/metrics") { _, _ in
            var text: [UInt8] = []
            registry.emit(into: &text)
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: MetricsExposition.withHelp(text)))
            )
        }

        // Every endpoint is GET-only except /dns-query: other methods get 405 with the code, not a bare 404.
        let readOnly = [
            "/d", "/resolve", "/:account/d", "/:account/resolve", "/:account/sign_d", "/:account/sign_resolve", "/healthz", "/readyz", "/metrics",
        ]
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
    /// - Parameter onListening: called with the bound port once the server listens (port 0 picks one).
    public func run(logger: Logger, onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let serverConfiguration = ApplicationConfiguration(
            address: .hostname(configuration.host, port: configuration.port),
            serverName: nil
        )
        if let tls = try configuration.tlsConfiguration() {
            let application = Application(
                router: makeRouter(),
                server: try .http2Upgrade(
                    tlsConfiguration: tls,
                    configuration: .init(
                        idleTimeout: .seconds(configuration.idleTimeoutSeconds),
                        streamConfiguration: .init(idleTimeout: .seconds(configuration.idleTimeoutSeconds))
                    )
                ),
                configuration: serverConfiguration,
                onServerRunning: { await onListening($0.localAddress?.port ?? 0) },
                logger: logger
            )
            try await application.runService()
        } else {
            let application = Application(
                router: makeRouter(),
                server: .http1(configuration: .init(idleTimeout: .seconds(configuration.idleTimeoutSeconds))),
                configuration: serverConfiguration,
                onServerRunning: { await onListening($0.localAddress?.port ?? 0) },
                logger: logger
            )
            try await application.runService()
        }
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
