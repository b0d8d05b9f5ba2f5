import HTTPDNSCore
import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import NIOSSL
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSServerTransport

/// The front of HTTP/1.1 connections (``HTTP1FrontHandler``), in the pipeline the service builds, fed raw bytes:
/// hits answered as one response, everything else handed on, responses in order, idle timeout, graceful shutdown.
@Suite struct HTTP1FrontTests {
    static let hit = "GET /d?host=api.example.test HTTP/1.1\r\nHost: x\r\n\r\n"
    static let miss = "GET /d?host=v4.example.test HTTP/1.1\r\nHost: x\r\n\r\n"

    @Test func aHitIsOneResponseWrittenAtTheFront() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.prime("api.example.test")
        let channel = try f.http1Channel()
        try channel.send(Self.hit)
        #expect(try channel.handedOn() == 0)
        let response = try channel.sent()
        let body = #"{"host":"api.example.test","ips":["192.0.2.10"],"ttl":60,"origin_ttl":60}"#
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(response.contains("\r\nContent-Type: application/json\r\n"))
        #expect(response.contains("\r\nCache-Control: max-age=60\r\n"))
        #expect(response.contains("\r\nContent-Length: \(body.utf8.count)\r\n"))
        #expect(response.contains("\r\nDate: "))
        #expect(response.hasSuffix(" GMT\r\n\r\n" + body))
    }

    @Test func whatTheRouterMustAnswerIsHandedOn() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.prime("api.example.test")
        // Each on a connection of its own: nothing may follow a request that closes its connection.
        for request in [
            Self.miss,
            "GET /d?host=api.example.test HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            "GET /d?host=api.example.test HTTP/1.0\r\n\r\n",
            "POST /d?host=api.example.test HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
            "GET /resolve?host=api.example.test HTTP/1.1\r\nHost: x\r\n\r\n",
        ] {
            let channel = try f.http1Channel()
            try channel.send(request)
            #expect(try channel.handedOn() >= 2, "\(request.prefix(40))")
            try channel.answerAsRouter()
            #expect(try channel.sent().hasPrefix("HTTP/1.1 204 No Content\r\n"))
        }
    }

    @Test func aHitBehindAPendingRequestWaitsItsTurn() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.prime("api.example.test")
        let channel = try f.http1Channel()
        try channel.send(Self.miss + Self.hit)
        #expect(try channel.handedOn() == 4, "both requests, head and end, went to the router")
        #expect(try channel.readOutbound(as: IOData.self) == nil)
        try channel.answerAsRouter()
        try channel.answerAsRouter()
        #expect(try channel.sent().hasPrefix("HTTP/1.1 204"))
        #expect(try channel.sent().hasPrefix("HTTP/1.1 204"))
        try channel.send(Self.hit)
        #expect(try channel.handedOn() == 0)
        #expect(try channel.sent().hasPrefix("HTTP/1.1 200 OK"))
    }

    @Test func aResponseToHEADGoesOutWithoutItsBody() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.prime("api.example.test")
        let channel = try f.http1Channel()
        try channel.send("HEAD /d?host=api.example.test HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try channel.handedOn() == 2, "HEAD is the router's")
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .notFound, headerFields: [.contentLength: "5"])))
        try channel.writeOutbound(HTTPResponsePart.body(ByteBuffer(string: "hello")))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        var bytes = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            if case .byteBuffer(let buffer) = data { bytes += String(buffer: buffer) }
        }
        #expect(bytes.hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        #expect(bytes.hasSuffix("\r\n\r\n"), "no body after the head: \(bytes)")
        // Without a length the encoder announces a chunked body; its end must not follow either.
        try channel.send("HEAD /nowhere HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try channel.handedOn()
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .notFound)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        var chunked = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            if case .byteBuffer(let buffer) = data { chunked += String(buffer: buffer) }
        }
        #expect(chunked.hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        let afterHead = chunked.components(separatedBy: "\r\n\r\n").dropFirst()
        #expect(afterHead == [""], "nothing after the head: \(chunked)")
        // The connection stays in step: the next hit is answered at the front.
        try channel.send(Self.hit)
        #expect(try channel.handedOn() == 0)
        #expect(try channel.sent().hasPrefix("HTTP/1.1 200 OK"))
    }

    @Test func theEndOfInputStillReachesTheRoutersSide() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.prime("api.example.test")
        let channel = try f.http1Channel()
        let recorder = EventRecorder()
        try channel.pipeline.syncOperations.addHandler(recorder)
        try channel.send(Self.hit + Self.hit)
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        channel.pipeline.fireErrorCaught(NIOSSLError.uncleanShutdown)
        #expect(try channel.sent().hasPrefix("HTTP/1.1 200 OK"))
        #expect(try channel.sent().hasPrefix("HTTP/1.1 200 OK"))
        #expect(recorder.inputClosed)
        #expect(recorder.uncleanShutdown)
    }

    @Test func anIdleConnectionClosesAndActivityKeepsItOpen() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.prime("api.example.test")
        let channel = try f.http1Channel(idleTimeout: .seconds(60))
        channel.embeddedEventLoop.advanceTime(by: .seconds(50))
        try channel.send(Self.hit)
        _ = try channel.sent()
        channel.embeddedEventLoop.advanceTime(by: .seconds(50))
        #expect(channel.isActive, "a hit 50 s ago is activity")
        channel.embeddedEventLoop.advanceTime(by: .seconds(11))
        #expect(!channel.isActive, "closed 60 s after the last response")
    }

    @Test func aRequestHeadNotCompleteWithinTheHeaderTimeoutGets408AndTheConnectionCloses() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        let channel = try f.http1Channel(idleTimeout: .seconds(60), headerTimeout: .seconds(10))
        // An open connection that has sent nothing is idle, not late: only the idle timeout closes it.
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(channel.isActive)
        try channel.send("GET /d?host=exam")
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive, "within the header timeout of the first byte")
        try channel.send("ple.test HTTP/1.1\r\nHo")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(try channel.sent().hasPrefix("HTTP/1.1 408 Request Timeout\r\n"), "more bytes do not extend the deadline")
        #expect(!channel.isActive)
    }

    @Test func aStalledSecondHeadGets408AfterTheFirstIsAnswered() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.prime("api.example.test")
        let channel = try f.http1Channel(idleTimeout: .seconds(60), headerTimeout: .seconds(10))
        try channel.send(Self.hit)
        #expect(try channel.sent().hasPrefix("HTTP/1.1 200 OK"))
        // Line breaks between requests start nothing; a request line does.
        try channel.send("\r\n")
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        #expect(channel.isActive)
        try channel.send("GET /d?host=api")
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(try channel.sent().hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
        #expect(!channel.isActive)
    }

    @Test func aStalledHeadBehindAnUnansweredRequestWaitsForItsResponseThenCloses() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        let channel = try f.http1Channel(idleTimeout: .seconds(60), headerTimeout: .seconds(10))
        try channel.send(Self.miss)
        _ = try channel.handedOn()
        try channel.send("GET /d?host=api")
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(channel.isActive, "the router's response is not cut off")
        try channel.answerAsRouter()
        #expect(try channel.sent().hasPrefix("HTTP/1.1 204"))
        #expect(!channel.isActive, "closed after it, without a 408 in the middle")
    }

    @Test func theHeaderTimeoutStartsAgainWithEachRequest() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.prime("api.example.test")
        let channel = try f.http1Channel(idleTimeout: .seconds(60), headerTimeout: .seconds(10))
        for _ in 0..<3 {
            try channel.send("GET /d?host=api.example.test HTTP/1.1\r\n")
            channel.embeddedEventLoop.advanceTime(by: .seconds(8))
            try channel.send("Host: x\r\n\r\n")
            #expect(try channel.sent().hasPrefix("HTTP/1.1 200 OK"))
        }
        #expect(channel.isActive, "each head came within 10 s of its own first byte")
    }

    @Test func aRequestBeingAnsweredIsNotIdleness() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        let channel = try f.http1Channel(idleTimeout: .seconds(60))
        try channel.send(Self.miss)
        _ = try channel.handedOn()
        channel.embeddedEventLoop.advanceTime(by: .seconds(120))
        #expect(channel.isActive, "the router is still answering")
        try channel.answerAsRouter()
        _ = try channel.sent()
        channel.embeddedEventLoop.advanceTime(by: .seconds(61))
        #expect(!channel.isActive)
    }

    @Test func gracefulShutdownClosesIdleConnectionsAtOnceAndBusyOnesAfterTheirResponse() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        let idle = try f.http1Channel()
        idle.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(!idle.isActive)

        let busy = try f.http1Channel()
        try busy.send(Self.miss)
        _ = try busy.handedOn()
        busy.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(busy.isActive, "a request is in progress")
        try busy.answerAsRouter()
        #expect(try busy.sent().hasPrefix("HTTP/1.1 204"), "the response goes out before the close")
        #expect(!busy.isActive)
    }
}

