import HTTPDNSSynchronization
import HTTPTypes
import Logging
import NIOCore
import NIOHPACK
import NIOSSL

/// The server side of one HTTP/2 connection (RFC 9113), on the bytes TLS has decrypted.
///
/// A DoH or `/d` cache hit is answered as its HEADERS frame is read: the reply's frames are appended to one
/// output buffer, written and flushed once per read, so a client's batch of requests costs one TLS record and
/// no allocation per stream beyond the reply itself. Every other request is collected (headers, body) and
/// answered by the router in a task of its own (``RouterBridge``), whose response comes back through
/// ``HTTP2ResponseWriter``.
///
/// Holds what the protocol needs and nothing more: the HPACK decoder (swift-nio-http2's `NIOHPACK`), a table of
/// streams still being received or answered (a hit answered at once never enters it), flow control in both
/// directions, and the connection's life: the idle timeout, a two-step GOAWAY on graceful shutdown, and GOAWAY
/// with an error code when the client breaks the protocol.
///
/// Protections, each with a bound: concurrent streams (router work a client has reset counts until it ends),
/// header list and header block size, CONTINUATION frames per block, request body size, the request body bytes held
/// (per connection by its flow-control window, which is credited back only as held bytes are let go, and over all
/// connections by ``RequestBudget``), every stream's lifetime, the time a header block may take, and the output
/// of one read (parsing pauses while the socket cannot take more; ``BackPressureHandler`` in front stops reading).
/// Clients that reset streams or send malformed ones too often, or flood control frames (PING, SETTINGS, PRIORITY,
/// empty DATA), are sent away with ENHANCE_YOUR_CALM, as swift-nio-http2's own limits would.
final class HTTP2ServerConnection: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The limits of one connection.
    struct Configuration: Sendable {
        /// Streams open at once (SETTINGS_MAX_CONCURRENT_STREAMS); one more is refused with REFUSED_STREAM. A
        /// stream the client has reset counts until the router's work for it has ended.
        var maxConcurrentStreams = 100
        /// The largest header list taken (SETTINGS_MAX_HEADER_LIST_SIZE); a larger one is answered with 431.
        var maxHeaderListBytes = 16_384
        /// The largest header list decoded at all; past it the connection ends, as HPACK's state cannot be trusted.
        var maxDecodedHeaderListBytes = 65_536
        /// The largest header block before decoding, over HEADERS and its CONTINUATION frames.
        var maxHeaderBlockBytes = 65_536
        /// CONTINUATION frames one header block may take.
        var maxContinuationFrames = 5
        /// A connection without open streams for this long is closed (after GOAWAY); a stream open this long is
        /// reset; a draining connection closes after this long at the latest.
        var idleTimeout: TimeAmount = .seconds(60)
        /// Client resets of open streams, and malformed streams, tolerated within `rateWindow`.
        var maxGlitches = 200
        /// The same, over the connection's whole life (swift-nio-http2's glitch monitor has such a bound too).
        var maxGlitchesPerConnection = 1_000
        /// The client's preface and SETTINGS, and every header block, must arrive within this time.
        var headerTimeout: TimeAmount = .seconds(10)
        /// PING, SETTINGS and PRIORITY frames tolerated within `rateWindow`.
        var maxControlFrames = 200
        var rateWindow: TimeAmount = .seconds(30)
        /// Requests whose body has not ended, left open at the end of a read; past it the newest are refused
        /// (REFUSED_STREAM). Requests sent whole in one read never count: only a client that leaves requests
        /// hanging does, and each costs the server its stream's state until the stream's deadline.
        var maxUnfinishedRequests = 10
        /// Output a single read may build before parsing waits for the socket to take it.
        var maxOutputPerRead = 262_144
    }

    let configuration: Configuration
    /// Request body bytes held over every connection of the service.
    let bodyBudget: RequestBudget
    let cacheHits: any CacheHitAnswering
    let router: any RouterResponding
    let logger: Logger

    var context: ChannelHandlerContext?
    var phase = Phase.awaitingPreface
    var drain = Drain.none
    /// Bytes read and not yet parsed into a whole frame.
    private var inbound = ByteBuffer()
    /// Parsing waits for the channel to become writable again.
    private(set) var parsingPaused = false
    /// The client closed its side while parsing was paused: the final GOAWAY waits for what was read before.
    private var inputEndedWhilePaused = false
    /// Frames written since the last flush.
    var output = HTTP2Output(buffer: ByteBuffer())
    var isReading = false
    /// A flush of the router's answers is queued on the event loop (``flushOutputSoon()``).
    var flushQueued = false

    var decoder: HPACKDecoder
    /// A HEADERS frame without END_HEADERS, waiting for its CONTINUATION frames.
    var pendingHeaderBlock: PendingHeaderBlock?
    var streams: [UInt32: HTTP2ServerStream] = [:]
    /// The highest stream the client has opened.
    var lastStreamID: UInt32 = 0
    /// Streams this side reset lately: frames the client sent before it heard of the reset are ignored.
    var recentlyReset: RecentStreamIDs
    var peer = PeerSettings()
    /// How much DATA the client lets this side send on the connection as a whole.
    var sendWindow = HTTP2Limits.defaultWindowSize
    /// How much DATA the client may still send on the connection.
    var receiveWindow = HTTP2Limits.defaultWindowSize
    /// Flow-controlled bytes the streams in the table hold (their bodies), credited back as they are let go.
    var bodyBytesHeld = 0
    /// Bytes let go and not yet credited back with WINDOW_UPDATE.
    var creditOwed = 0
    /// Router tasks whose stream has left the table and that have not ended yet, with the body bytes the router
    /// still holds (released when the task ends) and whether the stream was reset.
    var routerWorkWithoutStream: [UInt32: (heldBytes: Int, reset: Bool)] = [:]
    /// Of those, the reset ones: they count against the stream limit, so that resetting streams does not let a
    /// client start more work than the limit. (A stream answered in full does not: its task is ending. Nor does a
    /// cache miss's lookup, which is let go at once: its upstream query goes on in the cache, bounded there by
    /// `maxPendingQueries`, and the resets themselves by the glitch limits.)
    var resetRouterWork = 0
    /// Credit given past what was let go (one byte when held bodies took the whole window), taken back from the
    /// next bytes let go.
    var creditGivenAhead = 0
    /// Which of the last client stream IDs below `lastStreamID` were opened, to tell a closed stream from a skipped
    /// one (§5.1.1).
    var openedStreamIDs = RecentlyOpenedStreams()
    /// When the header block or preface being read must be complete.
    var headerDeadline: Scheduled<Void>?
    /// Reads ended so far: a stream remembers the one it was opened in.
    var readsEnded: UInt64 = 0
    /// Empty DATA frames in a row without END_STREAM.
    var emptyDataFrames = 0
    var hitTimers: RequestMetrics.HitTimers

    private var answeredDuringRead = false
    private var lastActive = NIODeadline.uptimeNanoseconds(0)
    private var idleCheck: Scheduled<Void>?
    private var glitches = RateCounter()
    private var lifetimeGlitches = 0
    private var controlFrames = RateCounter()
    /// Router tasks still running, and who waits for them all to end once the connection has closed.
    private var routerTasks = 0
    private var routerTasksEnded: EventLoopPromise<Void>?

    enum Phase {
        case awaitingPreface
        case awaitingSettings
        case open
        case closed
    }

    /// Graceful shutdown (RFC 9113 §6.8): GOAWAY with the largest stream ID and a PING first, so that requests
    /// already on their way are still taken; once the PING returns, GOAWAY with the last stream taken, after
    /// which new streams are refused and the connection closes when the open ones are answered.
    enum Drain: Equatable {
        case none
        case announced
        case final(lastStreamID: UInt32)
    }

    struct PendingHeaderBlock {
        let streamID: UInt32
        let endStream: Bool
        let dependsOnItself: Bool
        var fragment: ByteBuffer
        var continuationFrames = 0
    }

    /// What the client has said in SETTINGS that this side must respect when sending (its largest frame is kept
    /// by ``HTTP2Output``, which splits frames by it).
    struct PeerSettings {
        var initialWindowSize = HTTP2Limits.defaultWindowSize
        /// The client has sent SETTINGS_ENABLE_CONNECT_PROTOCOL of 1, which it may not take back (RFC 8441 §3).
        var enabledConnectProtocol = false
    }

    /// The opaque data of the PING that ends the first step of a graceful shutdown.
    static let drainPing: UInt64 = 0x6874_7470_646E_7321  // "httpdns!"

    init(
        configuration: Configuration,
        bodyBudget: RequestBudget = RequestBudget(),
        cacheHits: any CacheHitAnswering,
        router: any RouterResponding,
        logger: Logger
    ) {
        self.configuration = configuration
        self.bodyBudget = bodyBudget
        self.cacheHits = cacheHits
        self.router = router
        self.logger = logger
        hitTimers = RequestMetrics.HitTimers(metrics: cacheHits.requestMetrics)
        recentlyReset = RecentStreamIDs(capacity: 2 * configuration.maxConcurrentStreams)
        decoder = HPACKDecoder(
            allocator: ByteBufferAllocator(),
            maxDynamicTableSize: HPACKDecoder.maxDynamicTableSize,
            maxHeaderListSize: max(configuration.maxDecodedHeaderListBytes, configuration.maxHeaderListBytes)
        )
    }

    // MARK: Life of the connection

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        output = HTTP2Output(buffer: context.channel.allocator.buffer(capacity: 4096))
        // Added after ALPN, so the connection is usually active already.
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard case .awaitingPreface = phase, idleCheck == nil else { return }
        // The server's preface: its SETTINGS, sent without waiting for the client's.
        output.buffer.writeHTTP2FrameHeader(HTTP2FrameHeader(length: 12, type: .settings, streamID: 0))
        output.buffer.writeMultipleIntegers(HTTP2Setting.maxConcurrentStreams, UInt32(configuration.maxConcurrentStreams))
        output.buffer.writeMultipleIntegers(HTTP2Setting.maxHeaderListSize, UInt32(configuration.maxHeaderListBytes))
        flushOutput()
        lastActive = context.eventLoop.now
        scheduleIdleCheck(in: configuration.idleTimeout)
        startHeaderDeadline("the preface")
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        shutDownStreams()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        phase = .closed
        shutDownStreams()
        context.fireChannelInactive()
    }

    /// Cancels every task and timer the connection holds; the router's tasks see their writes fail.
    private func shutDownStreams() {
        idleCheck?.cancel()
        idleCheck = nil
        headerDeadline?.cancel()
        headerDeadline = nil
        for id in Array(streams.keys) { abandonStream(id) }
    }

    /// Takes a stream out of the table. The body bytes it held are let go, unless the router has the body and is
    /// still working: then they are held, and the work counted against the stream limit when the stream was reset,
    /// until the task ends (``routerTaskEnded(streamID:)``).
    @discardableResult
    func removeStream(_ id: UInt32, reset: Bool) -> HTTP2ServerStream? {
        guard let stream = streams.removeValue(forKey: id) else { return nil }
        if stream.answering != nil {
            // The stream's slot in the service's budget, like its body, is kept until the router's work ends.
            routerWorkWithoutStream[id] = (stream.heldBytes, reset)
            if reset { resetRouterWork += 1 }
        } else {
            bodyBudget.releaseStream()
            releaseBody(stream.heldBytes)
        }
        return stream
    }

    private func releaseBody(_ bytes: Int) {
        guard bytes > 0 else { return }
        bodyBytesHeld -= bytes
        bodyBudget.release(bytes)
        letGo(bytes)
    }

    /// Streams counted against the limit: those in the table, and router work for streams reset while it ran.
    var occupiedStreams: Int { streams.count + resetRouterWork }

    /// Flow-controlled bytes no longer held: credited back to the client once the window is half used.
    func letGo(_ count: Int) {
        creditOwed += count
        let takenBack = min(creditGivenAhead, creditOwed)
        creditOwed -= takenBack
        creditGivenAhead -= takenBack
        creditIfDue()
    }

    func creditIfDue() {
        guard creditOwed > 0, receiveWindow < HTTP2Limits.defaultWindowSize / 2, phase != .closed else { return }
        output.buffer.writeHTTP2WindowUpdate(0, increment: creditOwed)
        receiveWindow += creditOwed
        creditOwed = 0
    }

    /// The preface, or a header block, must be complete by `headerTimeout`: a client that starts one and stops
    /// holds the connection for no longer.
    func startHeaderDeadline(_ what: String) {
        guard headerDeadline == nil, let context else { return }
        headerDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: configuration.headerTimeout) { [self] in
            headerDeadline = nil
            // Parsing waits for a client that does not read: what it sent may be complete and not parsed yet.
            guard !parsingPaused else { return startHeaderDeadline(what) }
            connectionError(.protocolError, "\(what) was not complete within the header timeout")
        }
    }

    func endHeaderDeadline() {
        headerDeadline?.cancel()
        headerDeadline = nil
    }

    /// Succeeds once the connection has closed and every router task it started has ended: what the server
    /// waits for before it counts the connection as finished.
    func closedAndSettled() -> EventLoopFuture<Void> {
        guard let context else { preconditionFailure("closedAndSettled() before the handler was added") }
        let eventLoop = context.eventLoop
        return context.channel.closeFuture.assumeIsolated().flatMap { [self] in routerTasksIdle(on: eventLoop) }.nonisolated()
    }

    /// Succeeds once no router task is running (at once when none is). Called on `eventLoop`, the connection's.
    func routerTasksIdle(on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        guard routerTasks > 0 else { return eventLoop.makeSucceededVoidFuture() }
        let promise = routerTasksEnded ?? eventLoop.makePromise()
        routerTasksEnded = promise
        return promise.futureResult
    }

    /// Router tasks started and not ended yet.
    var routerTasksRunning: Int { routerTasks }

    func routerTaskStarted() {
        routerTasks += 1
    }

    /// A router task has ended. Its stream should have ended with it; if not (the response's body failed, or never
    /// finished), the stream is reset rather than left to its deadline.
    func routerTaskEnded(streamID id: UInt32) {
        if streams[id] != nil {
            if phase != .closed {
                logger.debug("HTTP/2 response ended unfinished", metadata: ["http2.stream": "\(id)"])
                resetStream(id, .internalError)
                flushOutputSoon()
            } else {
                abandonStream(id)
            }
        }
        routerWorkEnded(streamID: id)
    }

    /// Takes a stream that is gone (reset, timed out, its connection closed) out of the table: the router's task is
    /// cancelled and its writer told; a lookup that has not answered yet is let go at once, with what it held (the
    /// upstream query goes on and fills the cache).
    @discardableResult
    func abandonStream(_ id: UInt32) -> HTTP2ServerStream? {
        guard let stream = removeStream(id, reset: true) else { return nil }
        stream.abandon()
        if case .lookUp(let cancel) = stream.answering, cancel() { routerWorkEnded(streamID: id) }
        return stream
    }

    /// The router's work for a stream (a task, or a lookup) has ended, and its stream has left the table or holds its
    /// own slot: what the work held is let go.
    func routerWorkEnded(streamID id: UInt32) {
        if let work = routerWorkWithoutStream.removeValue(forKey: id) {
            if work.reset { resetRouterWork -= 1 }
            bodyBudget.releaseStream()
            releaseBody(work.heldBytes)
            // With the answers that end with it: one flush for all of them.
            flushOutputSoon()
        }
        routerTasks -= 1
        if routerTasks == 0 {
            routerTasksEnded?.succeed()
            routerTasksEnded = nil
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ChannelShouldQuiesceEvent:
            startDraining()
        case ChannelEvent.inputClosed:
            // The client has closed its side: answer what it asked, then close.
            inputEnded()
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if case NIOSSLError.uncleanShutdown = error {
            // A FIN without TLS's close_notify: nothing more can arrive.
            inputEnded()
        } else {
            logger.debug("HTTP/2 connection failed", metadata: ["error.type": "\(error)"])
            close()
        }
    }

    /// Nothing more will arrive: once every request already read has been taken, the final GOAWAY.
    private func inputEnded() {
        if parsingPaused {
            inputEndedWhilePaused = true
        } else {
            finishDraining()
        }
    }

    /// The first step of a graceful shutdown: streams still arriving are taken until the PING comes back.
    func startDraining() {
        guard case .none = drain, phase != .closed else { return }
        drain = .announced
        output.buffer.writeHTTP2GoAway(lastStreamID: HTTP2Limits.largestStreamID, code: .noError, debugData: "")
        output.buffer.writeHTTP2FrameHeader(HTTP2FrameHeader(length: 8, type: .ping, streamID: 0))
        output.buffer.writeInteger(Self.drainPing)
        flushOutput()
        // However the client answers, the connection ends within the idle timeout.
        scheduleIdleCheck(in: configuration.idleTimeout)
    }

    /// The last step of a graceful shutdown, or the only one when the client is going away itself: GOAWAY naming
    /// the last stream taken, then close once the open streams have been answered.
    func finishDraining() {
        switch drain {
        case .final: return
        case .none: scheduleIdleCheck(in: configuration.idleTimeout)
        case .announced: break
        }
        guard phase != .closed else { return }
        drain = .final(lastStreamID: lastStreamID)
        output.buffer.writeHTTP2GoAway(lastStreamID: lastStreamID, code: .noError, debugData: "")
        if streams.isEmpty {
            close()
        } else {
            flushOutput()
        }
    }

    /// Ends the connection for an error of the client's: GOAWAY with the code and a reason, then close.
    func connectionError(_ code: HTTP2ErrorCode, _ reason: String) {
        guard phase != .closed else { return }
        logger.debug("HTTP/2 connection error", metadata: ["http2.error": "\(code)", "http2.reason": "\(reason)"])
        output.buffer.writeHTTP2GoAway(lastStreamID: goAwayLastStreamID, code: code, debugData: reason)
        close()
    }

    /// The last stream ID a GOAWAY may name: never more than an earlier GOAWAY named (§6.8).
    private var goAwayLastStreamID: UInt32 {
        if case .final(let announced) = drain { return min(announced, lastStreamID) }
        return lastStreamID
    }

    /// Writes what is pending, even inside a read, then closes.
    func close() {
        guard phase != .closed, let context else { return }
        phase = .closed
        writeOutput()
        context.flush()
        context.close(promise: nil)
    }

    /// The idle timeout, checked by one timer per connection rather than a timer per request: no open stream for
    /// the timeout closes the connection; while draining, the timeout ends the wait for the open streams.
    private func scheduleIdleCheck(in delay: TimeAmount) {
        idleCheck?.cancel()
        idleCheck = context?.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
            idleCheck = nil
            checkIdle()
        }
    }

    private func checkIdle() {
        guard phase != .closed, let now = context?.eventLoop.now else { return }
        switch drain {
        case .none:
            break
        case .announced:
            // The client never answered the PING: tell it which streams were taken before closing.
            output.buffer.writeHTTP2GoAway(lastStreamID: lastStreamID, code: .noError, debugData: "")
            return close()
        case .final:
            return close()
        }
        // Open streams end by their own deadlines.
        guard streams.isEmpty else { return scheduleIdleCheck(in: configuration.idleTimeout) }
        let idleFor = now - lastActive
        if idleFor >= configuration.idleTimeout {
            // GOAWAY first, so a client whose request crossed the close knows it was not answered.
            output.buffer.writeHTTP2GoAway(lastStreamID: lastStreamID, code: .noError, debugData: "idle")
            close()
        } else {
            scheduleIdleCheck(in: configuration.idleTimeout - idleFor)
        }
    }

    /// A stream has been answered or has gone.
    func streamEnded() {
        answeredDuringRead = true
        if !isReading, let context { lastActive = context.eventLoop.now }
        if case .final = drain, streams.isEmpty { close() }
    }

    /// A client reset an open stream, or sent a malformed one: tolerated now and then, not as a pattern
    /// (RFC 9113 §10.5; the "rapid reset" attack).
    func countGlitch() {
        guard let now = context?.eventLoop.now else { return }
        lifetimeGlitches += 1
        if glitches.record(at: now, window: configuration.rateWindow) > configuration.maxGlitches
            || lifetimeGlitches > configuration.maxGlitchesPerConnection
        {
            connectionError(.enhanceYourCalm, "too many reset or malformed streams")
        }
    }

    /// A frame that costs the server work and the client nothing: PING, SETTINGS, PRIORITY. False once there
    /// have been too many, and the connection is ending.
    func countControlFrame() -> Bool {
        guard let now = context?.eventLoop.now else { return false }
        guard controlFrames.record(at: now, window: configuration.rateWindow) <= configuration.maxControlFrames else {
            connectionError(.enhanceYourCalm, "too many control frames")
            return false
        }
        return true
    }

    // MARK: Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        guard phase != .closed else { return }
        if inbound.readableBytes == 0 {
            inbound = bytes
        } else {
            inbound.writeBuffer(&bytes)
        }
        guard !parsingPaused else { return }
        isReading = true
        readFrames()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        endRead()
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, phase != .closed {
            resumeWriters()
            if parsingPaused {
                parsingPaused = false
                isReading = true
                readFrames()
                endRead()
                if !parsingPaused, inputEndedWhilePaused {
                    inputEndedWhilePaused = false
                    finishDraining()
                }
            }
        }
        context.fireChannelWritabilityChanged()
    }

    private func endRead() {
        isReading = false
        if answeredDuringRead {
            answeredDuringRead = false
            if let context { lastActive = context.eventLoop.now }
        }
        readsEnded &+= 1
        if streams.count > configuration.maxUnfinishedRequests, !parsingPaused { refuseUnfinishedRequestsPastLimit() }
        if streams.capacity > 8 * streams.count + 16 {
            // A burst of streams has gone: the table does not keep the room it took (a Dictionary never shrinks).
            streams = streams.isEmpty ? [:] : Dictionary(uniqueKeysWithValues: streams.map { ($0.key, $0.value) })
        }
        if inbound.readableBytes == 0 {
            inbound = ByteBuffer()
        } else {
            inbound.discardReadBytes()
        }
        flushOutput()
    }

    private func readFrames() {
        if case .awaitingPreface = phase {
            // Told apart at the first byte that differs, not only once 24 bytes have come.
            let count = min(inbound.readableBytes, HTTP2Limits.clientPreface.count)
            guard inbound.readableBytesView.prefix(count).elementsEqual(HTTP2Limits.clientPreface.prefix(count)) else {
                return connectionError(.protocolError, "not the HTTP/2 client preface")
            }
            guard count == HTTP2Limits.clientPreface.count else { return }
            inbound.moveReaderIndex(forwardBy: count)
            phase = .awaitingSettings
        }
        while phase != .closed, let header = HTTP2FrameHeader(peekingAt: inbound) {
            guard header.length <= HTTP2Limits.defaultMaxFrameSize else {
                return connectionError(.frameSizeError, "a \(header.type) frame of \(header.length) bytes")
            }
            guard inbound.readableBytes >= HTTP2FrameHeader.size + header.length else {
                // A header block is being sent, however slowly: it has the header timeout.
                if header.type == .headers || header.type == .continuation { startHeaderDeadline("a header block") }
                return
            }
            inbound.moveReaderIndex(forwardBy: HTTP2FrameHeader.size)
            let payload = inbound.readSlice(length: header.length)!
            receive(header, payload: payload)
            guard phase != .closed else { return }
            if output.buffer.readableBytes >= configuration.maxOutputPerRead, let context {
                // A client sending requests faster than it reads answers: what was answered goes out now, and
                // the rest waits until the socket can take more.
                writeOutput()
                context.flush()
                if !context.channel.isWritable {
                    parsingPaused = true
                    return
                }
            }
        }
    }
}

