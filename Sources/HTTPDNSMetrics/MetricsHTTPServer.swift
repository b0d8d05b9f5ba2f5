import HTTPDNSCore
import HTTPDNSSynchronization
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// A small HTTP/1.1 server for `GET /metrics`, for a backend that has no HTTP server of its own: a `Service` to run
/// in its `ServiceGroup`.
///
/// ```swift
/// let help = ResolverMetricFamilies.help.merging(InterceptorMetricFamilies.help) { first, _ in first }
/// let metrics = MetricsHTTPServer(exposition: .bootstrap(help: help))   // 127.0.0.1:9464
/// let group = ServiceGroup(services: [metrics, myService], logger: logger)
/// ```
///
/// It listens on 127.0.0.1 unless told otherwise, answers `/metrics` and nothing else (404; 405 for another method),
/// and holds a bounded amount for any client: at most ``Configuration/maxConnections`` connections (more are closed
/// at once), a request head within NIO's parser's bound, no request body (413, and the connection closed), and
/// ``Configuration/idleTimeout`` for a connection that sends nothing.
public final class MetricsHTTPServer: Service, Sendable {
    public struct Configuration: Sendable {
        /// Default 127.0.0.1: metrics say much about a backend's traffic, so reaching them from elsewhere is a choice.
        public var host = "127.0.0.1"
        /// Default 9464 (Prometheus's registered port for exporters of this kind); 0 picks a free one.
        public var port = 9464
        /// Default 16: scrapers are few.
        public var maxConnections = 16
        /// Default 30 s.
        public var idleTimeout: Duration = .seconds(30)

        public init() {}
    }

    public let exposition: PrometheusExposition
    public let configuration: Configuration
    private let logger: Logger
    private let bound = Mutex<SocketAddress?>(nil)
    private let listening: AsyncStream<SocketAddress>.Continuation
    private let listeningStream: AsyncStream<SocketAddress>

    public init(exposition: PrometheusExposition, configuration: Configuration = Configuration(), logger: Logger = Logger(label: "httpdns.metrics")) {
        self.exposition = exposition
        self.configuration = configuration
        self.logger = logger
        (listeningStream, listening) = AsyncStream.makeStream(of: SocketAddress.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// `configuration` with `host` and `port`.
    public convenience init(exposition: PrometheusExposition, host: String = "127.0.0.1", port: Int = 9464) {
        var configuration = Configuration()
        configuration.host = host
        configuration.port = port
        self.init(exposition: exposition, configuration: configuration)
    }

    /// The address it listens on once ``run()`` has bound it (the port chosen when 0 was asked).
    public var listeningAddress: SocketAddress? { bound.withLock { $0 } }

    /// Waits until ``run()`` has bound its socket, and returns the address.
    public func waitUntilListening() async -> SocketAddress? {
        if let address = listeningAddress { return address }
        for await address in listeningStream { return address }
        return listeningAddress
    }

    /// Listens until the service group shuts down gracefully (or the task is cancelled), then closes.
    /// - Throws: when the address cannot be bound, or the configuration cannot work.
    public func run() async throws {
        // Whoever waits for the address hears of a failed start too (nil), rather than waiting forever: a setting
        // that cannot work as much as an address that cannot be bound.
        defer { listening.finish() }
        guard configuration.maxConnections > 0 else {
            throw MetricsHTTPServerError(
                configuration: ConfigurationError(.outOfRange, key: "maxConnections", reason: "must be positive, not \(configuration.maxConnections)")
            )
        }
        guard (0...65535).contains(configuration.port) else {
            throw MetricsHTTPServerError(
                configuration: ConfigurationError(.outOfRange, key: "port", reason: "must be 0 to 65535, not \(configuration.port)")
            )
        }
        let open = OpenConnections(limit: configuration.maxConnections)
        let exposition = exposition
        let idleTimeout = configuration.idleTimeout.clampedNanoseconds
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                guard open.enter(channel) else { return channel.close() }
                channel.closeFuture.whenComplete { _ in open.leave(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    // A client that sends requests and never reads the answers is not read from while its answers
                    // wait: what it can make the server hold is the socket's buffers, not the process's memory.
                    try channel.pipeline.syncOperations.addHandler(BackPressureHandler())
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withPipeliningAssistance: true,
                        withErrorHandling: true
                    )
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: .nanoseconds(idleTimeout)))
                    try channel.pipeline.syncOperations.addHandler(MetricsRequestHandler(exposition: exposition))
                }
            }
            .childChannelOption(.maxMessagesPerRead, value: 1)
            .bind(host: configuration.host, port: configuration.port)
            .get()
        if let address = channel.localAddress {
            bound.withLock { $0 = address }
            listening.yield(address)
            logger.info("serving metrics", metadata: ["address": "\(address)"])
        }
        listening.finish()
        // Until the group shuts down (or the task is cancelled): then stop taking connections, and close those open.
        try? await gracefulShutdown()
        try? await channel.close()
        for connection in open.all() { try? await connection.close() }
    }
}

