import HTTPDNSSynchronization
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import NIOHPACK
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSServerTransport

/// The client's side of one HTTP/2 connection to the service's ``HTTP2ServerConnection``, on a
/// `NIOAsyncTestingChannel`: frames go in as bytes, and what the server writes is parsed back into frames, header
/// blocks decoded by swift-nio-http2's HPACK decoder (an implementation other than the server's encoder).
final class HTTP2TestClient {
    struct Frame: CustomStringConvertible {
        var type: HTTP2FrameType
        var flags: HTTP2FrameFlags
        var streamID: UInt32
        var payload: ByteBuffer
        /// A HEADERS frame's decoded header block, CONTINUATION frames included.
        var headers: HPACKHeaders?

        var errorCode: HTTP2ErrorCode? {
            switch type {
            case .rstStream: payload.getInteger(at: payload.readerIndex, as: UInt32.self).map(HTTP2ErrorCode.init)
            case .goAway: payload.getInteger(at: payload.readerIndex + 4, as: UInt32.self).map(HTTP2ErrorCode.init)
            default: nil
            }
        }

        var description: String { "\(type) stream \(streamID) flags \(flags.rawValue) \(errorCode.map { "\($0)" } ?? "")" }
    }

    /// A complete response on one stream.
    struct Response {
        var headers: HPACKHeaders
        var body: ByteBuffer
        /// RST_STREAM that followed the response, or ended the stream instead.
        var reset: HTTP2ErrorCode?

        var status: String? { headers.first(name: ":status") }
        var text: String { String(buffer: body) }
    }

    let channel: NIOAsyncTestingChannel
    private var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
    private var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
    private var unparsed = ByteBuffer()
    private var continuing: Frame?
    /// Frames read from the server and not yet taken by a test.
    private(set) var received: [Frame] = []

    /// The server's side, for tests that look at its state.
    let connection: HTTP2ServerConnection