extension HTTP2ServerConnection {
    /// What every HTTP/2 connection of the service is made with, once TLS has negotiated `h2`.
    struct Setup: Sendable {
        let cacheHits: any CacheHitAnswering
        let router: any RouterResponding
        let idleTimeout: Duration
        let headerTimeout: Duration
        let bodyBudget: RequestBudget

        /// Adds the connection's handlers; returns a future that succeeds once the connection has closed and its
        /// router tasks have ended.
        func configure(_ channel: any Channel) throws -> EventLoopFuture<Void> {
            var configuration = Configuration()
            configuration.idleTimeout = TimeAmount(idleTimeout)
            configuration.headerTimeout = min(TimeAmount(headerTimeout), configuration.idleTimeout)
            let connection = HTTP2ServerConnection(
                configuration: configuration,
                bodyBudget: bodyBudget,
                cacheHits: cacheHits,
                router: router,
                logger: router.logger
            )
            // Reads wait while the socket cannot take more: hits are answered as they are read.
            try channel.pipeline.syncOperations.addHandler(BackPressureHandler())
            try channel.pipeline.syncOperations.addHandler(connection)
            return connection.closedAndSettled()
        }
    }
}

/// The last streams this side reset, in a fixed ring: enough to ignore what the client had already sent on them.
struct RecentStreamIDs {
    private var ids: [UInt32]
    private var next = 0