/// A metrics server that cannot start: what is wrong.
///
/// Compare errors by ``code``; the ``description`` is for people and may change. An address that cannot be bound is
/// NIO's own error, thrown as it is.
public struct MetricsHTTPServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for why the server cannot start. A struct, not an enum, so that codes can be
    /// added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case invalidConfiguration = "invalid_configuration"
            case stoppedBeforeListening = "stopped_before_listening"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A setting of ``MetricsHTTPServer/Configuration`` cannot work (a port above 65535, no connections
        /// allowed). The `ConfigurationError` naming it is the ``MetricsHTTPServerError/cause``.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The server stopped, without an error of its own, before it listened.
        public static let stoppedBeforeListening = Code(.stoppedBeforeListening)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`invalid_configuration`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// Why the server cannot start.
    public let code: Code
    /// What is wrong, naming the setting where one is to blame: `port must be 0 to 65535, not 70000`.
    public let description: String
    /// The error underneath, when there is one: the `ConfigurationError` of ``Code/invalidConfiguration``. Not
    /// compared or hashed: two errors are the same when their code and description are.
    public let cause: (any Error)?

    /// - Parameters:
    ///   - code: why the server cannot start.
    ///   - description: what is wrong.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, _ description: String, cause: (any Error)? = nil) {
        self.code = code
        self.description = description
        self.cause = cause
    }

    /// The error for a setting that cannot work: its message is the configuration error's, and it is the cause.
    init(configuration error: ConfigurationError) {
        self.init(.invalidConfiguration, error.description, cause: error)
    }

    public static func == (lhs: MetricsHTTPServerError, rhs: MetricsHTTPServerError) -> Bool {
        lhs.code == rhs.code && lhs.description == rhs.description
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(description)
    }
}

/// The open connections, at most `limit`.
private final class OpenConnections: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])
    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    func enter(_ channel: any Channel) -> Bool {
        channels.withLock { channels in
            guard channels.count < limit else { return false }
            channels[ObjectIdentifier(channel)] = channel
            return true
        }
    }

    func leave(_ channel: any Channel) {
        _ = channels.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    func all() -> [any Channel] {
        channels.withLock { Array($0.values) }
    }
}

/// Answers each request head: `GET /metrics` (or HEAD) with the exposition, anything else with 404 or 405. A request
/// with a body is answered 413 and the connection closed.
private final class MetricsRequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let exposition: PrometheusExposition

    init(exposition: PrometheusExposition) {
        self.exposition = exposition
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        let hasBody = head.headers.contains(name: "content-length") && head.headers.first(name: "content-length") != "0"
            || head.headers.contains(name: "transfer-encoding")
        if hasBody {
            respond(context, head, status: .payloadTooLarge, body: Array("A request to the metrics endpoint carries no body.\n".utf8), close: true)
        } else if path != "/metrics" {
            respond(context, head, status: .notFound, body: Array("Only /metrics is here.\n".utf8), close: false)
        } else if head.method != .GET && head.method != .HEAD {
            respond(context, head, status: .methodNotAllowed, body: Array("Use GET.\n".utf8), close: false, allow: true)
        } else {
            respond(context, head, status: .ok, body: exposition.bytes(), close: false)
        }
    }

    /// A request NIO could not parse has been answered 400 by its error handler: the connection goes too.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    private func respond(_ context: ChannelHandlerContext, _ request: HTTPRequestHead, status: HTTPResponseStatus, body: [UInt8], close: Bool, allow: Bool = false) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: status == .ok ? PrometheusExposition.contentType : "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: String(body.count))
        if allow { headers.add(name: "Allow", value: "GET, HEAD") }
        let keepAlive = request.isKeepAlive && !close
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
        if request.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            written.whenComplete { _ in bound.value.close(promise: nil) }
        }
    }
}
