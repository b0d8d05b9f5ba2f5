#if Vapor
import AsyncHTTPClient
import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSNetworking
import Logging
import NIOCore
import NIOHTTP1
import Vapor

/// Vapor's `Client` over an `InterceptingHTTPClient`: `app.client` and `req.client` requests resolved by HTTPDNS
/// and sent to the answer's addresses, with the real name kept in the Host header, TLS SNI and the certificate check.
///
/// Install it with `app.clients.use(.httpdns(…))` rather than make one by hand: `.httpdns(resolver:…)` makes an
/// interceptor the application owns and shuts down, `.httpdns(_:…)` takes one the caller owns.
///
/// A request's body is in memory (Vapor's `ClientRequest` holds a `ByteBuffer`), so the interceptor can send it again
/// to the next address, on a new HTTP/2 stream or after a 307 or 308. The response's body is collected, as Vapor's own
/// client does, up to ``Configuration-swift.struct/maxResponseBodyBytes``. Errors are `InterceptorError`s.
public struct InterceptingVaporClient: Client {
    /// How requests are sent and responses collected.
    public struct Configuration: Sendable {
        /// How long a request may take, its response body collected, when the `ClientRequest` sets no `timeout` of its
        /// own. Default 60 s.
        public var timeout: Duration = .seconds(60)
        /// The largest response body collected; a longer one fails the request with `InterceptorError.transportFailed`,
        /// whose cause is NIO's `NIOTooManyBytesError`. Default 32 MiB; a bound past 4 GiB, what one `ByteBuffer`
        /// holds, bounds at 4 GiB. A redirect's body, which is followed and not returned, is not held to it.
        public var maxResponseBodyBytes = 32 << 20

        public init() {}

        /// - Throws: `ConfigurationError` for a timeout that is not positive or a negative bound.
        public func validate() throws(ConfigurationError) {
            guard timeout > .zero else {
                throw ConfigurationError(.outOfRange, key: "timeout", reason: "must be positive, not \(timeout)")
            }
            guard maxResponseBodyBytes >= 0 else {
                throw ConfigurationError(.outOfRange, key: "maxResponseBodyBytes", reason: "must be 0 or more bytes, not \(maxResponseBodyBytes)")
            }
        }
    }

    /// The interceptor requests go through. Who shuts it down depends on how the client was installed: see
    /// `Application.Clients.Provider.httpdns`.
    public let interceptor: InterceptingHTTPClient
    /// The default timeout and the response body bound.
    public let configuration: Configuration
    /// Where the futures of ``send(_:)`` complete: the request's own for `req.client`.
    public let eventLoop: any EventLoop
    /// For what the caller encodes into requests and responses: the request's own for `req.client`.
    public let byteBufferAllocator: ByteBufferAllocator
    /// For each request; nil logs to the interceptor's own logger.
    public let logger: Logger?

    /// - Parameters:
    ///   - interceptor: the interceptor to send through; not owned by this client.
    ///   - configuration: the default timeout and the response body bound.
    ///   - eventLoop: where the futures of ``send(_:)`` complete.
    ///   - logger: for each request; default the interceptor's own.
    ///   - byteBufferAllocator: for what the caller encodes into requests (`ClientRequest.content`) and responses.
    /// - Throws: `ConfigurationError` for a configuration ``Configuration-swift.struct/validate()`` refuses.
    public init(
        _ interceptor: InterceptingHTTPClient,
        configuration: Configuration = Configuration(),
        eventLoop: any EventLoop,
        logger: Logger? = nil,
        byteBufferAllocator: ByteBufferAllocator = ByteBufferAllocator()
    ) throws(ConfigurationError) {
        try configuration.validate()
        self.init(checked: interceptor, configuration: configuration, eventLoop: eventLoop, logger: logger, byteBufferAllocator: byteBufferAllocator)
    }

    init(
        checked interceptor: InterceptingHTTPClient,
        configuration: Configuration,
        eventLoop: any EventLoop,
        logger: Logger?,
        byteBufferAllocator: ByteBufferAllocator
    ) {
        self.interceptor = interceptor
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.logger = logger
        self.byteBufferAllocator = byteBufferAllocator
    }

    /// Sends `request` through the interceptor, following redirects, and collects the response.
    ///
    /// The request's `timeout` (else ``Configuration-swift.struct/timeout``) bounds all of it, the response body
    /// included, as Vapor's own client does. The future fails with an `InterceptorError`.
    ///
    /// A request whose host's answer is cached, with one address to go to, is sent on AsyncHTTPClient's
    /// `EventLoopFuture` API, as Vapor's own client sends: no task per request. Others go through the interceptor's
    /// task-based pipeline; the rules and errors are the same.
    public func send(_ request: ClientRequest) -> EventLoopFuture<ClientResponse> {
        let allocator = byteBufferAllocator
        return interceptor.executeCollecting(
            method: request.method.rawValue, url: request.url.string, headers: request.headers, body: request.body, timeout: timeout(of: request),
            maxBodyBytes: configuration.maxResponseBodyBytes, on: eventLoop, logger: logger
        ).map { ClientResponse(status: $0.status, headers: $0.headers, body: $0.body, byteBufferAllocator: allocator) }
    }

