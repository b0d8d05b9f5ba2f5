import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// The front of every HTTP/1.1 connection, right after the request decoder:
///
/// - answers cache hits for `GET /d` and `GET /dns-query` (``CacheHitResponder``), writing the response's bytes
///   itself, so a hit skips the conversions to and from the HTTP types, the response encoder and the router;
/// - hands every other request on, unchanged, to the router's side of the pipeline;
/// - keeps responses in request order on a pipelined connection: while a request handed on has not been answered
///   in full, the ones behind it are handed on too;
/// - answers 408 and closes when a request head whose first bytes have come is not complete within the header
///   timeout (``RequestBytesWatch``, before the decoder, says when bytes come), so a client that starts a request
///   and stops holds its connection for that long, not for the idle timeout;
/// - closes a connection idle for the idle timeout, and quiesces on graceful shutdown (closing at once when no
///   request is in progress, else after the last response), for every request, answered here or by the router.
///   Hummingbird's connection-state handler would see only the requests handed on, so this one replaces it.
///
/// Responses from the router's side are written by ``HTTP1ResponseEncoder``, which tells this handler when one
/// ends.
final class HTTP1FrontHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let responder: any CacheHitAnswering
    private let idleTimeout: TimeAmount
    private let headerTimeout: TimeAmount
    /// Between requests: the next bytes start a request head, and its deadline.
    private var awaitingHead = true
    /// When the head being read started, if one is.
    private var headStarted: NIODeadline?
    /// The timer that checks the head's deadline. It is left to run out rather than cancelled when the head comes,
    /// so a busy connection schedules one every header timeout, not one per request.
    private var headCheck: Scheduled<Void>?
    private var reading = CacheHitReading.idle
    /// Requests read whose response has not been written in full, wherever they are answered.
    private var requestsInProgress = 0
    /// Of those, the ones handed on to the router, in order, with what their responses' framing depends on.
    private var owedByRouter = CircularBuffer<RouterRequest>()
    private var lastActive = NIODeadline.uptimeNanoseconds(0)
    private var idleCheck: Scheduled<Void>?
    private var closeAfterLastResponse = false
    /// A response whose body ends with the connection's close has been written: nothing more is read or answered.
    private var endingWithClose = false
    private var flushPending = false
    private var handedOnDuringRead = false
    private var date = HTTPDate()
    private var hitTimers: RequestMetrics.HitTimers
    private var context: ChannelHandlerContext?

    init(responder: any CacheHitAnswering, idleTimeout: TimeAmount, headerTimeout: TimeAmount) {
        self.responder = responder
        self.idleTimeout = idleTimeout
        self.headerTimeout = min(headerTimeout, idleTimeout)
        hitTimers = RequestMetrics.HitTimers(metrics: responder.requestMetrics)
    }

    // MARK: - Requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !endingWithClose else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            lastActive = context.eventLoop.now
            awaitingHead = false
            headStarted = nil
            requestsInProgress += 1
            if owedByRouter.isEmpty, head.method == .GET, head.isKeepAlive,
                let (reply, route) = responder.reply(toGET: head.uri, channel: context.channel)
            {
                reading = .answering(reply, route: route, started: .now)
            } else {
                owedByRouter.append(RouterRequest(isHEAD: head.method == .HEAD, isHTTP10: head.version == .http1_0))
                reading = .handingOn
                handOn(data, context: context)
            }
        case .body:
            lastActive = context.eventLoop.now
            if case .answering = reading { return }
            handOn(data, context: context)
        case .end:
            lastActive = context.eventLoop.now
            awaitingHead = true
            guard case .answering(let reply, let route, let started) = reading else {
                reading = .idle
                handOn(data, context: context)
                return
            }
            reading = .idle
            write(reply, context: context)
            hitTimers.record(route: route, status: reply.status, since: started)
            responseEnded(context: context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if flushPending {
            flushPending = false
            context.flush()
        }
        // The router's side learns of a read's end only when the read brought it something: its async channel
        // delivers what it has buffered then, and a read of hits alone leaves it nothing to do.
        if handedOnDuringRead {
            handedOnDuringRead = false
            context.fireChannelReadComplete()
        }
    }

    private func handOn(_ data: NIOAny, context: ChannelHandlerContext) {
        handedOnDuringRead = true
        context.fireChannelRead(data)
    }

    /// The whole response in one buffer: the head (``HTTP1ResponseHeadWriter``), then the body. The flush waits for
    /// the end of the read, so answers to pipelined requests leave together.
    private func write(_ reply: Reply, context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: 192 + reply.body.readableBytes)
        HTTP1ResponseHeadWriter.write(ResponseHead(reply), chunked: false, date: date.current(), into: &buffer)
        buffer.writeImmutableBuffer(reply.body)
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: nil)
        flushPending = true
    }

    /// Bytes have come from the client (before the decoder has seen them): if they start a request head, its
    /// deadline starts.
    func requestBytesArrived() {
        guard awaitingHead, headStarted == nil, !endingWithClose, let context else { return }
        let started = context.eventLoop.now
        headStarted = started
        if headCheck == nil { scheduleHeadCheck(context: context, at: started + headerTimeout) }
    }

    private func scheduleHeadCheck(context: ChannelHandlerContext, at deadline: NIODeadline) {
        headCheck = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            headCheck = nil
            guard awaitingHead, let started = headStarted, let context = self.context else { return }
            guard context.eventLoop.now >= started + headerTimeout else {
                // The head this timer was set for came in time; another has started since.
                return scheduleHeadCheck(context: context, at: started + headerTimeout)
            }
            // Nothing more is read or answered.
            endingWithClose = true
            guard requestsInProgress == 0 else {
                // A response to an earlier request is still being written: it is finished first, then the close.
                closeAfterLastResponse = true
                return
            }
            // Nothing else is being written: the client is told why.
            var buffer = context.channel.allocator.buffer(capacity: 96)
            buffer.writeString("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
            context.writeAndFlush(wrapOutboundOut(.byteBuffer(buffer)), promise: nil)
            context.close(promise: nil)
        }
    }

    // MARK: - Responses, idleness and shutdown

    /// Whether the router's response being written answers a HEAD request.
    var routerRespondsToHEAD: Bool { owedByRouter.first?.isHEAD ?? false }

    /// Whether the router's response being written answers an HTTP/1.0 request, which cannot take a chunked body.
    var routerRespondsToHTTP10: Bool { owedByRouter.first?.isHTTP10 ?? false }

    /// Called by ``HTTP1ResponseEncoder`` when the router's response ends with the connection's close (a body of
    /// unknown length to an HTTP/1.0 client): requests read after it are neither answered nor handed on.
    func endWithClose() {
        endingWithClose = true
    }

    /// Called by ``HTTP1ResponseEncoder`` once the end of the router's response to a request handed on has
    /// been written.
    func routerResponseEnded() {
        // A parse error is answered without a request having been read: nothing is owed then.
        _ = owedByRouter.popFirst()
        if let context { responseEnded(context: context) }
    }

    /// With no request left in progress: the connection closes if a graceful shutdown waits for it, else it is
    /// idle from now.
    private func responseEnded(context: ChannelHandlerContext) {
        requestsInProgress = max(0, requestsInProgress - 1)
        guard requestsInProgress == 0 else { return }
        if closeAfterLastResponse {
            context.flush()
            context.close(promise: nil)
            return
        }
        lastActive = context.eventLoop.now
        scheduleIdleCheck(context: context, at: lastActive + idleTimeout)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            afterAnswersSent(context: context) { context.fireUserInboundEventTriggered(event) }
            return
        }
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        if requestsInProgress == 0 {
            context.close(promise: nil)
        } else {
            closeAfterLastResponse = true
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if case .uncleanShutdown = error as? NIOSSLError {
            // A FIN without TLS's close_notify: the end of input, as above.
            afterAnswersSent(context: context) { context.fireErrorCaught(error) }
            return
        }
        context.fireErrorCaught(error)
    }

    /// The router's side closes the connection when its input ends, which would drop answers written here and not
    /// yet sent: `then` runs once they are.
    private func afterAnswersSent(context: ChannelHandlerContext, then: @escaping () -> Void) {
        let sent = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(context.channel.allocator.buffer(capacity: 0))), promise: sent)
        sent.futureResult.assumeIsolated().whenComplete { _ in then() }
    }

    private func scheduleIdleCheck(context: ChannelHandlerContext, at deadline: NIODeadline) {
        guard idleCheck == nil else { return }
        idleCheck = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            idleCheck = nil
            // A response still being worked on is not idleness; its end schedules the next check.
            if requestsInProgress > 0 && !isReadingRequest { return }
            let idleUntil = lastActive + idleTimeout
            if context.eventLoop.now >= idleUntil {
                context.close(promise: nil)
            } else {
                scheduleIdleCheck(context: context, at: idleUntil)
            }
        }
    }

    private var isReadingRequest: Bool {
        if case .idle = reading { false } else { true }
    }

    // MARK: - Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { becameActive(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        becameActive(context: context)
        context.fireChannelActive()
    }

    private func becameActive(context: ChannelHandlerContext) {
        lastActive = context.eventLoop.now
        scheduleIdleCheck(context: context, at: lastActive + idleTimeout)
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
        headCheck?.cancel()
        headCheck = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
        headCheck?.cancel()
        headCheck = nil
        self.context = nil
    }
}

/// A request handed on to the router, as its response must be written.
struct RouterRequest {
    var isHEAD: Bool
    var isHTTP10: Bool
}

/// Where the request being read is going, in ``HTTP1FrontHandler``.
enum CacheHitReading {
    case idle
    /// The request is the router's: its parts go on.
    case handingOn
    /// The request is answered here once its end has been read; its body, if any, is dropped.
    case answering(Reply, route: String, started: ContinuousClock.Instant)
}

/// Before the request decoder: tells ``HTTP1FrontHandler`` when bytes come, so that it can time a request head from
/// its first byte.
final class RequestBytesWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let front: HTTP1FrontHandler

    init(front: HTTP1FrontHandler) {
        self.front = front
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Line breaks between requests (RFC 9112 §2.2 lets a client send them) start no request.
        let bytes = unwrapInboundIn(data)
        if bytes.readableBytesView.contains(where: { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }) {
            front.requestBytesArrived()
        }
        context.fireChannelRead(data)
    }
}