    init(capacity: Int) {
        ids = [UInt32](repeating: 0, count: max(capacity, 1))
    }

    mutating func insert(_ id: UInt32) {
        ids[next] = id
        next = (next + 1) % ids.count
    }

    func contains(_ id: UInt32) -> Bool {
        id != 0 && ids.contains(id)
    }
}

/// Which of the last 512 client stream IDs were opened: bit k stands for `last - 2k`. A client stream ID at or below
/// the last one opened is closed if it was opened (STREAM_CLOSED) and was skipped if not (PROTOCOL_ERROR, §5.1.1);
/// one older than the window is taken as closed.
struct RecentlyOpenedStreams {
    private var words = [UInt64](repeating: 0, count: 8)
    private var last: UInt32 = 0

    mutating func open(_ id: UInt32) {
        let shift = Int((id - last) / 2)
        last = id
        if shift >= words.count * 64 {
            for index in words.indices { words[index] = 0 }
        } else if shift > 0 {
            let (wordShift, bitShift) = (shift / 64, shift % 64)
            for index in words.indices.reversed() {
                let from = index - wordShift
                var value = from >= 0 ? words[from] << bitShift : 0
                if bitShift > 0, from - 1 >= 0 { value |= words[from - 1] >> (64 - bitShift) }
                words[index] = value
            }
        }
        words[0] |= 1
    }

