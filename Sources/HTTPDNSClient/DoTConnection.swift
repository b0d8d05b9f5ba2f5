import HTTPDNSCore
import HTTPDNSNetworking
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// What can go wrong on a DoT connection besides TLS itself; the source turns each into a `ResolutionError`.
enum DoTTransportError: Error, CustomStringConvertible {
    /// The connection closed with the query unanswered. `reused` says whether the query went out on a connection that
    /// had already answered others (which a server may close as idle at any moment, RFC 7766 §6.2.3).
    case closed(reused: Bool)
    /// The query was still unanswered when its deadline came.
    case timedOut
    /// More queries were waiting for the connection than it holds; the query was never sent.
    case overloaded(limit: Int)
    /// The server sent a frame that is not a DNS message.
    case malformedFrame(String)
    /// The connection closed during the TLS handshake: the peer is not a DoT server, or went away.
    case closedDuringHandshake

    var description: String {
        switch self {
        case .closed: "the connection closed before the answer came"
        case .timedOut: "no answer came in time"
        case .overloaded(let limit): "\(limit) queries are waiting for the connection already"
        case .malformedFrame(let reason): "the server sent a frame that is not a DNS message: \(reason)"
        case .closedDuringHandshake: "the connection closed during the TLS handshake"
        }
    }
}

/// One TLS connection to a DNS-over-TLS server (RFC 7858): queries framed by a two-byte length (RFC 1035 §4.2.2),
/// many in flight at once and matched to their answers by ID in whatever order the server answers (RFC 7766 §6.2.1.1),
/// a bounded number waiting beyond those, and a close when it has been idle for a while.
///
/// Made by ``connect(to:settings:eventLoopGroup:deadline:)``, whose future succeeds only once TLS is up and the
/// certificate passed every check: NIOSSL's verification (the chain, and the server name, or without one the address),
/// then, with a server name, that the certificate holds the name as a DNS name (NIOSSL also accepts a certificate whose
/// IP SAN is the address connected to, whatever name was asked), and the SPKI pins when there are any.
final class DoTConnection: SlotConnection {
    /// What every connection to a source's servers shares.
    struct Settings: Sendable {
        let tls: NIOSSLContext
        /// The name the certificate must hold and the SNI; nil: the certificate must hold the address.
        let serverName: String?
        let pins: Set<SPKIPin>
        /// Queries sent and unanswered at once; more wait.
        let maxInFlight: Int
        /// Queries waiting beyond those; more fail at once.
        let maxWaiting: Int
        let idleTimeout: TimeAmount
        /// How long a query that times out must have been out, with nothing read since, for the connection to be given
        /// up with it. A query sent shortly before its deadline times out for want of time, not for a silent server.
        let silenceToGiveUp: TimeAmount
    }

    let channel: any Channel
    private let handler: NIOLoopBound<DoTQueryHandler>
    private let closing: ClosingFlag

    private init(channel: any Channel, handler: DoTQueryHandler) {
        self.channel = channel
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        closing = handler.closing
    }

    /// Whether queries can still go out on the connection: it is open, and not closing (TLS's close takes a while,
    /// and a connection the handler gave up on takes no more queries meanwhile).
    var isActive: Bool { channel.isActive && !closing.isSet }

    /// Connects to `endpoint`, TLS and every certificate check included, by `deadline`.
    static func connect(
        to endpoint: DoTEndpoint,
        settings: Settings,
        eventLoopGroup: any EventLoopGroup,
        deadline: NIODeadline
    ) -> EventLoopFuture<DoTConnection> {
        open(
            to: endpoint.address,
            port: endpoint.port,
            on: eventLoopGroup.next(),
            deadline: deadline,
            timedOut: DoTTransportError.timedOut,
            pipeline: { channel, ready in
                let tls = try NIOSSLClientHandler(context: settings.tls, serverHostname: settings.serverName)
                let handler = DoTQueryHandler(settings: settings, ready: ready)
                try channel.pipeline.syncOperations.addHandlers([tls, ByteToMessageHandler(DNSLengthPrefixDecoder()), handler])
            },
            connection: { channel in
                DoTConnection(channel: channel, handler: try channel.pipeline.syncOperations.handler(type: DoTQueryHandler.self))
            }
        )
    }

    /// Sends `query` (a whole DNS message) and returns the answer, whose ID is `query`'s own (the connection gives each
    /// query an ID of its own on the wire).
    func send(_ query: [UInt8], deadline: NIODeadline) -> EventLoopFuture<[UInt8]> {
        let promise = channel.eventLoop.makePromise(of: [UInt8].self)
        if channel.eventLoop.inEventLoop {
            handler.value.submit(query, deadline: deadline, promise: promise)
        } else {
            channel.eventLoop.execute { [handler] in handler.value.submit(query, deadline: deadline, promise: promise) }
        }
        return promise.futureResult
    }