    /// - Parameters:
    ///   - router: stands in for the service's router (fault injection); the service's own by default.
    ///   - cacheHits: stands in for the service's cache-hit and lookup path; the service's own by default.
    ///   - bodyBudget: the request body bytes the service holds, shared by every connection given it.
    init(
        _ fixture: ServiceFixture,
        router: (any RouterResponding)? = nil,
        cacheHits: (any CacheHitAnswering)? = nil,
        bodyBudget: RequestBudget = RequestBudget(),
        configure: (inout HTTP2ServerConnection.Configuration) -> Void = { _ in }
    ) async throws {
        var configuration = HTTP2ServerConnection.Configuration()
        configure(&configuration)
        let logger = Logger(label: "httpdns.test")
        let router =
            router
            ?? RouterBridge(
                responder: fixture.service.makeRouter().buildResponder(),
                logger: logger,
                maxBodyBytes: fixture.service.configuration.maxDNSMessageBytes
            )
        connection = HTTP2ServerConnection(
            configuration: configuration,
            bodyBudget: bodyBudget,
            cacheHits: cacheHits ?? fixture.service.cacheHitResponder(logger: logger),
            router: router,
            logger: logger
        )
        channel = NIOAsyncTestingChannel()
        // The testing channel only records the address; nothing is sent anywhere.
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9))
        // The handler is not Sendable: it is added on the testing loop, which runs its work inside this test's own
        // task, so nothing else can touch it meanwhile.
        nonisolated(unsafe) let handler = connection
        let testing = channel
        try await testing.testingEventLoop.executeInContext { try testing.pipeline.syncOperations.addHandler(handler) }
    }

    /// The client's preface and SETTINGS; checks the server's SETTINGS and its acknowledgement of the client's.
    func start(settings: [(UInt16, UInt32)] = []) async throws {
        var bytes = ByteBuffer(bytes: HTTP2Limits.clientPreface)
        bytes.writeImmutableBuffer(Self.settings(settings))
        try await send(bytes)
        let first = try await next()
        #expect(first.type == .settings && !first.flags.contains(.ack), "the server's preface is SETTINGS")
        let ack = try await next()
        #expect(ack.type == .settings && ack.flags.contains(.ack))
    }

    // MARK: Sending

    func send(_ bytes: ByteBuffer) async throws {
        try await channel.writeInbound(bytes)
    }

    static func frame(_ type: HTTP2FrameType, flags: HTTP2FrameFlags = [], stream: UInt32, payload: ByteBuffer = ByteBuffer()) -> ByteBuffer {
        var bytes = ByteBuffer()
        bytes.writeHTTP2Frame(type, flags: flags, streamID: stream, payload: payload)
        return bytes
    }

    static func settings(_ values: [(UInt16, UInt32)]) -> ByteBuffer {
        var payload = ByteBuffer()
        for (identifier, value) in values { payload.writeMultipleIntegers(identifier, value) }
        return frame(.settings, stream: 0, payload: payload)
    }

    /// A header block for `fields`, from the client's encoder (whose table the server's decoder must follow).
    func headerBlock(_ fields: [(String, String)]) throws -> ByteBuffer {
        var block = ByteBuffer()
        try encoder.encode(headers: HPACKHeaders(fields), to: &block)
        return block
    }

    static func requestFields(_ path: String, method: String = "GET", extra: [(String, String)] = []) -> [(String, String)] {
        [(":method", method), (":scheme", "https"), (":authority", "resolver.test"), (":path", path)] + extra
    }

    /// HEADERS for a request, ending the stream unless a body follows.
    func request(_ stream: UInt32, _ path: String, method: String = "GET", extra: [(String, String)] = [], endStream: Bool = true)
        async throws
    {
        let block = try headerBlock(Self.requestFields(path, method: method, extra: extra))
        try await send(Self.frame(.headers, flags: endStream ? [.endHeaders, .endStream] : .endHeaders, stream: stream, payload: block))
    }

    func data(_ stream: UInt32, _ text: String, endStream: Bool = true) async throws {
        try await send(Self.frame(.data, flags: endStream ? .endStream : [], stream: stream, payload: ByteBuffer(string: text)))
    }

    // MARK: Receiving

    /// The next frame the server writes, waiting for it (within a bound, so a missing frame fails the test).
    func next() async throws -> Frame {
        while received.isEmpty {
            try await readWrites(waiting: true)
        }
        return received.removeFirst()
    }

    /// Every frame written so far, without waiting.
    func drain() async throws -> [Frame] {
        try await readWrites(waiting: false)
        defer { received.removeAll() }
        return received
    }

    /// The response on `stream`, waiting for its end; frames of other streams stay for later.
    func response(_ stream: UInt32) async throws -> Response {
        var response = Response(headers: [:], body: ByteBuffer())
        while true {
            if let index = received.firstIndex(where: { $0.streamID == stream }) {
                let frame = received.remove(at: index)
                switch frame.type {
                case .headers:
                    if response.headers.isEmpty { response.headers = frame.headers ?? [:] }
                case .data:
                    var payload = frame.payload
                    response.body.writeBuffer(&payload)
                case .rstStream:
                    response.reset = frame.errorCode
                    return response
                default:
                    Issue.record("unexpected \(frame) on stream \(stream)")
                }
                if frame.flags.contains(.endStream) {
                    // A reset may follow at once (an answer to an unfinished request).
                    try await readWrites(waiting: false)
                    if let reset = received.firstIndex(where: { $0.streamID == stream && $0.type == .rstStream }) {
                        response.reset = received.remove(at: reset).errorCode
                    }
                    return response
                }
            } else {
                try await readWrites(waiting: true)
            }
        }
    }

    /// Waits for the channel to close, within a bound.
    func waitForClose() async throws {
        let channel = self.channel
        try await withTimeout { try await channel.closeFuture.get() }
    }

    private func readWrites(waiting: Bool) async throws {
        if waiting {
            let channel = self.channel
            var bytes = try await withTimeout { try await channel.waitForOutboundWrite(as: ByteBuffer.self) }
            unparsed.writeBuffer(&bytes)
        }
        while var bytes = try await channel.readOutbound(as: ByteBuffer.self) {
            unparsed.writeBuffer(&bytes)
        }
        while let header = HTTP2FrameHeader(peekingAt: unparsed), unparsed.readableBytes >= HTTP2FrameHeader.size + header.length {
            unparsed.moveReaderIndex(forwardBy: HTTP2FrameHeader.size)
            var frame = Frame(type: header.type, flags: header.flags, streamID: header.streamID, payload: unparsed.readSlice(length: header.length)!)
            switch frame.type {
            case .headers where !frame.flags.contains(.endHeaders):
                continuing = frame
                continue
            case .continuation:
                guard var first = continuing else {
                    Issue.record("CONTINUATION without HEADERS")
                    continue
                }
                var fragment = frame.payload
                first.payload.writeBuffer(&fragment)
                if !frame.flags.contains(.endHeaders) {
                    continuing = first
                    continue
                }
                continuing = nil
                frame = first
                frame.flags.insert(.endHeaders)
            default:
                break
            }
            if frame.type == .headers {
                var block = frame.payload
                frame.headers = try decoder.decodeHeaders(from: &block)
            }
            received.append(frame)
        }
    }
}

/// Runs `body`, failing if it takes longer than `seconds`: a frame the server should write and does not must fail
/// the test, not hang it. (The testing channel's waits cannot be cancelled, so on a timeout `body` is left
/// waiting; the test has failed by then.)
func withTimeout<T: Sendable>(seconds: Int = 10, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let once = ResumeOnce(continuation)
        let work = Task { once.resume(with: await Result(catching: body)) }
        Task {
            try? await Task.sleep(for: .seconds(seconds))
            work.cancel()
            once.resume(with: .failure(TimedOut()))
        }
    }
}

/// A continuation resumed by whichever of two tasks comes first.
private final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, any Error>?>

    init(_ continuation: CheckedContinuation<T, any Error>) {
        self.continuation = Mutex(continuation)
    }

    func resume(with result: Result<T, any Error>) {
        continuation.withLock { waiting in
            waiting?.resume(with: result)
            waiting = nil
        }
    }
}

struct TimedOut: Error {}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}

extension ByteBuffer {
    static func + (lhs: ByteBuffer, rhs: ByteBuffer) -> ByteBuffer {
        var joined = lhs
        joined.writeImmutableBuffer(rhs)
        return joined
    }
}
