import HTTPDNSCore
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// What can go wrong on an HTTP/2 connection of ``HTTP2ServiceConnection`` besides TLS itself; ``ServiceClient`` turns
/// each into a `ResolutionError`.
enum HTTP2TransportError: Error, CustomStringConvertible {
    /// The connection closed with the request unanswered. `reused` says whether the request went out on a connection
    /// that had already answered others (which a server may close as idle at any moment).
    case closed(reused: Bool)
    /// The server did not process the request: a GOAWAY whose last stream is before it, REFUSED_STREAM, or a
    /// connection that went away (a GOAWAY, a close) while the HTTP/2 handler still held its HEADERS back. It may be
    /// sent again.
    case unprocessed
    /// The answer was not complete by the request's deadline.
    case timedOut
    /// More requests were in flight on the connection than it takes; the request was never sent.
    case overloaded(limit: Int)
    /// The server reset the stream.
    case reset(HTTP2ErrorCode)
    /// The answer's body was larger than the client reads.
    case tooLarge(limit: Int)
    /// The response could not be read as HTTP (no `:status`, say).
    case malformedResponse(String)
    /// TLS negotiated no HTTP/2 (ALPN): the server speaks HTTP/1.1 only, or no ALPN at all.
    case notHTTP2(negotiated: String?)
    /// The connection closed during the TLS handshake: the peer is not a TLS server, or went away.
    case closedDuringHandshake

    var description: String {
        switch self {
        case .closed: "the connection closed before the answer came"
        case .unprocessed: "the server did not process the request"
        case .timedOut: "no answer came in time"
        case .overloaded(let limit): "\(limit) requests are in flight on the connection already"
        case .reset(let code): "the server reset the stream (\(code))"
        case .tooLarge(let limit): "the answer is larger than \(limit) bytes"
        case .malformedResponse(let reason): "the response could not be read: \(reason)"
        case .notHTTP2(let negotiated): "TLS negotiated \(negotiated.map { "'\($0)'" } ?? "no application protocol"), not HTTP/2"
        case .closedDuringHandshake: "the connection closed during the TLS handshake"
        }
    }
}

/// One request of ``HTTP2ServiceConnection``.
struct HTTP2ServiceRequest: Sendable {
    var method: HTTPMethod
    /// `:path`: the endpoint's path and the target.
    var path: String
    var authority: String
    /// Headers besides the pseudo-headers (lower-case names).
    var headers: [(String, String)]
    var body: [UInt8]?
}

/// One answer of ``HTTP2ServiceConnection``: its status and its whole body.
struct HTTP2ServiceResponse: Sendable {
    var status: HTTPResponseStatus
    var body: ByteBuffer
}

/// One HTTP/2 connection over TLS to an address of a service, with every request a stream of it and nothing more:
/// no channel or pipeline per request, and the requests of one tick of the event loop flushed together.
///
/// ``connect(to:settings:eventLoopGroup:deadline:)`` succeeds only once TLS is up, ALPN chose `h2`, and the
/// certificate passed every check: NIOSSL's verification (the chain, and the server name, or without one the address),
/// then, with a server name, that the certificate holds it as a DNS name (NIOSSL also accepts a certificate whose IP
/// SAN is the address connected to, whatever name was asked), and the SPKI pins when there are any. No request is
/// written before that, so a refused certificate never sees one.
final class HTTP2ServiceConnection: SlotConnection {
    /// What every connection of one client shares.
    struct Settings: Sendable {
        /// TLS with ALPN offering `h2` first.
        let tls: NIOSSLContext
        /// The name the certificate must hold and the SNI; nil: the certificate must hold the address.
        let serverName: String?
        let pins: Set<SPKIPin>
        /// The largest body read; a larger one resets its stream and fails its request.
        let maxAnswerBytes: Int
        /// Requests in flight at once on one connection; more fail at once. Those beyond the server's
        /// `SETTINGS_MAX_CONCURRENT_STREAMS` wait inside the HTTP/2 handler for a stream to close.
        let maxStreams: Int
        /// How long a connection with nothing in flight stays open.
        let idleTimeout: TimeAmount
        /// How long a request that times out must have been out, with nothing read since, for the connection to be
        /// given up with it. A request sent shortly before its deadline times out for want of time, not for a silent
        /// server.
        let silenceToGiveUp: TimeAmount
    }

