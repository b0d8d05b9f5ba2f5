import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOSSL
import NIOTLS

/// TLS connections offering ALPN `h2` and `http/1.1`, negotiated as Hummingbird's `HTTP2UpgradeChannel` does:
/// HTTP/1.1 as on plain connections (``ServiceHTTP1Channel``), HTTP/2 with ``HTTP2ServerConnection``.
public struct ServiceTLSChannel: HTTPChannelHandler {
    /// What ALPN chose, with the connection set up for it.
    public enum NegotiatedProtocol: Sendable {
        case http1(ServiceHTTP1Channel.Value)
        /// The connection, and a future that succeeds once it has closed and its router tasks have ended.
        case http2(any Channel, settled: EventLoopFuture<Void>)
    }

    public struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<NegotiatedProtocol>
        public let channel: any Channel
    }

    private let sslContext: NIOSSLContext
    private let http1: ServiceHTTP1Channel
    private let http2: HTTP2ServerConnection.Setup
    private let handshakeTimeout: TimeAmount

    public var responder: HTTPChannelHandler.Responder { http1.responder }

    /// The server's TLS context, offering `h2` and `http/1.1`.
    public static func makeSSLContext(_ tlsConfiguration: TLSConfiguration) throws -> NIOSSLContext {
        var tlsConfiguration = tlsConfiguration
        tlsConfiguration.applicationProtocols = ["h2", "http/1.1"]
        return try NIOSSLContext(configuration: tlsConfiguration)
    }

    public init(
        sslContext: NIOSSLContext,
        responder: @escaping HTTPChannelHandler.Responder,
        cacheHits: any CacheHitAnswering,
        router: any RouterResponding,
        idleTimeout: Duration,
        headerTimeout: Duration = .seconds(10),
        bodyBudget: RequestBudget = RequestBudget(bodyBytes: 16 << 20, streams: 5_000)
    ) {
        self.sslContext = sslContext
        http1 = ServiceHTTP1Channel(responder: responder, cacheHits: cacheHits, idleTimeout: idleTimeout, headerTimeout: headerTimeout)
        http2 = HTTP2ServerConnection.Setup(
            cacheHits: cacheHits,
            router: router,
            idleTimeout: idleTimeout,
            headerTimeout: headerTimeout,
            bodyBudget: bodyBudget
        )
        // The handshake is the start of the first request: it has the header timeout.
        handshakeTimeout = TimeAmount(min(headerTimeout, idleTimeout))
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try ConnectionReads.configure(channel)
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
            let watch = HandshakeWatch(timeout: handshakeTimeout)
            try channel.pipeline.syncOperations.addHandler(watch)
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<NegotiatedProtocol> {
                result in
                watch.chooseProtocol()
                switch result {
                case .negotiated("h2"):
                    return channel.eventLoop.makeCompletedFuture {
                        let settled = try http2.configure(channel)
                        watch.replay(on: channel)
                        return .http2(channel, settled: settled)
                    }
                case .negotiated("http/1.1"), .fallback:
                    return channel.eventLoop.makeCompletedFuture {
                        let value = try http1.setUpHTTP1(on: channel)
                        watch.replay(on: channel)
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

    public func handle(value: Value, logger: Logger) async {
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
