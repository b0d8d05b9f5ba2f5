import HTTPTypes
import NIOCore
import NIOHPACK
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSServerTransport

/// The HTTP/2 pieces under ``HTTP2ServerConnection``: response header blocks, read back by swift-nio-http2's
/// HPACK decoder; header blocks split over CONTINUATION frames; and request header validation.
@Suite struct HTTP2WireTests {
    private func decode(_ block: ByteBuffer, with decoder: inout HPACKDecoder) throws -> [(String, String)] {
        var block = block
        return try decoder.decodeHeaders(from: &block).map { ($0.name, $0.value) }
    }

    @Test(arguments: [200, 204, 304, 400, 404, 500, 413, 429, 503, 999])
    func everyStatusDecodes(_ code: Int) throws {
        var encoder = HPACKResponseEncoder()
        var block = ByteBuffer()
        encoder.writeHead(ResponseHead(status: HTTPResponse.Status(code: code), fields: .typed([:])), date: "Thu, 01 Jan 1970 00:00:00 GMT", into: &block)
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        #expect(try decode(block, with: &decoder).map(\.1) == [String(code), "Thu, 01 Jan 1970 00:00:00 GMT"])
    }

    @Test func aReplysFieldsDecode() throws {
        var encoder = HPACKResponseEncoder()
        let long = String(repeating: "v", count: 300)  // a length past the 7-bit prefix
        var fields = HTTPFields()
        fields[.retryAfter] = "2"
        fields[HTTPField.Name("x-long")!] = long
        let reply = Reply(
            status: .tooManyRequests,
            contentType: "application/json",
            cacheControl: .maxAge(86_400),
            otherFields: fields,
            body: ByteBuffer(string: "{}")
        )
        var block = ByteBuffer()
        encoder.writeHead(ResponseHead(reply), date: "Thu, 01 Jan 1970 00:00:00 GMT", into: &block)
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        let decoded = try decode(block, with: &decoder)
        #expect(decoded.map(\.0) == [":status", "content-type", "cache-control", "retry-after", "x-long", "content-length", "date"])
        #expect(decoded.map(\.1) == ["429", "application/json", "max-age=86400", "2", long, "2", "Thu, 01 Jan 1970 00:00:00 GMT"])
    }

    @Test func fieldsHTTP2ForbidsAreLeftOut() throws {
        var encoder = HPACKResponseEncoder()
        // A router's `date` is left out too: the encoder writes its own.
        let fields: HTTPFields = [.connection: "close", .transferEncoding: "chunked", .contentType: "text/plain", .date: "Mon, 01 Jan 2001 00:00:00 GMT"]
        var block = ByteBuffer()
        encoder.writeHead(ResponseHead(status: .ok, fields: .typed(fields)), date: "Thu, 01 Jan 1970 00:00:00 GMT", into: &block)
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        #expect(try decode(block, with: &decoder).map(\.0) == [":status", "content-type", "date"])
        #expect(try decode(block, with: &decoder).last?.1 == "Thu, 01 Jan 1970 00:00:00 GMT")
    }

    @Test func theTableIsEmptiedOnTheFirstBlockAndAfterTheClientChangesItsSize() throws {
        var encoder = HPACKResponseEncoder()
        var blocks: [ByteBuffer] = []
        for change in [false, false, true] {
            if change { encoder.tableSizeSettingChanged() }
            var block = ByteBuffer()
            encoder.writeHead(ResponseHead(status: .ok, fields: .typed([:])), date: "Thu, 01 Jan 1970 00:00:00 GMT", into: &block)
            blocks.append(block)
        }
        #expect(blocks.map { $0.getInteger(at: 0, as: UInt8.self) } == [0x20, 0x88, 0x20], "a size update to 0, then :status 200")
        // A decoder whose table the client set to 0 accepts them all.
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator(), maxDynamicTableSize: 0)
        for block in blocks { #expect(try decode(block, with: &decoder).map(\.1) == ["200", "Thu, 01 Jan 1970 00:00:00 GMT"]) }
    }

