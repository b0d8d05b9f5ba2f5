import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP2
import NIOSSL

#if canImport(Glibc)
    import Glibc
#endif

/// HTTP/2 connections, set up without an async channel and a task per stream.
///
/// Hummingbird's HTTP/2 channel wraps every stream in a `NIOAsyncChannel` and runs a task for it, which is most of
/// a DoH cache hit's cost even when the hit is answered on the event loop. Here each stream's pipeline is the
/// HTTP conversion, a ``CacheHitHandler`` and a ``RouterStreamHandler``: a hit never leaves the event loop, and only
/// a request the cache cannot answer starts a task, to go through the router. ``HTTP2ConnectionManager`` keeps the
/// idle timeout and the graceful shutdown (GOAWAY) that Hummingbird's channel would have kept.
struct ServiceHTTP2Connection: Sendable {
    let cacheHits: CacheHitResponder
    let router: RouterBridge
    let idleTimeout: Duration

    /// Adds the HTTP/2 handler, its stream multiplexer and the connection manager to a negotiated connection.
    func configure(_ channel: any Channel) throws {
        let manager = HTTP2ConnectionManager(idleTimeout: TimeAmount(idleTimeout), eventLoop: channel.eventLoop)
        let (cacheHits, router, idleTimeout) = (cacheHits, router, idleTimeout)
        // Reads wait while the socket cannot take more: hits are answered as they are read.
        try channel.pipeline.syncOperations.addHandler(BackPressureHandler())
        _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
            mode: .server,
            connectionConfiguration: .init(),
            streamConfiguration: .init(),
            streamDelegate: manager.streamDelegate
        ) { stream in
            stream.eventLoop.makeCompletedFuture {
                let pipeline = stream.pipeline.syncOperations
                try pipeline.addHandler(HTTP2FramePayloadToHTTPServerCodec())
                try pipeline.addHandler(StreamDeadline(lifetime: TimeAmount(idleTimeout)))
                try pipeline.addHandler(CacheHitHandler(responder: cacheHits))
                try pipeline.addHandler(RouterStreamHandler(router: router))
            }
        }
        try channel.pipeline.syncOperations.addHandler(manager)
    }
}

/// The router, reached from an HTTP/2 stream without Hummingbird's per-stream async channel: it answers as
/// Hummingbird's application would (request id in the log metadata, errors turned into their responses, a `Date`
/// header).
struct RouterBridge: Sendable {
    let responder: RouterResponder<HTTPDNSRequestContext>
    let logger: Logger
    /// The largest request body a route reads (a DoH POST); one byte more is kept, so the route can refuse it.
    let maxBodyBytes: Int

    func answer(_ request: Request, on stream: any Channel) async {
        var logger = self.logger
        logger[metadataKey: "hb.request.id"] = "\(RequestID())"
        let context = HTTPDNSRequestContext(source: ApplicationRequestContextSource(channel: stream, logger: logger))
        var response: Response
        do {
            response = try await responder.respond(to: request, context: context)
        } catch {
            logger.debug("unanswered error", metadata: ["error.type": "\(error)"])
            response = Response(status: .internalServerError)
        }
        response.headers[.date] = HTTPDate.format(time(nil))
        stream.write(HTTPResponsePart.head(response.head), promise: nil)
        do {
            try await response.body.write(StreamBodyWriter(stream: stream))
        } catch {
            // The client reset the stream, or the connection went away: nobody is left to answer.
            logger.debug("response not written", metadata: ["error.type": "\(error)"])
        }
    }

    private struct StreamBodyWriter: ResponseBodyWriter {
        let stream: any Channel

        mutating func write(_ buffer: ByteBuffer) async throws {
            try await stream.writeAndFlush(HTTPResponsePart.body(buffer))
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
            try await stream.writeAndFlush(HTTPResponsePart.end(trailingHeaders))
        }
    }
}

/// The last handler of an HTTP/2 stream: collects a request that ``CacheHitHandler`` handed on and answers it
/// through the router, in a task that ends with the stream. A body past the largest a route reads is answered at
/// once (the route refuses it) and the stream is reset, so the client stops sending it.
final class RouterStreamHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart

    private let router: RouterBridge
    private var head: HTTPRequest?
    private var body = ByteBuffer()
    private var answering: Task<Void, Never>?
    private var requestEnded = false

    init(router: RouterBridge) {
        self.router = router
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
        case .body(var part):
            guard answering == nil else { return }
            let room = router.maxBodyBytes + 1 - body.readableBytes
            if let kept = part.readSlice(length: min(room, part.readableBytes)) {
                body.writeImmutableBuffer(kept)
            }
            if body.readableBytes > router.maxBodyBytes { answer(context: context) }
        case .end:
            requestEnded = true
            if answering == nil { answer(context: context) }
        }
    }

    private func answer(context: ChannelHandlerContext) {
        guard let head else { return }
        let request = Request(head: head, body: RequestBody(buffer: body))
        let (router, stream) = (router, context.channel)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        answering = Task {
            await router.answer(request, on: stream)
            stream.eventLoop.execute {
                // Answered before the client finished sending: end the stream rather than read the rest.
                if !handler.value.requestEnded { resetWithoutError(stream) }
            }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // The stream is gone (reset by the client, or its connection closed): nobody is left to answer.
        answering?.cancel()
    }
}