    /// Closes the connection; unanswered queries fail.
    func close() {
        channel.close(promise: nil)
    }
}

/// Set once the handler stops taking queries on its connection; read from any thread.
final class ClosingFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}

/// Splits the stream into DNS messages: a two-byte length, then that many bytes (RFC 1035 §4.2.2).
struct DNSLengthPrefixDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self),
            buffer.readableBytes >= 2 + Int(length)
        else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 2)
        context.fireChannelRead(NIOAny(buffer.readSlice(length: Int(length))!))
        return .continue
    }
}

/// The queries of one DoT connection, on its event loop: IDs, the in-flight and waiting queues, each query's
/// deadline, the certificate checks after the handshake, and the idle close.
final class DoTQueryHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private struct Query {
        /// The ID the caller gave the query, put back into its answer.
        let callerID: UInt16
        let promise: EventLoopPromise<[UInt8]>
        /// Tells this query from an earlier one that had the same ID on the wire, in ``deadlines``.
        let serial: UInt64
        /// Whether it went out on a connection that had answered before.
        let reused: Bool
        /// How many frames the connection had read when the query was written.
        let framesReadBefore: Int
        /// When it was written.
        let sentAt: NIODeadline
    }

    private struct Waiting {
        let serial: UInt64
        let query: [UInt8]
        let promise: EventLoopPromise<[UInt8]>
        let deadline: NIODeadline
        var timeout: Scheduled<Void>?
    }

    private let settings: DoTConnection.Settings
    private var ready: EventLoopPromise<Void>?
    private var context: ChannelHandlerContext?
    private var inFlight: [UInt16: Query] = [:]
    /// The deadlines of the queries in flight, and one timer for the earliest: no timer per query. An answered query's
    /// deadline stays until the timer finds it first, the heap is pruned, or nothing is left in flight.
    private var deadlines = QueryDeadlines()
    private var deadlineTimer: Scheduled<Void>?
    /// When ``deadlineTimer`` fires.
    private var timerDeadline: NIODeadline?
    /// Tells the current timer from one cancelled too late to stop it running.
    private var timerGeneration: UInt64 = 0
    private var waiting = CircularBuffer<Waiting>()
    private var nextSerial: UInt64 = 0
    private var nextID = UInt16.random(in: .min ... .max)
    private var answered = 0
    /// Every frame read, answers to queries that timed out included: a sign the server is still there.
    private var framesRead = 0
    private var idleClose: Scheduled<Void>?
    private var flushScheduled = false
    /// The queries written in this tick of the event loop, not yet handed to TLS.
    private var pending: ByteBuffer?
    /// Whether the connection takes no more queries; shared with ``DoTConnection/isActive``.
    let closing = ClosingFlag()
    private var closed: Bool {
        get { closing.isSet }
        set { if newValue { closing.set() } }
    }

    init(settings: DoTConnection.Settings, ready: EventLoopPromise<Void>) {
        self.settings = settings
        self.ready = ready
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let tls = event as? TLSUserEvent, case .handshakeCompleted = tls, let ready {
            self.ready = nil
            do {
                try checkCertificate(context: context)
                ready.succeed()
                scheduleIdleClose()
            } catch {
                ready.fail(error)
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// What NIOSSL does not check: with a server name, that the certificate holds it as a DNS name; the pins.
    private func checkCertificate(context: ChannelHandlerContext) throws {
        guard settings.serverName != nil || !settings.pins.isEmpty else { return }
        let tls = try context.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)
        try PeerCertificateCheck.verify(tls.peerCertificate, serverName: settings.serverName, pins: settings.pins)
    }

    func submit(_ query: [UInt8], deadline: NIODeadline, promise: EventLoopPromise<[UInt8]>) {
        guard !closed, let context, context.channel.isActive else {
            promise.fail(DoTTransportError.closed(reused: answered > 0))
            return
        }
        guard query.count >= 12, query.count <= Int(UInt16.max) else {
            promise.fail(DoTTransportError.malformedFrame("a query of \(query.count) bytes"))
            return
        }
        // Sent, a query already due would only time out at once, an answer on its way for nothing.
        let now = context.eventLoop.now
        guard deadline > now else {
            promise.fail(DoTTransportError.timedOut)
            return
        }
        idleClose?.cancel()
        idleClose = nil
        if inFlight.count < settings.maxInFlight {
            write(query, deadline: deadline, promise: promise, now: now, context: context)
            return
        }
        guard waiting.count < settings.maxWaiting else {
            promise.fail(DoTTransportError.overloaded(limit: settings.maxWaiting))
            return
        }
        let serial = nextSerial
        nextSerial += 1
        var entry = Waiting(serial: serial, query: query, promise: promise, deadline: deadline)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        entry.timeout = context.eventLoop.scheduleTask(deadline: deadline) { bound.value.waitingTimedOut(serial) }
        waiting.append(entry)
    }

    private func waitingTimedOut(_ serial: UInt64) {
        guard let index = waiting.firstIndex(where: { $0.serial == serial }) else { return }
        waiting.remove(at: index).promise.fail(DoTTransportError.timedOut)
        scheduleIdleClose()
    }

    /// Fails the queries whose deadline has come, then sets the timer for the earliest deadline of one still in flight.
    private func deadlineCame(generation: UInt64) {
        // A timer cancelled after it was due may still run: the current one is someone else's.
        guard generation == timerGeneration, let context else { return }
        deadlineTimer = nil
        timerDeadline = nil
        let now = context.eventLoop.now
        // Answered queries' deadlines are dropped on the way, so that the timer is set for a query still unanswered.
        while let earliest = deadlines.earliest {
            let live = isLive(earliest)
            if live && earliest.deadline > now { break }
            deadlines.removeEarliest()
            if live { inFlightTimedOut(earliest.id, now: now) }
        }
        if let earliest = deadlines.earliest { setTimer(for: earliest.deadline) }
    }

    /// Whether `entry` is the deadline of a query still in flight, not of an answered one whose ID went to another.
    private func isLive(_ entry: QueryDeadlines.Entry) -> Bool {
        inFlight[entry.id]?.serial == entry.serial
    }

    /// Makes sure the timer fires by `deadline`.
    private func setTimer(for deadline: NIODeadline) {
        if let timerDeadline, timerDeadline <= deadline { return }
        guard let context else { return }
        deadlineTimer?.cancel()
        timerGeneration &+= 1
        let generation = timerGeneration
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        deadlineTimer = context.eventLoop.scheduleTask(deadline: deadline) { bound.value.deadlineCame(generation: generation) }
        timerDeadline = deadline
    }

    /// Nothing in flight: no deadline to keep, no timer.
    private func cancelTimer() {
        deadlineTimer?.cancel()
        deadlineTimer = nil
        timerDeadline = nil
        timerGeneration &+= 1
        deadlines.removeAll()
    }

    private func inFlightTimedOut(_ id: UInt16, now: NIODeadline) {
        guard let query = inFlight.removeValue(forKey: id) else { return }
        // Nothing at all read since the query went out, a while ago: the server (or the path to it) is gone, though
        // TCP may not know for many minutes. The connection is given up before the query fails, so that the next query
        // opens a new one instead of waiting out its deadline on this one.
        if framesRead == query.framesReadBefore && now - query.sentAt >= settings.silenceToGiveUp {
            closed = true
            context?.close(promise: nil)
            query.promise.fail(DoTTransportError.timedOut)
            return
        }
        query.promise.fail(DoTTransportError.timedOut)
        sendWaiting()
        scheduleIdleClose()
    }

    private func write(_ query: [UInt8], deadline: NIODeadline, promise: EventLoopPromise<[UInt8]>, now: NIODeadline, context: ChannelHandlerContext) {
        var free = nextID
        while inFlight[free] != nil { free &+= 1 }
        let id = free
        nextID = id &+ 1
        let callerID = UInt16(query[0]) << 8 | UInt16(query[1])
        let serial = nextSerial
        nextSerial += 1
        inFlight[id] = Query(
            callerID: callerID, promise: promise, serial: serial, reused: answered > 0, framesReadBefore: framesRead, sentAt: now
        )
        deadlines.insert(.init(deadline: deadline, id: id, serial: serial))
        // Deadlines of answered queries are pruned once the heap reaches twice what is in flight (or 128): it holds
        // fewer than twice `maxInFlight` (or 128) entries, however fast queries come.
        if deadlines.count >= 2 * max(inFlight.count, 64) {
            deadlines.keep(where: isLive)
        }
        setTimer(for: deadline)
        // Every query of this tick of the event loop goes into one buffer, written and flushed once at its end: one
        // TLS record and one system call for a burst, not one each.
        if pending == nil { pending = context.channel.allocator.buffer(capacity: 64 * (2 + query.count)) }
        pending!.writeInteger(UInt16(query.count))
        pending!.writeInteger(id)
        pending!.writeBytes(query[2...])
        if !flushScheduled {
            flushScheduled = true
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.execute {
                let handler = bound.value
                handler.flushScheduled = false
                guard let context = handler.context, let buffer = handler.pending else { return }
                handler.pending = nil
                context.writeAndFlush(handler.wrapOutboundOut(buffer), promise: nil)
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var frame = unwrapInboundIn(data)
        framesRead += 1
        guard frame.readableBytes >= 12, let id = frame.getInteger(at: frame.readerIndex, as: UInt16.self) else {
            closed = true
            failAll(DoTTransportError.malformedFrame("\(frame.readableBytes) bytes, shorter than a DNS header"))
            context.close(promise: nil)
            return
        }
        // An answer to a query that has timed out already is dropped.
        guard let query = inFlight.removeValue(forKey: id) else { return }
        if inFlight.isEmpty { cancelTimer() }
        answered += 1
        var answer = frame.readBytes(length: frame.readableBytes)!
        answer[0] = UInt8(query.callerID >> 8)
        answer[1] = UInt8(query.callerID & 0xFF)
        query.promise.succeed(answer)
        sendWaiting()
        scheduleIdleClose()
    }

    /// Sends waiting queries while there is room in flight. One whose deadline has come fails as timed out, unsent: sent,
    /// it would only time out at once.
    private func sendWaiting() {
        guard let context, !closed, !waiting.isEmpty else { return }
        let now = context.eventLoop.now
        while inFlight.count < settings.maxInFlight, let next = waiting.popFirst() {
            next.timeout?.cancel()
            if next.deadline <= now {
                next.promise.fail(DoTTransportError.timedOut)
                continue
            }
            write(next.query, deadline: next.deadline, promise: next.promise, now: now, context: context)
        }
    }

    /// With nothing in flight, the connection closes after the idle timeout.
    private func scheduleIdleClose() {
        guard inFlight.isEmpty, waiting.isEmpty, idleClose == nil, !closed, let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        idleClose = context.eventLoop.scheduleTask(in: settings.idleTimeout) {
            let handler = bound.value
            handler.idleClose = nil
            guard handler.inFlight.isEmpty, handler.waiting.isEmpty else { return }
            handler.context?.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let ready {
            // During the handshake: the connection's own failure (a certificate, a peer that is not TLS).
            self.ready = nil
            ready.fail(error)
            closed = true
            failAll(error)
        }
        // After it, an error is the connection ending (TLS's unclean shutdown, a reset): the close fails what is in
        // flight as closed, so that a query on a reused connection is sent once more on a new one.
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let ready {
            self.ready = nil
            ready.fail(DoTTransportError.closedDuringHandshake)
        }
        closed = true
        idleClose?.cancel()
        idleClose = nil
        cancelTimer()
        for query in inFlight.values {
            query.promise.fail(DoTTransportError.closed(reused: query.reused))
        }
        inFlight = [:]
        failWaiting(DoTTransportError.closed(reused: answered > 0))
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // The pipeline is torn down: nothing may be left waiting on a promise no one will complete.
        closed = true
        if let ready {
            self.ready = nil
            ready.fail(DoTTransportError.closedDuringHandshake)
        }
        failAll(DoTTransportError.closed(reused: answered > 0))
        self.context = nil
    }

    private func failAll(_ error: any Error) {
        cancelTimer()
        for query in inFlight.values {
            query.promise.fail(error)
        }
        inFlight = [:]
        failWaiting(error)
    }

    private func failWaiting(_ error: any Error) {
        while let next = waiting.popFirst() {
            next.timeout?.cancel()
            next.promise.fail(error)
        }
    }
}

/// The deadlines of a connection's queries in flight, earliest first: a binary min-heap. A query answered is not
/// looked for here (that would cost a search per answer); its entry stays until it is the earliest or is pruned.
struct QueryDeadlines {
    struct Entry: Equatable {
        var deadline: NIODeadline
        var id: UInt16
        var serial: UInt64
    }

    private var heap: [Entry] = []

    var count: Int { heap.count }
    var earliest: Entry? { heap.first }

    mutating func insert(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeEarliest() {
        guard !heap.isEmpty else { return }
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        siftDown(from: 0)
    }

    /// Keeps only the entries `isLive` says are still wanted.
    mutating func keep(where isLive: (Entry) -> Bool) {
        heap.removeAll { !isLive($0) }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }

    mutating func removeAll() {
        heap.removeAll(keepingCapacity: true)
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var smallest = left
            if left + 1 < heap.count, heap[left + 1].deadline < heap[left].deadline { smallest = left + 1 }
            guard heap[smallest].deadline < heap[parent].deadline else { return }
            heap.swapAt(smallest, parent)
            parent = smallest
        }
    }
}
