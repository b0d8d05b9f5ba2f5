import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOSSL
import NIOTLS

/// HTTP/1.1 connections: Hummingbird's `HTTP1Channel` with ``HTTP1FrontHandler`` right after the request
/// decoder, where it answers cache hits and keeps the connection's state (idle timeout, graceful shutdown) for
/// every request.
struct ServiceHTTP1Channel: HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let cacheHits: CacheHitResponder
    let idleTimeout: Duration

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try Self.configure(channel.pipeline.syncOperations, cacheHits: cacheHits, idleTimeout: idleTimeout)
            return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    /// Request decoder, front, response encoder, the observer of the router's responses, and the conversion to
    /// and from the HTTP types that the router's side reads and writes. Unlike `configureHTTPServerPipeline`, the
    /// decoder does not tell the encoder each request's method; the front and the observer drop the body of a
    /// response to HEAD instead.
    static func configure(_ pipeline: ChannelPipeline.SynchronousOperations, cacheHits: CacheHitResponder, idleTimeout: Duration) throws {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldCount = 1000  // Hummingbird's default
        let front = HTTP1FrontHandler(responder: cacheHits, idleTimeout: TimeAmount(idleTimeout))
        // Reads wait while the socket cannot take more: hits are answered as they are read.
        try pipeline.addHandler(BackPressureHandler())
        try pipeline.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes, limitConfiguration: limits)))
        try pipeline.addHandler(front)
        try pipeline.addHandler(HTTPResponseEncoder(configuration: .init()))
        try pipeline.addHandler(RouterResponseObserver(front: front))
        try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
    }

    func handle(value asyncChannel: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}

/// TLS connections offering ALPN `h2` and `http/1.1`, negotiated as Hummingbird's `HTTP2UpgradeChannel` does:
/// HTTP/1.1 as on plain connections (``ServiceHTTP1Channel``), HTTP/2 with ``HTTP2ServerConnection``.
struct ServiceTLSChannel: HTTPChannelHandler {
    /// What ALPN chose, with the connection set up for it.
    enum NegotiatedProtocol: Sendable {
        case http1(ServiceHTTP1Channel.Value)
        /// The connection, and a future that succeeds once it has closed and its router tasks have ended.
        case http2(any Channel, settled: EventLoopFuture<Void>)
    }

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<NegotiatedProtocol>
        let channel: any Channel
    }

    private let sslContext: NIOSSLContext
    private let http1: ServiceHTTP1Channel
    private let http2: HTTP2ServerConnection.Setup

    var responder: HTTPChannelHandler.Responder { http1.responder }

    /// The server's TLS context, offering `h2` and `http/1.1`.
    static func makeSSLContext(_ tlsConfiguration: TLSConfiguration) throws -> NIOSSLContext {
        var tlsConfiguration = tlsConfiguration
        tlsConfiguration.applicationProtocols = ["h2", "http/1.1"]
        return try NIOSSLContext(configuration: tlsConfiguration)
    }

    init(
        sslContext: NIOSSLContext,
        responder: @escaping HTTPChannelHandler.Responder,
        cacheHits: CacheHitResponder,
        router: RouterBridge,
        idleTimeout: Duration
    ) {
        self.sslContext = sslContext
        http1 = ServiceHTTP1Channel(responder: responder, cacheHits: cacheHits, idleTimeout: idleTimeout)
        http2 = HTTP2ServerConnection.Setup(cacheHits: cacheHits, router: router, idleTimeout: idleTimeout)
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
            let latch = QuiesceLatch()
            try channel.pipeline.syncOperations.addHandler(latch)
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<NegotiatedProtocol> {
                result in
                switch result {
                case .negotiated("h2"):
                    return channel.eventLoop.makeCompletedFuture {
                        let settled = try http2.configure(channel)
                        latch.replay(on: channel)
                        return .http2(channel, settled: settled)
                    }
                case .negotiated("http/1.1"), .fallback:
                    let latch = NIOLoopBound(latch, eventLoop: channel.eventLoop)
                    return http1.setup(channel: channel, logger: logger).map { value in
                        latch.value.replay(on: channel)
                        return .http1(value)
                    }
                case .negotiated:
                    // Only h2 and http/1.1 are offered, so anything else is a broken client.
                    return channel.close().flatMap { channel.eventLoop.makeFailedFuture(UnexpectedALPNProtocol()) }
                }
            }
            try channel.pipeline.syncOperations.addHandler(negotiation)
            return Value(negotiated: negotiation.protocolNegotiationResult, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http1(let http1Channel): await http1.handle(value: http1Channel, logger: logger)
            case .http2(let connection, let settled):
                // The streams are answered on the event loop, or in tasks of their own; this waits for the end of
                // the connection and of every task it started.
                try await withTaskCancellationHandler {
                    try await settled.get()
                } onCancel: {
                    connection.close(promise: nil)
                }
            }
        } catch {
            logger.debug("TLS or protocol negotiation failed: \(error)")
        }
    }
}

/// TLS negotiated an application protocol the server did not offer.
struct UnexpectedALPNProtocol: Error {}

/// Remembers a graceful shutdown asked for while TLS and ALPN are still setting the connection up, when no
/// protocol handler is there yet to hear it (the event would reach the end of the pipeline and be lost, and the
/// connection would outlive the shutdown). Once the protocol's handlers are in place, ``replay(on:)`` tells them.
final class QuiesceLatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private(set) var quiesced = false

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent { quiesced = true }
        context.fireUserInboundEventTriggered(event)
    }

    /// Fires the shutdown again, for handlers added after it arrived. On the channel's event loop.
    func replay(on channel: any Channel) {
        guard quiesced else { return }
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
    }
}