/// Notes whether the end of input reached the router's side.
private final class EventRecorder: ChannelInboundHandler {
    typealias InboundIn = HTTPRequestPart
    var inputClosed = false
    var uncleanShutdown = false

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent { inputClosed = true }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if case .uncleanShutdown = error as? NIOSSLError { uncleanShutdown = true }
    }
}

extension ServiceFixture {
    /// An active channel with the service's HTTP/1.1 pipeline; the tail stands in for the router.
    func http1Channel(idleTimeout: Duration = .seconds(60), headerTimeout: Duration = .seconds(10)) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try ServiceHTTP1Channel.configure(
            channel.pipeline.syncOperations,
            cacheHits: service.cacheHitResponder(logger: Logger(label: "httpdns.test")),
            idleTimeout: idleTimeout,
            headerTimeout: headerTimeout
        )
        // EmbeddedChannel only records the address; nothing is sent anywhere.
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        return channel
    }
}

extension EmbeddedChannel {
    func send(_ text: String) throws {
        try writeInbound(ByteBuffer(string: text))
    }

    /// How many request parts reached the router's side.
    func handedOn() throws -> Int {
        var count = 0
        while try readInbound(as: HTTPRequestPart.self) != nil { count += 1 }
        return count
    }

    /// Answers the oldest request handed on, as the router would: 204, no body.
    func answerAsRouter() throws {
        try writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .noContent)))
        try writeOutbound(HTTPResponsePart.end(nil))
    }

    /// The bytes of the next response written to the socket, as text.
    func sent() throws -> String {
        var text = ""
        while let data = try readOutbound(as: IOData.self) {
            guard case .byteBuffer(let buffer) = data else { continue }
            text += String(buffer: buffer)
            if text.contains("\r\n\r\n") { break }
        }
        return text
    }
}
