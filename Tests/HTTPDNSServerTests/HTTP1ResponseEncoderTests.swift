import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSServerTransport

/// The router's responses on HTTP/1.1 (``HTTP1ResponseEncoder``): the head written as the front writes its own
/// answers, one `Date` made by the encoder, bodies framed by what is known of their length.
@Suite struct HTTP1ResponseEncoderTests {
    /// Sends a request for the router, writes `parts` as the router would, and returns every byte written.
    static let get = "GET /resolve?host=a.example HTTP/1.1\r\nHost: x\r\n\r\n"

    func routerResponse(_ request: String = Self.get, _ parts: [HTTPResponsePart]) throws -> String {
        let f = try ServiceFixture()
        let channel = try f.http1Channel()
        try channel.send(request)
        #expect(try channel.handedOn() >= 2)
        for part in parts { try channel.writeOutbound(part) }
        var text = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            if case .byteBuffer(let buffer) = data { text += String(buffer: buffer) }
        }
        return text
    }

    @Test func aBodyOfKnownLengthGoesAsItIsWithOneDateOfTheEncoders() throws {
        let text = try routerResponse(Self.get, [
            HTTPResponsePart.head(HTTPResponse(status: .ok, headerFields: [.contentLength: "5", .date: "Mon, 01 Jan 2001 00:00:00 GMT", .contentType: "text/plain"])),
            .body(ByteBuffer(string: "hel")),
            .body(ByteBuffer(string: "lo")),
            .end(nil),
        ])
        let (head, body) = try #require(split(text))
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(head.contains("\r\ncontent-length: 5") || head.contains("\r\nContent-Length: 5"))
        #expect(head.components(separatedBy: "Date: ").count == 2, "one Date: \(head)")
        #expect(!head.contains("2001"), "the router's date is not written")
        #expect(head.hasSuffix(" GMT"))
        #expect(body == "hello")
    }

    @Test func aBodyOfUnknownLengthIsChunkedWithItsTrailers() throws {
        let text = try routerResponse(Self.get, [
            HTTPResponsePart.head(HTTPResponse(status: .ok)),
            .body(ByteBuffer(string: "0123456789abcdef0")),
            .body(ByteBuffer()),
            .body(ByteBuffer(string: "x")),
            .end([HTTPField.Name("x-checksum")!: "1"]),
        ])
        let (head, body) = try #require(split(text))
        #expect(head.contains("\r\nTransfer-Encoding: chunked"))
        #expect(body == "11\r\n0123456789abcdef0\r\n1\r\nx\r\n0\r\nX-Checksum: 1\r\n\r\n" || body == "11\r\n0123456789abcdef0\r\n1\r\nx\r\n0\r\nx-checksum: 1\r\n\r\n", "\(body)")
    }

    @Test(arguments: [HTTPResponse.Status.noContent, .notModified])
    func statusesWithoutABodyGetNoFraming(status: HTTPResponse.Status) throws {
        let text = try routerResponse(Self.get, [HTTPResponsePart.head(HTTPResponse(status: status)), .body(ByteBuffer(string: "ignored")), .end(nil)])
        let (head, body) = try #require(split(text))
        #expect(head.hasPrefix("HTTP/1.1 \(status.code) "))
        #expect(!head.contains("Transfer-Encoding"))
        #expect(body.isEmpty)
    }

    /// An HTTP/1.0 client cannot read chunks: it gets the body as it is, and the close ends it.
    @Test func anHTTP10ClientGetsNoChunksAndTheCloseEndsTheBody() throws {
        let f = try ServiceFixture()
        let channel = try f.http1Channel()
        try channel.send("GET /resolve?host=a.example HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(try channel.handedOn() >= 2)
        for part in [HTTPResponsePart.head(HTTPResponse(status: .ok)), .body(ByteBuffer(string: "plain")), .end(nil)] {
            try channel.writeOutbound(part)
        }
        var text = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            if case .byteBuffer(let buffer) = data { text += String(buffer: buffer) }
        }
        let (head, body) = try #require(split(text))
        #expect(!head.contains("Transfer-Encoding"))
        #expect(body == "plain")
        #expect(!channel.isActive, "the connection closed to end the body")
    }

    /// After a body that the close ends, nothing may be written: it would read as more of the body.
    @Test func nothingFollowsABodyEndedByTheClose() throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        let channel = try f.http1Channel()
        try channel.send("GET /resolve?host=a.example HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + HTTP1FrontTests.hit)
        #expect(try channel.handedOn() == 4, "the hit behind it waits for the router, so it is handed on too")
        for part in [HTTPResponsePart.head(HTTPResponse(status: .ok)), .body(ByteBuffer(string: "plain")), .end(nil)] {
            try channel.writeOutbound(part)
        }
        let failed = channel.eventLoop.makePromise(of: Void.self)
        channel.write(HTTPResponsePart.head(HTTPResponse(status: .ok)), promise: failed)
        channel.flush()
        #expect(throws: ChannelError.self) { try failed.futureResult.wait() }
        var text = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            if case .byteBuffer(let buffer) = data { text += String(buffer: buffer) }
        }
        #expect(text.hasSuffix("\r\n\r\nplain"), "\(text)")
    }

    @Test func aHeadResponseNeverCarriesBothLengthHeadersAndHTTP10ClientsGetNo1xx() throws {
        let head = try routerResponse("HEAD /resolve?host=a.example HTTP/1.1\r\nHost: x\r\n\r\n", [
            HTTPResponsePart.head(HTTPResponse(status: .ok, headerFields: [.contentLength: "9", .transferEncoding: "chunked"])),
            .end(nil),
        ])
        #expect(!head.lowercased().contains("transfer-encoding"), "\(head)")
        let continued = try routerResponse("POST /dns-query HTTP/1.0\r\nContent-Length: 0\r\n\r\n", [
            HTTPResponsePart.head(HTTPResponse(status: .continue)),
            .head(HTTPResponse(status: .ok, headerFields: [.contentLength: "0"])),
            .end(nil),
        ])
        #expect(continued.hasPrefix("HTTP/1.1 200 OK"), "\(continued)")
    }

    @Test func aKnownLengthWinsOverTransferEncodingAndBodylessStatusesLoseBoth() throws {
        let both = try routerResponse(Self.get, [
            HTTPResponsePart.head(HTTPResponse(status: .ok, headerFields: [.contentLength: "2", .transferEncoding: "chunked"])),
            .body(ByteBuffer(string: "ok")),
            .end(nil),
        ])
        let (head, body) = try #require(split(both))
        #expect(!head.lowercased().contains("transfer-encoding"))
        #expect(body == "ok")
        let noContent = try routerResponse(Self.get, [HTTPResponsePart.head(HTTPResponse(status: .noContent, headerFields: [.contentLength: "0"])), .end(nil)])
        #expect(!noContent.lowercased().contains("content-length"), "\(noContent)")
    }

    @Test func headerNamesKeepTheirCase() throws {
        let text = try routerResponse(Self.get, [
            HTTPResponsePart.head(HTTPResponse(status: .tooManyRequests, headerFields: [.retryAfter: "3", .contentLength: "0"])),
            .end(nil),
        ])
        #expect(text.contains("\r\nRetry-After: 3\r\n"), "\(text)")
    }

    /// Every promise completes, in the order the writes were made, also for parts that send nothing.
    @Test func promisesCompleteInOrder() throws {
        let f = try ServiceFixture()
        let channel = try f.http1Channel()
        try channel.send("HEAD /resolve?host=a.example HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try channel.handedOn() >= 2)
        let completed = NIOLockedValueBox<[Int]>([])
        let parts = [HTTPResponsePart.head(HTTPResponse(status: .ok)), .body(ByteBuffer(string: "dropped")), .body(ByteBuffer()), .end(nil)]
        for (index, part) in parts.enumerated() {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            promise.futureResult.whenSuccess { completed.withLockedValue { $0.append(index) } }
            channel.write(part, promise: promise)
        }
        channel.flush()
        #expect(completed.withLockedValue { $0 } == [0, 1, 2, 3])
    }

    private func split(_ text: String) -> (head: String, body: String)? {
        guard let end = text.range(of: "\r\n\r\n") else { return nil }
        return (String(text[..<end.lowerBound]), String(text[end.upperBound...]))
    }
}