    /// ``send(_:)`` as an async call, throwing the interceptor's error as it is typed. Cancelling the calling task
    /// cancels the request.
    public func execute(_ request: ClientRequest) async throws(InterceptorError) -> ClientResponse {
        let response = try await interceptor.executeCollecting(
            method: request.method.rawValue, url: request.url.string, headers: request.headers, body: request.body, timeout: timeout(of: request),
            maxBodyBytes: configuration.maxResponseBodyBytes, logger: logger
        )
        // No body at all is nil, as Vapor's own client gives it.
        return ClientResponse(status: response.status, headers: response.headers, body: response.body, byteBufferAllocator: byteBufferAllocator)
    }

    /// The request's own timeout, else the configuration's.
    private func timeout(of request: ClientRequest) -> Duration {
        request.timeout.map { Duration.nanoseconds($0.nanoseconds) } ?? configuration.timeout
    }

    public func delegating(to eventLoop: any EventLoop) -> any Client {
        Self(checked: interceptor, configuration: configuration, eventLoop: eventLoop, logger: logger, byteBufferAllocator: byteBufferAllocator)
    }

    public func logging(to logger: Logger) -> any Client {
        Self(checked: interceptor, configuration: configuration, eventLoop: eventLoop, logger: logger, byteBufferAllocator: byteBufferAllocator)
    }

    public func allocating(to byteBufferAllocator: ByteBufferAllocator) -> any Client {
        Self(checked: interceptor, configuration: configuration, eventLoop: eventLoop, logger: logger, byteBufferAllocator: byteBufferAllocator)
    }
}

extension Application.Clients.Provider {
    /// `app.client` and `req.client` through `interceptor`, which **the caller owns**: the application does not shut it
    /// down. Shut it down (or leave its `withInterceptingHTTPClient` scope) after `app.asyncShutdown()`.
    ///
    /// ```swift
    /// try app.clients.use(.httpdns(interceptor))
    /// ```
    /// - Throws: `ConfigurationError` for a configuration `InterceptingVaporClient.Configuration.validate()` refuses.
    public static func httpdns(
        _ interceptor: InterceptingHTTPClient,
        configuration: InterceptingVaporClient.Configuration = InterceptingVaporClient.Configuration()
    ) throws(ConfigurationError) -> Self {
        try configuration.validate()
        return .init { application in install(interceptor, configuration: configuration, on: application) }
    }

    /// `app.client` and `req.client` through an `InterceptingHTTPClient` made now over `resolver`, which **the
    /// application owns**: `app.asyncShutdown()` shuts it down (a lifecycle handler; the synchronous `shutdown()` starts
    /// its shutdown without waiting). The resolver is not the interceptor's and stays the caller's, as everywhere: shut
    /// it down after the application.
    ///
    /// ```swift
    /// try app.clients.use(.httpdns(resolver: resolver))
    /// ```
    ///
    /// Use the provider with one application. Made and never used, the interceptor is closed in the background when
    /// dropped, with a warning.
    /// - Throws: `ConfigurationError` for a configuration the interceptor or `InterceptingVaporClient` refuses.
    public static func httpdns(
        resolver: HostResolver,
        configuration: InterceptingHTTPClient.Configuration = InterceptingHTTPClient.Configuration(),
        clientConfiguration: InterceptingVaporClient.Configuration = InterceptingVaporClient.Configuration(),
        logger: Logger = Logger(label: "httpdns.interceptor")
    ) throws(ConfigurationError) -> Self {
        try clientConfiguration.validate()
        let interceptor = try InterceptingHTTPClient(resolver: resolver, configuration: configuration, logger: logger)
        return .init { application in
            application.lifecycle.use(InterceptorShutdown(interceptor: interceptor))
            install(interceptor, configuration: clientConfiguration, on: application)
        }
    }

    /// Makes `application.client` (and so each `req.client`) an ``InterceptingVaporClient`` over `interceptor`.
    private static func install(
        _ interceptor: InterceptingHTTPClient,
        configuration: InterceptingVaporClient.Configuration,
        on application: Application
    ) {
        application.clients.use { application in
            InterceptingVaporClient(
                checked: interceptor, configuration: configuration, eventLoop: application.eventLoopGroup.next(), logger: nil,
                byteBufferAllocator: application.allocator
            )
        }
    }
}

/// Shuts down, with the application, an interceptor the application owns.
struct InterceptorShutdown: LifecycleHandler {
    let interceptor: InterceptingHTTPClient

    func shutdownAsync(_ application: Application) async {
        await interceptor.shutdown()
    }

    func shutdown(_ application: Application) {
        // The synchronous path cannot wait: the shutdown is started, and runs on.
        let interceptor = interceptor
        Task { await interceptor.shutdown() }
    }
}
#endif