    let channel: any Channel
    private let handler: NIOLoopBound<HTTP2RequestHandler>
    private let closing: ClosingFlag

    private init(channel: any Channel, handler: HTTP2RequestHandler) {
        self.channel = channel
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        closing = handler.closing
    }

    /// Whether requests can still go out on the connection: it is open, and neither closing nor told to go away.
    var isActive: Bool { channel.isActive && !closing.isSet }

    /// Connects to `endpoint`, TLS, ALPN and every certificate check included, by `deadline`.
    static func connect(
        to endpoint: ServiceEndpoint,
        settings: Settings,
        eventLoopGroup: any EventLoopGroup,
        deadline: NIODeadline
    ) -> EventLoopFuture<HTTP2ServiceConnection> {
        open(
            to: endpoint.address,
            port: endpoint.port,
            on: eventLoopGroup.next(),
            deadline: deadline,
            timedOut: HTTP2TransportError.timedOut,
            pipeline: { channel, ready in
                let tls = try NIOSSLClientHandler(context: settings.tls, serverHostname: settings.serverName)
                try channel.pipeline.syncOperations.addHandlers([tls, HTTP2HandshakeHandler(settings: settings, ready: ready)])
            },
            connection: { channel in
                HTTP2ServiceConnection(channel: channel, handler: try channel.pipeline.syncOperations.handler(type: HTTP2RequestHandler.self))
            }
        )
    }

    /// Sends `request` on a stream of its own and returns the whole answer, or fails by `deadline`. The returned
    /// promise may be failed by the caller (a cancelled task): the answer, when it comes, is then dropped.
    func send(_ request: HTTP2ServiceRequest, deadline: NIODeadline) -> EventLoopPromise<HTTP2ServiceResponse> {
        let promise = channel.eventLoop.makePromise(of: HTTP2ServiceResponse.self)
        if channel.eventLoop.inEventLoop {
            handler.value.submit(request, deadline: deadline, promise: promise)
        } else {
            channel.eventLoop.execute { [handler] in handler.value.submit(request, deadline: deadline, promise: promise) }
        }
        return promise
    }

    /// Stops taking requests, and closes once those in flight have ended or at `deadline`, whichever is first.
    func retire(closingBy deadline: NIODeadline) {
        channel.eventLoop.execute { [handler] in handler.value.retire(closingBy: deadline) }
    }

    /// Closes the connection; requests in flight fail.
    func close() {
        channel.close(promise: nil)
    }
}

