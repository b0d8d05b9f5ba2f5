import HTTPTypes
import NIOCore
import NIOHTTP1

/// Encodes the router's responses (RFC 9112): the head through ``HTTP1ResponseHeadWriter``, as the front's own
/// answers are, and the body as it comes, framed by what is known of its length. Tells ``HTTP1FrontHandler`` when a
/// response ends.
///
/// Framing, as NIO's `HTTPResponseEncoder` did it before, with two corrections:
/// - a status that has no body (1xx, 204, 304) goes out without `content-length` or `transfer-encoding`, and a
///   response to HEAD without its body;
/// - a known `content-length` wins over `transfer-encoding`, which is dropped (RFC 9112 §6.2);
/// - an unknown length is sent chunked, except to an HTTP/1.0 client, which cannot read chunks (RFC 9112 §7.1):
///   it gets the body as it is, and the connection closes after it to end it.
///
/// Every write's promise completes in order: a part that sends nothing still goes down the pipeline, empty.
final class HTTP1ResponseEncoder: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = IOData

    private let front: HTTP1FrontHandler
    private var date = HTTPDate()
    /// How the body of the response being written goes out.
    private var framing = Framing.asIs
    /// A body ended by closing the connection has been written: nothing more may follow it.
    private var outputEnded = false

    private enum Framing {
        case asIs
        case chunked
        /// No body at all.
        case none
        /// As it is, ended by closing the connection.
        case untilClose
    }

    init(front: HTTP1FrontHandler) {
        self.front = front
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !outputEnded else {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(var head):
            let code = head.status.code
            let informational = code < 200
            // RFC 9110 §15.2: no 1xx to an HTTP/1.0 client.
            if informational && front.routerRespondsToHTTP10 { return writeNothing(context: context, promise: promise) }
            let framing: Framing
            if informational || code == 204 || code == 304 {
                head.headers.remove(name: "content-length")
                head.headers.remove(name: "transfer-encoding")
                framing = .none
            } else if front.routerRespondsToHEAD {
                if head.headers.contains(name: "content-length") { head.headers.remove(name: "transfer-encoding") }
                framing = .none
            } else if head.headers.contains(name: "content-length") {
                head.headers.remove(name: "transfer-encoding")
                framing = .asIs
            } else if front.routerRespondsToHTTP10 {
                head.headers.remove(name: "transfer-encoding")
                framing = .untilClose
            } else {
                head.headers.remove(name: "transfer-encoding")
                framing = .chunked
            }
            if !informational { self.framing = framing }
            var buffer = context.channel.allocator.buffer(capacity: 256)
            let described = ResponseHead(
                status: HTTPResponse.Status(code: Int(code), reasonPhrase: head.status.reasonPhrase),
                fields: .nio(head.headers)
            )
            HTTP1ResponseHeadWriter.write(described, chunked: framing == .chunked, date: date.current(), into: &buffer)
            context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
        case .body(let body):
            switch framing {
            case .none:
                writeNothing(context: context, promise: promise)
            case .asIs, .untilClose:
                context.write(wrapOutboundOut(body), promise: promise)
            case .chunked:
                // An empty chunk would end the body.
                guard body.readableBytes > 0 else { return writeNothing(context: context, promise: promise) }
                var size = context.channel.allocator.buffer(capacity: 12)
                size.writeString(String(body.readableBytes, radix: 16))
                size.writeStaticString("\r\n")
                context.write(wrapOutboundOut(.byteBuffer(size)), promise: nil)
                context.write(wrapOutboundOut(body), promise: nil)
                context.write(wrapOutboundOut(.byteBuffer(ByteBuffer(staticString: "\r\n"))), promise: promise)
            }
        case .end(let trailers):
            switch framing {
            case .chunked:
                var last = context.channel.allocator.buffer(capacity: 5)
                last.writeStaticString("0\r\n")
                for (name, value) in trailers ?? [:] {
                    last.writeString("\(name): \(value)\r\n")
                }
                last.writeStaticString("\r\n")
                context.write(wrapOutboundOut(.byteBuffer(last)), promise: promise)
            case .untilClose:
                // Whatever came after would read as more of this body: the front answers nothing more, and this
                // encoder writes nothing more.
                outputEnded = true
                front.endWithClose()
                let sent = promise ?? context.eventLoop.makePromise()
                writeNothing(context: context, promise: sent)
                context.flush()
                sent.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            case .asIs, .none:
                writeNothing(context: context, promise: promise)
            }
            framing = .asIs
            front.routerResponseEnded()
        }
    }

    private func writeNothing(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        context.write(wrapOutboundOut(.byteBuffer(context.channel.allocator.buffer(capacity: 0))), promise: promise)
    }
}
