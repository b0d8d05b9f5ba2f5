import HTTPTypes
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
public struct ServiceHTTP1Channel: HTTPChannelHandler {
    public typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    public let responder: HTTPChannelHandler.Responder
    let cacheHits: any CacheHitAnswering
    let idleTimeout: Duration
    let headerTimeout: Duration

    public init(
        responder: @escaping HTTPChannelHandler.Responder,
        cacheHits: any CacheHitAnswering,
        idleTimeout: Duration,
        headerTimeout: Duration = .seconds(10)
    ) {
        self.responder = responder
        self.cacheHits = cacheHits
        self.idleTimeout = idleTimeout
        self.headerTimeout = headerTimeout
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try ConnectionReads.configure(channel)
            return try setUpHTTP1(on: channel)
        }
    }

    /// The HTTP/1.1 pipeline on a connection whose reads are already configured: a plain one, or a TLS one after
    /// ALPN chose `http/1.1` (``ServiceTLSChannel``).
    func setUpHTTP1(on channel: any Channel) throws -> Value {
        try Self.configure(channel.pipeline.syncOperations, cacheHits: cacheHits, idleTimeout: idleTimeout, headerTimeout: headerTimeout)
        return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
    }

    /// Request decoder, front, the encoder of the router's responses, and the conversion to and from the HTTP types
    /// that the router's side reads and writes. The front tells the encoder which requests were HEAD.
    static func configure(
        _ pipeline: ChannelPipeline.SynchronousOperations,
        cacheHits: any CacheHitAnswering,
        idleTimeout: Duration,
        headerTimeout: Duration
    ) throws {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldCount = 1000  // Hummingbird's default
        let front = HTTP1FrontHandler(responder: cacheHits, idleTimeout: TimeAmount(idleTimeout), headerTimeout: TimeAmount(headerTimeout))
        // Reads wait while the socket cannot take more: hits are answered as they are read.
        try pipeline.addHandler(BackPressureHandler())
        try pipeline.addHandler(RequestBytesWatch(front: front))
        try pipeline.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes, limitConfiguration: limits)))
        try pipeline.addHandler(front)
        try pipeline.addHandler(HTTP1ResponseEncoder(front: front))
        try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
    }

    public func handle(value asyncChannel: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}
