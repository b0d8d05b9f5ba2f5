import HTTPTypes
import NIOCore

/// What an ``HTTP2ServerConnection`` sends, gathered in one buffer between flushes, with header blocks encoded on
/// the way. Kept as one value so that a response costs the connection one access to its state rather than one
/// per piece (buffer, encoder, clock), each of which the runtime would check for exclusivity.
struct HTTP2Output {
    /// The frames written since the last flush.
    var buffer: ByteBuffer
    private var encoder = HPACKResponseEncoder()
    private var date = HTTPDate()
    /// The client's SETTINGS_MAX_FRAME_SIZE: header blocks larger than this continue in CONTINUATION frames.
    var maxFrameSize = HTTP2Limits.defaultMaxFrameSize

    init(buffer: ByteBuffer) {
        self.buffer = buffer
    }

    /// The client has sent SETTINGS_HEADER_TABLE_SIZE.
    mutating func tableSizeSettingChanged() {
        encoder.tableSizeSettingChanged()
    }

    /// A reply made on the event loop: HEADERS (with `content-length` and `date`), then, when `withBody`, the body
    /// in one DATA frame that ends the stream. Without `withBody` the body is the caller's to send.
    mutating func writeReply(_ reply: Reply, streamID: UInt32, withBody: Bool) {
        let start = buffer.reserveHTTP2FrameHeader()
        encoder.writeHead(ResponseHead(reply), date: date.current(), into: &buffer)
        let bodyLength = reply.body.readableBytes
        buffer.completeHTTP2Headers(startingAt: start, streamID: streamID, endStream: bodyLength == 0, maxFrameSize: maxFrameSize)
        if withBody, bodyLength > 0 {
            buffer.writeHTTP2Frame(.data, flags: .endStream, streamID: streamID, payload: reply.body)
        }
    }

    /// The head of a response from the router, with this connection's `date`.
    mutating func writeResponseHead(_ head: HTTPResponse, streamID: UInt32, endStream: Bool) {
        let start = buffer.reserveHTTP2FrameHeader()
        encoder.writeHead(ResponseHead(status: head.status, fields: .typed(head.headerFields)), date: date.current(), into: &buffer)
        buffer.completeHTTP2Headers(startingAt: start, streamID: streamID, endStream: endStream, maxFrameSize: maxFrameSize)
    }

    /// Trailers, which end the stream.
    mutating func writeTrailers(_ fields: HTTPFields, streamID: UInt32) {
        let start = buffer.reserveHTTP2FrameHeader()
        encoder.writeTrailers(fields, into: &buffer)
        buffer.completeHTTP2Headers(startingAt: start, streamID: streamID, endStream: true, maxFrameSize: maxFrameSize)
    }

    /// Hands over what has been written, leaving an empty buffer from `allocator` in its place.
    mutating func take(allocator: ByteBufferAllocator) -> ByteBuffer {
        defer { buffer = allocator.buffer(capacity: 4096) }
        return buffer
    }
}