/// The connection until TLS is up: then it checks what NIOSSL does not, and on success puts HTTP/2 and the request
/// handler in its place; a connection that fails is closed, and whatever the peer sent is dropped unread.
final class HTTP2HandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let settings: HTTP2ServiceConnection.Settings
    private var ready: EventLoopPromise<Void>?

    init(settings: HTTP2ServiceConnection.Settings, ready: EventLoopPromise<Void>) {
        self.settings = settings
        self.ready = ready
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let tls = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = tls, let ready {
            self.ready = nil
            do {
                guard negotiated == "h2" else { throw HTTP2TransportError.notHTTP2(negotiated: negotiated) }
                try checkCertificate(context: context)
                let (http2, requests) = HTTP2RequestHandler.handlers(settings: settings)
                try context.pipeline.syncOperations.addHandler(http2, position: .after(self))
                try context.pipeline.syncOperations.addHandler(requests, position: .after(http2))
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                ready.succeed()
            } catch {
                ready.fail(error)
                context.close(promise: nil)
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// What NIOSSL does not check: with a server name, that the certificate holds it as a DNS name; the pins.
    private func checkCertificate(context: ChannelHandlerContext) throws {
        guard settings.serverName != nil || !settings.pins.isEmpty else { return }
        let tls = try context.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)
        try PeerCertificateCheck.verify(tls.peerCertificate, serverName: settings.serverName, pins: settings.pins)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Only before the checks passed, or after they failed: nothing the peer sends then is read.
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // During the handshake: the connection's own failure (a certificate, a peer that is not TLS).
        if let ready {
            self.ready = nil
            ready.fail(error)
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failReady()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // Removed unchecked (the pipeline torn down): the connect must not wait on a promise no one completes.
        failReady()
    }

    private func failReady() {
        if let ready {
            self.ready = nil
            ready.fail(HTTP2TransportError.closedDuringHandshake)
        }
    }
}

/// The requests of one HTTP/2 connection whose checks passed, on its event loop: stream IDs, the frames of each
/// request, each answer's status and body, deadlines, GOAWAY, the connection's flow-control window and the idle close.
final class HTTP2RequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct Stream {
        let promise: EventLoopPromise<HTTP2ServiceResponse>
        let timeout: Scheduled<Void>
        var status: HTTPResponseStatus?
        var body: ByteBuffer?
        /// Whether it went out on a connection that had answered before.
        let reused: Bool
        /// How many frames the connection had read when the request was written.
        let framesReadBefore: Int
        /// When it was written.
        let sentAt: NIODeadline
        /// Whether its HEADERS went out. Until then the HTTP/2 handler holds them back, while the server's stream limit
        /// is reached or the channel is not writable, and the server has not seen the stream.
        var opened = false
    }

    /// Our stream window: every answer the client reads fits, so no stream needs a WINDOW_UPDATE.
    static let streamWindow = 1 << 17
    /// The connection window, raised at the start and topped up whenever less than half of it is left (DATA the
    /// HTTP/2 handler drops, for a stream already reset, counts as well).
    static let connectionWindow = 1 << 24

    /// The HTTP/2 handler of a connection whose checks passed, and this handler after it, which it tells of the
    /// frames it writes.
    static func handlers(settings: HTTP2ServiceConnection.Settings) -> (NIOHTTP2Handler, HTTP2RequestHandler) {
        let requests = HTTP2RequestHandler(settings: settings)
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = [
            HTTP2Setting(parameter: .enablePush, value: 0),
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 0),
            HTTP2Setting(parameter: .initialWindowSize, value: streamWindow),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 16 * 1024),
        ]
        let http2 = NIOHTTP2Handler(mode: .client, frameDelegate: requests, connectionConfiguration: connection, streamConfiguration: .init())
        return (http2, requests)
    }

    private let settings: HTTP2ServiceConnection.Settings
    private var context: ChannelHandlerContext?
    private var streams: [HTTP2StreamID: Stream] = [:]
    private var nextStreamID = HTTP2StreamID(1)
    private var answered = 0
    /// Every frame read: a sign the server is still there.
    private var framesRead = 0
    /// Set when the HTTP/2 handler wrote a GOAWAY: it does so for a connection error only (this handler never sends
    /// one), so the error it reports next ends the connection; any other error of the HTTP/2 handler is one
    /// stream's, which it has reset.
    private var connectionFailed = false
    private var idleClose: Scheduled<Void>?
    private var flushScheduled = false
    /// Set while a WINDOW_UPDATE of the connection is written but not yet sent (the HTTP/2 handler holds control frames
    /// back while the channel is not writable): until it is, the window it reports does not count it, and another
    /// top-up would give the same room twice.
    private var windowUpdatePending = false
    /// The top-up's write, until it completes. Failed at the close if still pending: the HTTP/2 handler drops a
    /// frame's promise uncompleted when it refuses it for flooding its control-frame buffer (and then closes).
    private var topUpWritten: EventLoopPromise<Void>?
    /// Whether the connection closes once nothing is in flight (a GOAWAY, a network change).
    private var draining = false
    /// Whether the connection takes no more requests; shared with ``HTTP2ServiceConnection/isActive``.
    let closing = ClosingFlag()
    private var closed: Bool {
        get { closing.isSet }
        set { if newValue { closing.set() } }
    }

    init(settings: HTTP2ServiceConnection.Settings) {
        self.settings = settings
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // HTTP/2, just before this handler, has written its preface: the connection window goes up at once.
        let raise = HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: Self.connectionWindow - 65_535))
        context.writeAndFlush(wrapOutboundOut(raise), promise: nil)
        scheduleIdleClose()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? NIOHTTP2WindowUpdatedEvent, event.streamID == .rootStream, let left = event.inboundWindowSize,
            left < Self.connectionWindow / 2, !windowUpdatePending, !closed || !streams.isEmpty
        {
            windowUpdatePending = true
            let update = HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: Self.connectionWindow - left))
            // Refused (by the HTTP/2 handler, or a channel already closing), the top-up never comes and the connection
            // would stall once its window runs out: it closes instead, and what is in flight fails as closed.
            let written = context.eventLoop.makePromise(of: Void.self)
            topUpWritten = written
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            written.futureResult.whenComplete { result in
                let handler = bound.value
                handler.topUpWritten = nil
                guard case .failure = result else { return }
                handler.windowUpdatePending = false
                handler.closed = true
                handler.context?.close(promise: nil)
            }
            context.write(wrapOutboundOut(update), promise: written)
            scheduleFlush(context: context)
        } else if let event = event as? StreamClosedEvent, let reason = event.reason, let stream = streams.removeValue(forKey: event.streamID) {
            // Reset by either side for a stream error (the frame, when the peer sent one, comes as well).
            stream.timeout.cancel()
            stream.promise.fail(reason == .refusedStream ? HTTP2TransportError.unprocessed : HTTP2TransportError.reset(reason))
            streamEnded()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func submit(_ request: HTTP2ServiceRequest, deadline: NIODeadline, promise: EventLoopPromise<HTTP2ServiceResponse>) {
        guard !closed, let context, context.channel.isActive else {
            promise.fail(HTTP2TransportError.closed(reused: answered > 0))
            return
        }
        guard streams.count < settings.maxStreams else {
            promise.fail(HTTP2TransportError.overloaded(limit: settings.maxStreams))
            return
        }
        let id = nextStreamID
        guard id < HTTP2StreamID.maxID.advanced(by: -2) else {
            // Stream IDs are used up (after a billion requests): this connection ends, the request goes on a new one.
            closed = true
            draining = true
            closeIfDrained()
            promise.fail(HTTP2TransportError.unprocessed)
            return
        }
        nextStreamID = id.advanced(by: 2)
        idleClose?.cancel()
        idleClose = nil
        var headers = HPACKHeaders()
        headers.reserveCapacity(4 + request.headers.count + (request.body == nil ? 0 : 1))
        headers.add(name: ":method", value: request.method.rawValue)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: request.authority)
        // A path with a query names what is looked up (a name, or a query's bytes), new with nearly every request: kept
        // out of the dynamic table, which would otherwise fill with paths seldom sent again and be searched, end to
        // end, for every field of every request. A bare path (a POST's `/dns-query`) is the same each time: indexed.
        headers.add(name: ":path", value: request.path, indexing: request.path.utf8.contains(UInt8(ascii: "?")) ? .nonIndexable : .indexable)
        for (name, value) in request.headers { headers.add(name: name, value: value) }
        if let body = request.body { headers.add(name: "content-length", value: String(body.count)) }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let timeout = context.eventLoop.scheduleTask(deadline: deadline) { bound.value.timedOut(id) }
        streams[id] = Stream(
            promise: promise, timeout: timeout, reused: answered > 0, framesReadBefore: framesRead, sentAt: context.eventLoop.now
        )
        // A frame the HTTP/2 handler refuses as a stream error comes back through errorCaught and fails its request; a
        // connection error closes the connection. (Frames it drops for a stream already closed, as the body after
        // HEADERS it refused, fail only their write promise, and there is none.)
        let headersFrame = HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: request.body == nil)))
        context.write(wrapOutboundOut(headersFrame), promise: nil)
        if let body = request.body {
            let data = HTTP2Frame.FramePayload.Data(data: .byteBuffer(context.channel.allocator.buffer(bytes: body)), endStream: true)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(data))), promise: nil)
        }
        scheduleFlush(context: context)
    }

    /// Every write of this tick of the event loop is flushed once at its end: one TLS record and one system call for a
    /// burst, not one each.
    private func scheduleFlush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let handler = bound.value
            handler.flushScheduled = false
            handler.context?.flush()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        framesRead += 1
        switch frame.payload {
        case .headers(let headers):
            guard var stream = streams[frame.streamID] else { return }
            if stream.status == nil {
                guard let text = headers.headers.first(name: ":status"), let code = Int(text) else {
                    fail(frame.streamID, HTTP2TransportError.malformedResponse("no :status"), reset: .protocolError)
                    return
                }
                // 1xx: an interim answer; the real one follows.
                if code >= 200 { stream.status = HTTPResponseStatus(statusCode: code) }
                streams[frame.streamID] = stream
            }
            if headers.endStream { finish(frame.streamID) }
        case .data(let data):
            guard var stream = streams[frame.streamID], case .byteBuffer(var bytes) = data.data else { return }
            guard stream.status != nil else {
                fail(frame.streamID, HTTP2TransportError.malformedResponse("DATA before the response's HEADERS"), reset: .protocolError)
                return
            }
            guard (stream.body?.readableBytes ?? 0) + bytes.readableBytes <= settings.maxAnswerBytes else {
                fail(frame.streamID, HTTP2TransportError.tooLarge(limit: settings.maxAnswerBytes), reset: .cancel)
                return
            }
            if stream.body == nil {
                stream.body = bytes
            } else {
                stream.body!.writeBuffer(&bytes)
            }
            streams[frame.streamID] = stream
            if data.endStream { finish(frame.streamID) }
        case .rstStream(let code):
            guard let stream = streams.removeValue(forKey: frame.streamID) else { return }
            stream.timeout.cancel()
            stream.promise.fail(code == .refusedStream ? HTTP2TransportError.unprocessed : HTTP2TransportError.reset(code))
            streamEnded()
        case .goAway(let lastStreamID, _, _):
            // Streams after the last one the server took were never processed: they may go again, on a new connection.
            // Each is reset, so that one still waiting in the HTTP/2 handler for room under the server's stream limit
            // is dropped there rather than sent once another stream ends (which the handler would take for a new
            // stream after the GOAWAY, an error of the whole connection).
            // All are taken off first: a write lets the HTTP/2 handler deliver the events it holds, among them the
            // close of each of these streams (as cancelled) that the GOAWAY caused.
            // A stream whose HEADERS the HTTP/2 handler still holds back is unprocessed too, whatever the last stream
            // says: the server never saw it, and the handler may no longer open it.
            closed = true
            draining = true
            let unprocessed = streams.filter { $0.key > lastStreamID || !$0.value.opened }.sorted { $0.key < $1.key }
            for (id, _) in unprocessed { streams[id] = nil }
            for (id, stream) in unprocessed {
                stream.timeout.cancel()
                context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.refusedStream))), promise: nil)
                stream.promise.fail(HTTP2TransportError.unprocessed)
            }
            scheduleFlush(context: context)
            closeIfDrained()
        default:
            break
        }
    }

    private func finish(_ id: HTTP2StreamID) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        stream.timeout.cancel()
        guard let status = stream.status else {
            stream.promise.fail(HTTP2TransportError.malformedResponse("the stream ended with no final status"))
            streamEnded()
            return
        }
        answered += 1
        stream.promise.succeed(HTTP2ServiceResponse(status: status, body: stream.body ?? ByteBuffer()))
        streamEnded()
    }

    /// Fails the request of stream `id`, resetting the stream when `reset` says with what.
    private func fail(_ id: HTTP2StreamID, _ error: any Error, reset: HTTP2ErrorCode? = nil) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        stream.timeout.cancel()
        if let reset, let context, context.channel.isActive {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(reset))), promise: nil)
            scheduleFlush(context: context)
        }
        stream.promise.fail(error)
        streamEnded()
    }

    private func timedOut(_ id: HTTP2StreamID) {
        guard let stream = streams[id] else { return }
        // Nothing at all read since the request went out, a while ago: the server (or the path to it) is gone, though
        // TCP may not know for many minutes. The connection is given up, so that the next request opens a new one
        // instead of waiting out its deadline on this one.
        if framesRead == stream.framesReadBefore, let context, context.eventLoop.now - stream.sentAt >= settings.silenceToGiveUp {
            closed = true
            streams[id] = nil
            context.close(promise: nil)
            stream.promise.fail(HTTP2TransportError.timedOut)
            return
        }
        fail(id, HTTP2TransportError.timedOut, reset: .cancel)
    }

    private func streamEnded() {
        closeIfDrained()
        scheduleIdleClose()
    }

    /// Takes no more requests, and closes once those in flight have ended or at `deadline`.
    func retire(closingBy deadline: NIODeadline) {
        closed = true
        draining = true
        closeIfDrained()
        guard let context, context.channel.isActive else { return }
        context.eventLoop.scheduleTask(deadline: deadline) { [channel = context.channel] in channel.close(promise: nil) }
    }

    private func closeIfDrained() {
        if draining, streams.isEmpty { context?.close(promise: nil) }
    }

    /// With nothing in flight, the connection closes after the idle timeout.
    private func scheduleIdleClose() {
        guard streams.isEmpty, idleClose == nil, !closed, let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        idleClose = context.eventLoop.scheduleTask(in: settings.idleTimeout) {
            let handler = bound.value
            handler.idleClose = nil
            guard handler.streams.isEmpty else { return }
            handler.closed = true
            handler.context?.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? NIOHTTP2Errors.StreamError {
            // A frame of ours the HTTP/2 handler refused: that stream's request fails, the connection goes on.
            fail(error.streamID, HTTP2TransportError.malformedResponse("\(error.baseError)"))
            return
        }
        if !connectionFailed, !Self.isOutboundConnectionError(error), String(reflecting: type(of: error)).hasPrefix("NIOHTTP2.") {
            // One stream of the server's broke the protocol (a length that does not add up, a forbidden header): the
            // HTTP/2 handler has reset it, and its request failed with the reset (StreamClosedEvent). The other
            // streams go on.
            return
        }
        // Anything else ends the connection (a connection error of HTTP/2, TLS's unclean shutdown, a reset): the close
        // fails what is in flight as closed.
        closed = true
        context.close(promise: nil)
    }

    /// The errors with which the HTTP/2 handler refuses a frame of ours as an error of the whole connection: it writes
    /// no GOAWAY for them, so they must be told apart from a stream of the server's that broke the protocol. Errors that
    /// can be either (a flow-control window, a stream's state) are not here: of our frames, DATA waits in the HTTP/2
    /// handler for window, RST_STREAM is for a stream it knows, and the connection's top-up closes the connection
    /// itself when its write fails.
    private static func isOutboundConnectionError(_ error: any Error) -> Bool {
        error is NIOHTTP2Errors.CreatedStreamAfterGoaway || error is NIOHTTP2Errors.IOOnClosedConnection
            || error is NIOHTTP2Errors.MissingPreface || error is NIOHTTP2Errors.UnableToSerializeFrame
            || error is NIOHTTP2Errors.NoSuchStream || error is NIOHTTP2Errors.MaxStreamsViolation
            || error is NIOHTTP2Errors.StreamIDTooSmall || error is NIOHTTP2Errors.InvalidStreamIDForPeer
            || error is NIOHTTP2Errors.RaisedGoawayLastStreamID
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        idleClose?.cancel()
        idleClose = nil
        failOpenStreams()
        topUpWritten?.fail(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // The pipeline is torn down: nothing may be left waiting on a promise no one will complete.
        closed = true
        failOpenStreams()
        self.context = nil
        topUpWritten?.fail(ChannelError.ioOnClosedChannel)
    }

    /// Fails every stream still open as the connection goes: one whose HEADERS never left (the HTTP/2 handler held
    /// them back, at the server's stream limit or while the channel could not write) reached no server and may be sent
    /// again; one that was sent may have been processed.
    private func failOpenStreams() {
        let open = streams
        streams = [:]
        for stream in open.values {
            stream.timeout.cancel()
            stream.promise.fail(stream.opened ? HTTP2TransportError.closed(reused: stream.reused) : .unprocessed)
        }
    }
}

extension HTTP2RequestHandler: NIOHTTP2FrameDelegate {
    func wroteFrame(_ frame: HTTP2Frame) {
        switch frame.payload {
        case .headers:
            streams[frame.streamID]?.opened = true
        case .windowUpdate where frame.streamID == .rootStream:
            windowUpdatePending = false
        case .goAway:
            connectionFailed = true
        default:
            break
        }
    }
}