/// RST_STREAM with NO_ERROR, as RFC 9113 §8.1 asks after a complete response to an unfinished request. On the
/// stream's event loop.
private func resetWithoutError(_ stream: any Channel) {
    guard let codec = try? stream.pipeline.syncOperations.context(handlerType: HTTP2FramePayloadToHTTPServerCodec.self) else {
        stream.close(promise: nil)
        return
    }
    codec.writeAndFlush(NIOAny(HTTP2Frame.FramePayload.rstStream(.noError)), promise: nil)
}

/// Resets an HTTP/2 stream still open after `lifetime`, whether its request never ended or its answer cannot be
/// sent (a client withholding flow-control credit): streams, and the connection holding them, end in bounded
/// time. Answers take at most the upstream's timeout, far below the default lifetime (the idle timeout, 60 s).
final class StreamDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let lifetime: TimeAmount
    private var deadline: Scheduled<Void>?

    init(lifetime: TimeAmount) {
        self.lifetime = lifetime
    }

    func handlerAdded(context: ChannelHandlerContext) {
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: lifetime) {
            context.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }
}

/// Keeps an HTTP/2 connection's state: closes it once it has had no open stream for the idle timeout, and on
/// graceful shutdown sends GOAWAY, refusing new streams, and closes once the open ones have finished.
final class HTTP2ConnectionManager: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let idleTimeout: TimeAmount
    private let eventLoop: any EventLoop
    private var openStreams = 0
    private var lastStreamID = HTTP2StreamID.rootStream
    private var quiescing = false
    private var idleClose: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    init(idleTimeout: TimeAmount, eventLoop: any EventLoop) {
        self.idleTimeout = idleTimeout
        self.eventLoop = eventLoop
    }

    /// What the HTTP/2 handler tells of streams opening and closing, on the connection's event loop.
    var streamDelegate: some NIOHTTP2StreamDelegate { Delegate(manager: NIOLoopBound(self, eventLoop: eventLoop)) }

    private struct Delegate: NIOHTTP2StreamDelegate {
        let manager: NIOLoopBound<HTTP2ConnectionManager>

        func streamCreated(_ id: HTTP2StreamID, channel: any Channel) {
            manager.value.streamCreated(id)
        }

        func streamClosed(_ id: HTTP2StreamID, channel: any Channel) {
            manager.value.streamClosed()
        }
    }

    private func streamCreated(_ id: HTTP2StreamID) {
        openStreams += 1
        lastStreamID = max(lastStreamID, id)
        guard !quiescing else { return }  // the drain's deadline stands
        idleClose?.cancel()
        idleClose = nil
    }

    private func streamClosed() {
        openStreams -= 1
        guard openStreams == 0, let context else { return }
        if quiescing {
            context.close(promise: nil)
        } else {
            scheduleIdleClose(context: context)
        }
    }

    private func scheduleIdleClose(context: ChannelHandlerContext) {
        idleClose?.cancel()
        idleClose = context.eventLoop.assumeIsolated().scheduleTask(in: idleTimeout) { [self] in
            // GOAWAY first, so a client whose request crossed the close knows it was not answered.
            sendGoAway(context: context)
            context.close(promise: nil)
        }
    }

    private func sendGoAway(context: ChannelHandlerContext) {
        let goAway = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: nil))
        context.writeAndFlush(wrapOutboundOut(goAway), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case is NIOHTTP2Errors.StreamError:
            // A stream the client opened after our GOAWAY, refused by the HTTP/2 handler: the others go on. (Other
            // errors on one stream reach here unwrapped, indistinguishable from connection errors, and close the
            // connection, as Hummingbird's handler did.)
            break
        case NIOSSLError.uncleanShutdown:
            // A FIN without TLS's close_notify: nothing more can arrive.
            drain(context: context)
        default:
            // A connection error (the HTTP/2 handler has sent GOAWAY), or TLS failing.
            context.close(promise: nil)
        }
    }

    /// GOAWAY, then close once the open streams have been answered, or after the idle timeout at the latest (a
    /// client that stops reading can keep even the resets of its streams from being sent).
    private func drain(context: ChannelHandlerContext) {
        guard !quiescing else { return }
        quiescing = true
        // Streams up to the last one opened are answered; the client retries later ones on a new connection.
        sendGoAway(context: context)
        if openStreams == 0 {
            context.close(promise: nil)
        } else {
            idleClose?.cancel()
            idleClose = context.eventLoop.assumeIsolated().scheduleTask(in: idleTimeout) { context.close(promise: nil) }
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { scheduleIdleClose(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleClose?.cancel()
        idleClose = nil
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        scheduleIdleClose(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleClose?.cancel()
        idleClose = nil
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case ChannelEvent.inputClosed:
            // The client has closed its side: answer what it asked, then close.
            drain(context: context)
        case is ChannelShouldQuiesceEvent:
            drain(context: context)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }
}