    /// Whether `id` (a client stream ID at or below the last opened) was opened, as far as the window sees.
    func wasOpened(_ id: UInt32) -> Bool {
        let distance = Int((last - id) / 2)
        guard distance < words.count * 64 else { return true }
        return words[distance / 64] & (1 << UInt64(distance % 64)) != 0
    }
}

/// Events counted over a window of time that starts again once it has passed.
struct RateCounter {
    private var count = 0
    private var windowStart = NIODeadline.uptimeNanoseconds(0)

    /// Counts one event at `now`; returns the count within the current window.
    mutating func record(at now: NIODeadline, window: TimeAmount) -> Int {
        if now - windowStart > window {
            windowStart = now
            count = 0
        }
        count += 1
        return count
    }
}

/// What the HTTP/2 connections of the service hold between them: request body bytes, and streams (a stream costs
/// about 2 KiB of state, and the router's work for it more, until both end). A stream past either limit is refused
/// (REFUSED_STREAM, which a client may retry), so many connections, each within its own limits, cannot add up to
/// more. Cache hits answered as they are read never take a stream; one whose answer waits for flow-control credit
/// does.
public final class RequestBudget: Sendable {
    public let bodyByteLimit: Int
    public let streamLimit: Int
    private let held = Atomic<Int>(0)
    private let streams = Atomic<Int>(0)

    public init(bodyBytes: Int = .max, streams: Int = .max) {
        bodyByteLimit = bodyBytes
        streamLimit = streams
    }

    /// Takes `count` body bytes from the budget; false, taking nothing, when they do not fit.
    func reserve(_ count: Int) -> Bool {
        Self.take(count, from: held, limit: bodyByteLimit)
    }

    func release(_ count: Int) {
        held.subtract(count, ordering: .relaxed)
    }

    /// Takes a stream; false when the service holds as many as it will.
    func reserveStream() -> Bool {
        Self.take(1, from: streams, limit: streamLimit)
    }

    func releaseStream() {
        streams.subtract(1, ordering: .relaxed)
    }

    private static func take(_ count: Int, from counter: borrowing Atomic<Int>, limit: Int) -> Bool {
        var current = counter.load(ordering: .relaxed)
        while true {
            guard count <= limit - current else { return false }
            let (exchanged, original) = counter.compareExchange(expected: current, desired: current + count, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Body bytes held now.
    public var bytesHeld: Int { held.load(ordering: .relaxed) }
    /// Streams open now.
    public var streamsOpen: Int { streams.load(ordering: .relaxed) }
}
