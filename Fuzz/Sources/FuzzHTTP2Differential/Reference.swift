@_spi(Fuzzing) import HTTPDNSServerTransport
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2

/// swift-nio-http2's server (`NIOHTTP2Handler`, no multiplexer) with the smallest application that answers like the
/// service's connection: the reference the differential target holds ours against.
///
/// The application answers each request whole (its END_STREAM read) with 200, but only once every byte has been
/// read, as the service's router, which answers in a task of its own, cannot answer sooner: so its streams stay open
/// as long as ours and count against the same concurrent-stream limit. Like the service, it announces
/// SETTINGS_MAX_CONCURRENT_STREAMS 100 and SETTINGS_MAX_HEADER_LIST_SIZE 16,384; past that header list size it ends
/// the connection (COMPRESSION_ERROR) where the service answers 431 on the stream.
enum Reference {
    /// What the reference server wrote, and the requests its application took whole.
    struct Result {
        var output: [UInt8] = []
        var requests: [UInt32: HTTP2AcceptedRequest] = [:]
        /// Requests taken whole that the client then reset: the service keeps counting such a stream until its
        /// router's work ends, swift-nio-http2 frees it at once.
        var resetAfterTaken = 0
        /// The highest stream opened when the first of those resets came.
        var highestStreamAtFirstReset: UInt32?
        /// The header fields of each stream's first HEADERS frame that reached the application.
        var fields: [UInt32: HPACKHeaders] = [:]
    }

    static func exchange(_ bytes: [UInt8]) -> Result {
        var settings = HTTP2Settings()
        settings.append(HTTP2Setting(parameter: .maxConcurrentStreams, value: 100))
        settings.append(HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384))
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = settings
        let application = Application()
        let channel = EmbeddedChannel(handlers: [NIOHTTP2Handler(mode: .server, connectionConfiguration: connection), application])
        var result = Result()
        func collectOutput() {
            while case .byteBuffer(let written)? = try? channel.readOutbound(as: IOData.self) { result.output += written.readableBytesView }
        }
        _ = try? channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        // Errors the handler reports down the pipeline are what it also tells the client: read from the output.
        _ = try? channel.writeInbound(ByteBuffer(bytes: bytes))
        application.answerTaken()
        collectOutput()
        _ = try? channel.finish()
        collectOutput()
        result.requests = application.taken
        result.resetAfterTaken = application.resetAfterTaken
        result.highestStreamAtFirstReset = application.highestStreamAtFirstReset
        result.fields = application.fields
        return result
    }

    final class Application: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        typealias OutboundOut = HTTP2Frame

        private struct Reading {
            var fields: HPACKHeaders
            var bodyBytes = 0
        }

        private var reading: [HTTP2StreamID: Reading] = [:]
        private(set) var taken: [UInt32: HTTP2AcceptedRequest] = [:]
        private var unanswered: [HTTP2StreamID] = []
        private(set) var resetAfterTaken = 0
        private(set) var highestStreamAtFirstReset: UInt32?
        private var highestStream: UInt32 = 0
        private(set) var fields: [UInt32: HPACKHeaders] = [:]
        private var context: ChannelHandlerContext?

        func handlerAdded(context: ChannelHandlerContext) {
            self.context = context
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            self.context = nil
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            let id = frame.streamID
            switch frame.payload {
            case .headers(let headers):
                if fields[UInt32(Int(id))] == nil { fields[UInt32(Int(id))] = headers.headers }
                highestStream = max(highestStream, UInt32(Int(id)))
                if reading[id] == nil {
                    guard !taken.keys.contains(UInt32(Int(id))) else { return }
                    reading[id] = Reading(fields: headers.headers)
                }
                if headers.endStream { take(id) }
            case .data(let data):
                reading[id]?.bodyBytes += data.data.readableBytes
                if data.endStream { take(id) }
            case .rstStream:
                reading[id] = nil
                if let index = unanswered.firstIndex(of: id) {
                    unanswered.remove(at: index)
                    if resetAfterTaken == 0 { highestStreamAtFirstReset = highestStream }
                    resetAfterTaken += 1
                }
            default:
                break
            }
        }

        private func take(_ id: HTTP2StreamID) {
            guard let request = reading.removeValue(forKey: id) else { return }
            let fields = request.fields
            taken[UInt32(Int(id))] = HTTP2AcceptedRequest(
                method: fields.first(name: ":method") ?? "",
                path: fields.first(name: ":path") ?? "",
                authority: fields.first(name: ":authority"),
                bodyBytes: request.bodyBytes
            )
            unanswered.append(id)
        }

        /// Answers every request taken whole and not reset, in order.
        func answerTaken() {
            guard let context else { return }
            for id in unanswered { answer(id, context: context) }
            unanswered = []
            context.flush()
        }

        private func answer(_ id: HTTP2StreamID, context: ChannelHandlerContext) {
            let head = HPACKHeaders([(":status", "200"), ("content-length", "0")])
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: head, endStream: true)))), promise: nil)
        }
    }
}
