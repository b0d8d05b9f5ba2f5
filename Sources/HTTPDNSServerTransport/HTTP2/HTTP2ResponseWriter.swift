import HTTPTypes
import HummingbirdCore
import NIOCore

/// Where a router's response to an HTTP/2 request goes: each part hops to the connection's event loop
/// (``HTTP2ServerConnection/respond(streamID:head:body:end:trailers:eventLoop:)``), the head with the first of
/// them. A body buffer is held until the next call, so the common response (one buffer, then the end) takes one
/// hop and goes out as HEADERS and one DATA frame with END_STREAM. A write returns once its bytes have gone out,
/// within the client's flow-control windows, and throws once the stream is gone.
struct HTTP2ResponseWriter: ResponseBodyWriter {
    let connection: NIOLoopBound<HTTP2ServerConnection>
    let eventLoop: any EventLoop
    let streamID: UInt32
    /// The response's head, until it has been sent.
    private var head: HTTPResponse?
    private var held: ByteBuffer?

    init(connection: NIOLoopBound<HTTP2ServerConnection>, eventLoop: any EventLoop, streamID: UInt32, head: HTTPResponse) {
        self.connection = connection
        self.eventLoop = eventLoop
        self.streamID = streamID
        self.head = head
    }

    mutating func write(_ buffer: ByteBuffer) async throws {
        if let held { try await send(held, end: false, trailers: nil) }
        held = buffer
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        try await send(held, end: true, trailers: trailingHeaders)
    }

    private mutating func send(_ body: ByteBuffer?, end: Bool, trailers: HTTPFields?) async throws {
        let (connection, eventLoop, streamID, head) = (connection, eventLoop, streamID, head)
        self.head = nil
        held = nil
        try await eventLoop.flatSubmit {
            connection.value.respond(streamID: streamID, head: head, body: body, end: end, trailers: trailers, eventLoop: eventLoop)
        }.get()
    }
}
