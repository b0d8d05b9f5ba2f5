import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import NIOSSL
import Synchronization
import Testing

@testable import HTTPDNSClient

/// The HTTPS sources' HTTP/2 request handler against a server whose frames each test writes itself: the client's
/// pipeline as a connection has it once its checks passed (swift-nio-http2's handler, then ours), and a server that is
/// swift-nio-http2's handler with its checks of the peer off, on two embedded channels whose bytes are handed across.
@Suite("The HTTP/2 request handler against a scripted server")
struct HTTP2RequestHandlerTests {
    /// What the server's HTTP/2 handler reads.
    final class ServerFrames: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        var frames: [HTTP2Frame] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { frames.append(unwrapInboundIn(data)) }
    }

    /// The errors the client's HTTP/2 handler reports, on their way to the request handler.
    final class ClientErrors: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        var errors: [any Error] = []
        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            errors.append(error)
            context.fireErrorCaught(error)
        }
    }

    struct Pair {
        let client: EmbeddedChannel
        let clientErrors = ClientErrors()
        let server: EmbeddedChannel
        let handler: HTTP2RequestHandler
        let serverFrames: ServerFrames

        init(serverMaxStreams: Int = 1000, silenceToGiveUp: TimeAmount = .seconds(1)) throws {
            let settings = HTTP2ServiceConnection.Settings(
                tls: try NIOSSLContext(configuration: .makeClientConfiguration()), serverName: nil, pins: [],
                maxAnswerBytes: 64 * 1024, maxStreams: 1024, idleTimeout: .seconds(60), silenceToGiveUp: silenceToGiveUp
            )
            client = EmbeddedChannel()
            try client.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
            let (http2, requests) = HTTP2RequestHandler.handlers(settings: settings)
            try client.pipeline.syncOperations.addHandler(http2)
            try client.pipeline.syncOperations.addHandler(clientErrors)
            try client.pipeline.syncOperations.addHandler(requests)
            handler = requests
            server = EmbeddedChannel()
            serverFrames = ServerFrames()
            var connection = NIOHTTP2Handler.ConnectionConfiguration()
            connection.initialSettings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: serverMaxStreams)]
            connection.headerBlockValidation = .disabled
            connection.contentLengthValidation = .disabled
            var stream = NIOHTTP2Handler.StreamConfiguration()
            // The window test resets 300 streams in a row, which swift-nio-http2 would take for a rapid-reset attack.
            stream.streamResetFrameRateLimit.maximumCount = 10_000
            try server.pipeline.syncOperations.addHandler(
                NIOHTTP2Handler(mode: .server, connectionConfiguration: connection, streamConfiguration: stream)
            )
            try server.pipeline.syncOperations.addHandler(serverFrames)
            try server.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            try pump()
        }

        /// Hands the bytes each side wrote to the other until neither writes more.
        func pump() throws {
            for _ in 0..<100 {
                var moved = false
                (client.eventLoop as! EmbeddedEventLoop).run()
                while case .byteBuffer(let bytes)? = try client.readOutbound(as: IOData.self) {
                    try server.writeInbound(bytes)
                    moved = true
                }
                while case .byteBuffer(let bytes)? = try server.readOutbound(as: IOData.self) {
                    if client.isActive { try client.writeInbound(bytes) }
                    moved = true
                }
                if !moved { return }
            }
        }

        /// A request; `timeout` is on the embedded event loop's clock, which only `advanceTime(by:)` moves.
        func request(
            path: String = "/q",
            headers: [(String, String)] = [],
            timeout: TimeAmount = .seconds(3600)
        ) -> EventLoopFuture<HTTP2ServiceResponse> {
            let promise = client.eventLoop.makePromise(of: HTTP2ServiceResponse.self)
            handler.submit(
                HTTP2ServiceRequest(method: .GET, path: path, authority: "a.test", headers: headers, body: nil),
                deadline: client.eventLoop.now + timeout,
                promise: promise
            )
            return promise.futureResult
        }

        func respond(_ id: HTTP2StreamID, headers extra: [(String, String)] = [], body: ByteBuffer? = nil, end: Bool = true) {
            var headers = HPACKHeaders([(":status", "200")])
            for (name, value) in extra { headers.add(name: name, value: value) }
            server.write(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: body == nil && end))), promise: nil)
            if let body { server.write(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(body), endStream: end))), promise: nil) }
            server.flush()
        }

        /// How many WINDOW_UPDATEs of the connection the server read.
        var connectionWindowUpdates: Int {
            serverFrames.frames.filter { frame in
                if case .windowUpdate = frame.payload { frame.streamID == .rootStream } else { false }
            }.count
        }

        /// The IDs of the streams whose HEADERS the server read.
        var streamsOpened: [HTTP2StreamID] {
            serverFrames.frames.compactMap { frame in if case .headers = frame.payload { frame.streamID } else { nil } }
        }
    }

    /// The outcome of a request, once complete (nil while it is not): an embedded event loop runs the callback at once.
    static func outcome(_ future: EventLoopFuture<HTTP2ServiceResponse>) -> Result<HTTP2ServiceResponse, any Error>? {
        final class Seen: Sendable {
            let outcome = Mutex<Result<HTTP2ServiceResponse, any Error>?>(nil)
        }
        let seen = Seen()
        future.whenComplete { result in seen.outcome.withLock { $0 = result } }
        return seen.outcome.withLock { $0 }
    }

    static func body(_ future: EventLoopFuture<HTTP2ServiceResponse>) -> String? {
        guard case .success(let response)? = outcome(future) else { return nil }
        return String(buffer: response.body)
    }

    /// A stream whose answer breaks the protocol (a body shorter than its content-length) fails alone: the other
    /// request on the connection is answered, and the connection stays open.
    @Test func aStreamErrorFailsThatRequestOnly() throws {
        let pair = try Pair()
        let broken = pair.request()
        let innocent = pair.request()
        try pair.pump()
        pair.respond(1, headers: [("content-length", "10")], body: ByteBuffer(string: "12345"))
        try pair.pump()
        guard case .failure(let error)? = Self.outcome(broken) else {
            Issue.record("the broken answer was taken: \(String(describing: Self.outcome(broken)))")
            return
        }
        #expect("\(error)".contains("reset"), "\(error)")
        #expect(Self.outcome(innocent) == nil, "the other request waits for its answer")
        #expect(pair.client.isActive)
        pair.respond(3, body: ByteBuffer(string: "answer"))
        try pair.pump()
        #expect(Self.body(innocent) == "answer")
    }

    /// Answers over the limit are reset after 64 KiB, the rest of their DATA dropped by the HTTP/2 handler; all of it
    /// still counts against the connection's window, which is given back, so answers keep coming after 300 of them
    /// (16 MiB of window, 64 KiB more than read each time).
    @Test func theConnectionWindowIsGivenBackForDataOfResetStreams() throws {
        let pair = try Pair()
        let chunk = ByteBuffer(repeating: 0, count: 16 * 1024)
        for index in 0..<300 {
            let oversized = pair.request()
            try pair.pump()
            let id = HTTP2StreamID(1 + 2 * index)
            pair.server.write(HTTP2Frame(streamID: id, payload: .headers(.init(headers: HPACKHeaders([(":status", "200")])))), promise: nil)
            // 128 KiB, the stream's window: the client resets at 64 KiB, with the rest already on its way.
            for _ in 0..<8 { pair.server.write(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(chunk)))), promise: nil) }
            pair.server.flush()
            try pair.pump()
            guard case .failure(HTTP2TransportError.tooLarge)? = Self.outcome(oversized) else {
                Issue.record("answer \(index): \(String(describing: Self.outcome(oversized)))")
                return
            }
        }
        let small = pair.request()
        try pair.pump()
        pair.respond(HTTP2StreamID(1 + 2 * 300), body: ByteBuffer(string: "answer"))
        try pair.pump()
        #expect(Self.body(small) == "answer", "\(String(describing: Self.outcome(small)))")
        #expect(pair.client.isActive)
    }

    /// While the channel is not writable, the HTTP/2 handler holds back the WINDOW_UPDATE that tops up the connection's
    /// window, and goes on reporting the window without it: one top-up is sent once the channel can write, not one for
    /// each DATA frame read meanwhile (which would give the server the same room many times over).
    @Test func theConnectionWindowIsToppedUpOnceWhileTheChannelCannotWrite() throws {
        let pair = try Pair()
        let requests = (0..<100).map { _ in pair.request() }
        try pair.pump()
        #expect(pair.streamsOpened.count == 100)
        let before = pair.connectionWindowUpdates
        pair.client.isWritable = false
        pair.client.pipeline.fireChannelWritabilityChanged()
        // 128 KiB on each stream, 12.5 MiB in all: the window falls below half of its 16 MiB a third of the way through.
        let chunk = ByteBuffer(repeating: 0, count: 16 * 1024)
        for index in 0..<100 {
            let id = HTTP2StreamID(1 + 2 * index)
            pair.server.write(HTTP2Frame(streamID: id, payload: .headers(.init(headers: HPACKHeaders([(":status", "200")])))), promise: nil)
            for _ in 0..<8 { pair.server.write(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(chunk)))), promise: nil) }
        }
        pair.server.flush()
        try pair.pump()
        #expect(pair.connectionWindowUpdates == before, "nothing goes out while the channel cannot write")
        pair.client.isWritable = true
        pair.client.pipeline.fireChannelWritabilityChanged()
        try pair.pump()
        #expect(pair.connectionWindowUpdates == before + 1)
        for request in requests {
            guard case .failure(HTTP2TransportError.tooLarge)? = Self.outcome(request) else {
                Issue.record("\(String(describing: Self.outcome(request)))")
                return
            }
        }
    }

    /// With a server limit of two streams, four requests: two are sent, two wait inside the HTTP/2 handler. A GOAWAY
    /// fails the waiting two as unprocessed (to be sent again elsewhere), whether its last stream is 3 or, as a server
    /// that drains gracefully first sends, the highest possible; the server's answers to 1 and 3 still arrive, the
    /// HTTP/2 handler reports no error, and then the connection closes.
    @Test(arguments: [HTTP2StreamID(3), .maxID])
    func aGOAWAYWithRequestsWaitingForRoomKeepsTheStreamsTheServerTook(lastStreamID: HTTP2StreamID) throws {
        let pair = try Pair(serverMaxStreams: 2)
        let first = pair.request()
        let second = pair.request()
        let third = pair.request()
        let fourth = pair.request()
        try pair.pump()
        #expect(pair.streamsOpened == [1, 3], "the server's limit holds the others back")
        pair.server.writeAndFlush(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: nil)), promise: nil)
        try pair.pump()
        for waiting in [third, fourth] {
            guard case .failure(HTTP2TransportError.unprocessed)? = Self.outcome(waiting) else {
                Issue.record("\(String(describing: Self.outcome(waiting)))")
                continue
            }
        }
        pair.respond(1, body: ByteBuffer(string: "one"))
        try pair.pump()
        #expect(Self.body(first) == "one")
        #expect(pair.client.isActive, "stream 3 is still being answered")
        pair.respond(3, body: ByteBuffer(string: "three"))
        try pair.pump()
        #expect(Self.body(second) == "three")
        #expect(pair.streamsOpened == [1, 3], "the waiting requests never went out")
        #expect(pair.clientErrors.errors.isEmpty, "\(pair.clientErrors.errors)")
        #expect(!pair.client.isActive, "drained: closed")
    }

    /// A connection that closes with requests sent and requests the HTTP/2 handler still holds back (the server's
    /// limit of two streams reached): the sent ones fail as closed (the server may have processed them), the held-back
    /// ones as unprocessed, to be sent again elsewhere.
    @Test func aCloseFailsTheRequestsHeldBackAsUnprocessed() throws {
        let pair = try Pair(serverMaxStreams: 2)
        let requests = (0..<4).map { _ in pair.request() }
        try pair.pump()
        #expect(pair.streamsOpened == [1, 3])
        try pair.client.close().wait()
        for sent in requests[..<2] {
            guard case .failure(HTTP2TransportError.closed)? = Self.outcome(sent) else {
                Issue.record("sent: \(String(describing: Self.outcome(sent)))")
                continue
            }
        }
        for heldBack in requests[2...] {
            guard case .failure(HTTP2TransportError.unprocessed)? = Self.outcome(heldBack) else {
                Issue.record("held back: \(String(describing: Self.outcome(heldBack)))")
                continue
            }
        }
    }

    /// A request written while the channel cannot write waits inside the HTTP/2 handler; when the connection then
    /// goes, by a close or by the pipeline being torn down, it is unprocessed as well, and the one sent before is not.
    @Test(arguments: [true, false])
    func aRequestHeldBackWhileTheChannelCannotWriteIsUnprocessedWhenTheConnectionGoes(byClose: Bool) throws {
        let pair = try Pair()
        let sent = pair.request()
        try pair.pump()
        pair.client.isWritable = false
        pair.client.pipeline.fireChannelWritabilityChanged()
        let heldBack = pair.request()
        try pair.pump()
        #expect(pair.streamsOpened == [1])
        if byClose {
            try pair.client.close().wait()
        } else {
            try pair.client.pipeline.syncOperations.removeHandler(pair.handler).wait()
        }
        guard case .failure(HTTP2TransportError.closed)? = Self.outcome(sent) else {
            Issue.record("sent: \(String(describing: Self.outcome(sent)))")
            return
        }
        guard case .failure(HTTP2TransportError.unprocessed)? = Self.outcome(heldBack) else {
            Issue.record("held back: \(String(describing: Self.outcome(heldBack)))")
            return
        }
    }

    /// A connection error (a frame on stream 0 that must not be there) ends the connection: every request fails as
    /// closed.
    @Test func aConnectionErrorClosesTheConnection() throws {
        let pair = try Pair()
        let pending = pair.request()
        try pair.pump()
        // DATA on stream 0 is a connection error (RFC 9113 §6.1); written as bytes, as no HTTP/2 handler sends it.
        try pair.client.writeInbound(ByteBuffer(bytes: [0, 0, 1, 0x0, 0x0, 0, 0, 0, 0, 0x78]))
        try pair.pump()
        guard case .failure(HTTP2TransportError.closed)? = Self.outcome(pending) else {
            Issue.record("\(String(describing: Self.outcome(pending)))")
            return
        }
        #expect(!pair.client.isActive)
    }

    /// A request that times out with nothing at all read since it went out, out for longer than the silence that
    /// gives a connection up (1 s here): the server or the path to it is gone, and the connection is given up with it.
    @Test func aRequestTimingOutToASilentServerGivesTheConnectionUp() throws {
        let pair = try Pair(silenceToGiveUp: .seconds(1))
        let silent = pair.request(timeout: .seconds(2))
        try pair.pump()
        (pair.client.eventLoop as! EmbeddedEventLoop).advanceTime(by: .seconds(2))
        guard case .failure(HTTP2TransportError.timedOut)? = Self.outcome(silent) else {
            Issue.record("\(String(describing: Self.outcome(silent)))")
            return
        }
        #expect(!pair.client.isActive)
    }

    /// A request sent shortly before its deadline times out for want of time, not because the server went silent: out
    /// for less than the silence that gives a connection up, it fails alone (its stream reset), and the connection
    /// answers the next request.
    @Test func aRequestThatHadLittleTimeLeavesTheConnectionUp() throws {
        let pair = try Pair(silenceToGiveUp: .seconds(1))
        let hurried = pair.request(timeout: .milliseconds(100))
        try pair.pump()
        (pair.client.eventLoop as! EmbeddedEventLoop).advanceTime(by: .milliseconds(100))
        try pair.pump()
        guard case .failure(HTTP2TransportError.timedOut)? = Self.outcome(hurried) else {
            Issue.record("\(String(describing: Self.outcome(hurried)))")
            return
        }
        #expect(pair.client.isActive)
        let reset = pair.serverFrames.frames.contains { frame in
            if case .rstStream(.cancel) = frame.payload { frame.streamID == 1 } else { false }
        }
        #expect(reset, "the stream of the request that timed out is reset")
        let next = pair.request()
        try pair.pump()
        pair.respond(3, body: ByteBuffer(string: "answer"))
        try pair.pump()
        #expect(Self.body(next) == "answer")
    }

    /// A path with a query (new with every name looked up) is a literal the server does not add to its HPACK table,
    /// so neither side's table fills with paths seldom sent again; a bare path (a POST's) and the fields every request
    /// repeats are indexed.
    @Test func aPathWithAQueryIsNotAddedToTheHeaderTable() throws {
        let pair = try Pair()
        for index in 0..<3 {
            _ = pair.request(path: "/d?host=n\(index).example&query=4", headers: [("accept", "application/json")])
        }
        _ = pair.request(path: "/dns-query")
        try pair.pump()
        let blocks = pair.serverFrames.frames.compactMap { frame in if case .headers(let headers) = frame.payload { headers.headers } else { nil } }
        #expect(blocks.count == 4)
        for (index, block) in blocks.enumerated() {
            let fields = Dictionary(block.map { ($0.name, ($0.value, $0.indexable)) }, uniquingKeysWith: { first, _ in first })
            #expect(fields[":authority"]?.1 == .indexable)
            if index < 3 {
                #expect(fields[":path"]?.0 == "/d?host=n\(index).example&query=4")
                #expect(fields[":path"]?.1 == .nonIndexable)
                #expect(fields["accept"]?.1 == .indexable)
            } else {
                #expect(fields[":path"]?.0 == "/dns-query")
                #expect(fields[":path"]?.1 == .indexable)
            }
        }
    }
}