    @Test func aHeaderBlockLargerThanAFrameContinues() throws {
        var buffer = ByteBuffer(string: "before")
        let start = buffer.reserveHTTP2FrameHeader()
        buffer.writeRepeatingByte(0xAB, count: 40_000)
        buffer.completeHTTP2Headers(startingAt: start, streamID: 7, endStream: true, maxFrameSize: 16_384)
        #expect(buffer.readString(length: 6) == "before")
        var frames: [(HTTP2FrameHeader, ByteBuffer)] = []
        while let header = HTTP2FrameHeader(peekingAt: buffer) {
            buffer.moveReaderIndex(forwardBy: HTTP2FrameHeader.size)
            frames.append((header, buffer.readSlice(length: header.length)!))
        }
        #expect(buffer.readableBytes == 0)
        #expect(frames.map(\.0.type) == [.headers, .continuation, .continuation])
        #expect(frames.map(\.0.length) == [16_384, 16_384, 7_232])
        #expect(frames.map(\.0.flags) == [.endStream, [], .endHeaders])
        #expect(frames.allSatisfy { $0.0.streamID == 7 && $0.1.readableBytesView.allSatisfy { $0 == 0xAB } })
    }

    @Test func aSmallHeaderBlockIsOneFrame() {
        var buffer = ByteBuffer()
        let start = buffer.reserveHTTP2FrameHeader()
        buffer.writeBytes([0x88])
        buffer.completeHTTP2Headers(startingAt: start, streamID: 1, endStream: false, maxFrameSize: 16_384)
        #expect(HTTP2FrameHeader(peekingAt: buffer) == HTTP2FrameHeader(length: 1, type: .headers, flags: .endHeaders, streamID: 1))
    }

    @Test func aValidRequestHead() throws {
        let head = try HTTP2RequestHead(
            validating: HPACKHeaders([
                (":method", "POST"), (":scheme", "https"), (":authority", "resolver.test"), (":path", "/dns-query"),
                ("content-type", "application/dns-message"), ("content-length", "33"), ("te", "trailers"),
            ])
        )
        #expect(head.method == "POST" && head.path == "/dns-query" && head.contentLength == 33)
        let request = head.httpRequest()
        #expect(request.method == .post && request.authority == "resolver.test" && request.scheme == "https")
        #expect(request.headerFields[.contentType] == "application/dns-message")
        #expect(try HTTP2RequestHead(validating: HPACKHeaders([(":method", "OPTIONS"), (":scheme", "https"), (":path", "*")])).path == "*")
    }

    @Test(arguments: [
        [(":method", "GET"), (":scheme", "https"), (":path", "d?host=x")],
        [(":method", "GET"), (":scheme", "https"), (":path", "*")],
        [(":method", "G T"), (":scheme", "https"), (":path", "/")],
        [(":method", "GET"), (":path", "/")],
        [(":method", "GET"), (":scheme", "https"), (":path", "/"), ("content-length", "+5")],
        [(":method", "GET"), (":scheme", "https"), (":path", "/"), ("content-length", "1"), ("content-length", "2")],
        [(":method", "GET"), (":scheme", "https"), (":path", "/"), ("x-a", " padded")],
        [(":method", "GET"), (":scheme", "https"), (":path", "/"), ("x-a", "nul\u{0}")],
        [(":method", "GET"), (":scheme", "https"), (":path", "/"), ("bad name", "1")],
        [(":method", "GET"), (":scheme", "https"), (":path", "/"), ("upgrade", "h2c")],
        [(":method", "GET"), (":scheme", "https"), (":path", "/"), (":protocol", "websocket")],
    ])
    func malformedRequestHeads(_ fields: [(String, String)]) {
        #expect(throws: HTTP2MalformedRequest.self) { try HTTP2RequestHead(validating: HPACKHeaders(fields)) }
    }
}
