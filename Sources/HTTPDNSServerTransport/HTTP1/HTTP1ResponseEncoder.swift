import HTTPTypes
import NIOCore
import NIOHTTP1

/// Encodes the router's responses (RFC 9112): the head through ``HTTP1ResponseHeadWriter``, as the front's own
/// answers are, and the body as it comes, chunked when its length is not known. Tells ``HTTP1FrontHandler`` when a
/// response ends, and writes no body for a response to HEAD or one whose status has none (1xx, 204, 304). An
/// HTTP/1.0 client gets a body of unknown length as it is, ended by the connection's close.
final class HTTP1ResponseEncoder: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = IOData

    private let front: HTTP1FrontHandler
    private var date = HTTPDate()
    /// How the body of the response being written goes out.
    private var framing = Framing.asIs

    private enum Framing {
        case asIs, chunked, none
    }

    init(front: HTTP1FrontHandler) {
        self.front = front
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            let code = head.status.code
            let informational = code < 200
            let bodyless = informational || code == 204 || code == 304 || front.routerRespondsToHEAD
            let knowsLength = head.headers.contains(name: "content-length")
            let alreadyChunked = head.headers[canonicalForm: "transfer-encoding"].contains("chunked")
            let chunked = !bodyless && (alreadyChunked || (!knowsLength && !front.routerRespondsToHTTP10))
            if !informational { framing = bodyless ? .none : chunked ? .chunked : .asIs }
            var buffer = context.channel.allocator.buffer(capacity: 256)
            let described = ResponseHead(status: HTTPResponse.Status(code: Int(code), reasonPhrase: head.status.reasonPhrase), fields: .nio(head.headers))
            HTTP1ResponseHeadWriter.write(described, chunked: chunked && !alreadyChunked, date: date.current(), into: &buffer)
            context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
        case .body(let body):
            switch framing {
            case .none:
                promise?.succeed()
            case .asIs:
                context.write(wrapOutboundOut(body), promise: promise)
            case .chunked:
                guard body.readableBytes > 0 else {
                    // An empty chunk would end the body.
                    promise?.succeed()
                    return
                }
                var size = context.channel.allocator.buffer(capacity: 12)
                size.writeString(String(body.readableBytes, radix: 16))
                size.writeStaticString("\r\n")
                context.write(wrapOutboundOut(.byteBuffer(size)), promise: nil)
                context.write(wrapOutboundOut(body), promise: nil)
                context.write(wrapOutboundOut(.byteBuffer(ByteBuffer(staticString: "\r\n"))), promise: promise)
            }
        case .end(let trailers):
            if case .chunked = framing {
                var last = context.channel.allocator.buffer(capacity: 5)
                last.writeStaticString("0\r\n")
                for (name, value) in trailers ?? [:] {
                    last.writeString("\(name): \(value)\r\n")
                }
                last.writeStaticString("\r\n")
                context.write(wrapOutboundOut(.byteBuffer(last)), promise: promise)
            } else {
                // Nothing to write, but the write still goes down the pipeline, so its promise completes in order.
                context.write(wrapOutboundOut(.byteBuffer(context.channel.allocator.buffer(capacity: 0))), promise: promise)
            }
            framing = .asIs
            front.routerResponseEnded()
        }
    }
}
