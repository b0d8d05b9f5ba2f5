import HTTPTypes
import NIOCore

/// Responses: HEADERS and DATA frames into the output buffer, DATA within the client's flow-control windows.
extension HTTP2ServerConnection {
    /// A cache hit's reply, whole. The body goes out at once when the windows allow it, as they do for any
    /// client that has not withheld credit; otherwise the stream waits for WINDOW_UPDATE like any other, and takes
    /// one of the service's streams meanwhile (refused when there is none left, before anything is written).
    /// - Returns: whether the reply was sent, or is waiting for credit; false when the stream was refused.
    func answer(_ reply: Reply, streamID id: UInt32, head: HTTP2RequestHead) -> Bool {
        let length = reply.body.readableBytes
        let fits = length <= sendableAtOnce
        guard fits || reserveStream(id) else { return false }
        output.writeReply(reply, streamID: id, withBody: fits)
        if fits {
            sendWindow -= length
            streamEnded()
            return true
        }
        var stream = HTTP2ServerStream(head: head, sendWindow: peer.initialWindowSize)
        stream.requestEnded = true
        stream.unsent = reply.body
        stream.endQueued = true
        open(stream, streamID: id)
        sendPendingData(streamID: id)
        return true
    }

    /// The most body bytes a new stream's reply can send now, in one DATA frame: within the connection's window, a new
    /// stream's window (the client's initial one) and the client's largest frame.
    var sendableAtOnce: Int { min(sendWindow, peer.initialWindowSize, output.maxFrameSize) }

    /// A looked-up reply on its stream, already in the table: as ``answer(_:streamID:head:)`` sends a hit's.
    func answer(_ reply: Reply, onOpenStream id: UInt32) {
        let length = reply.body.readableBytes
        let fits = length <= sendWindow && length <= streams[id]!.sendWindow && length <= output.maxFrameSize
        output.writeReply(reply, streamID: id, withBody: fits)
        if fits {
            sendWindow -= length
            return finishStream(id)
        }
        streams[id]!.unsent = reply.body
        streams[id]!.endQueued = true
        sendPendingData(streamID: id)
    }

    /// Part of a response from the router (``HTTP2ResponseWriter``): the head when not sent yet, body bytes, and
    /// whether the response ends here. Succeeds once the body bytes have gone out; fails when the stream is gone.
    func respond(
        streamID id: UInt32,
        head: HTTPResponse?,
        body: ByteBuffer?,
        end: Bool,
        trailers: HTTPFields?,
        eventLoop: any EventLoop
    ) -> EventLoopFuture<Void> {
        defer { flushOutputSoon() }
        guard streams[id] != nil, phase != .closed else { return eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel) }
        let dropsBody = streams[id]!.isHEAD
        if let head {
            let bodyFollows = !(end && (body?.readableBytes ?? 0) == 0 && trailers == nil) && !dropsBody
            output.writeResponseHead(head, streamID: id, endStream: !bodyFollows)
            if !bodyFollows { return finished(streamID: id, eventLoop: eventLoop) }
        }
        if var body, !dropsBody {
            if streams[id]!.unsent.readableBytes == 0 {
                streams[id]!.unsent = body
            } else {
                streams[id]!.unsent.writeBuffer(&body)
            }
        }
        if end {
            streams[id]!.endQueued = true
            streams[id]!.trailers = dropsBody ? nil : trailers
        }
        sendPendingData(streamID: id)
        guard let stream = streams[id], stream.unsent.readableBytes > 0 || context?.channel.isWritable == false else {
            return eventLoop.makeSucceededVoidFuture()
        }
        let drained = eventLoop.makePromise(of: Void.self)
        streams[id]!.unsentDrained = drained
        return drained.futureResult
    }

    /// The socket takes more again: writers that waited only for it go on.
    func resumeWriters() {
        for id in streams.keys where streams[id]!.unsent.readableBytes == 0 {
            streams[id]!.unsentDrained?.succeed()
            streams[id]!.unsentDrained = nil
        }
    }

    private func finished(streamID id: UInt32, eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        finishStream(id)
        return eventLoop.makeSucceededVoidFuture()
    }

    /// Sends what every stream holding back DATA may now send.
    func sendPendingData() {
        for id in streams.keys where streams[id]?.unsent.readableBytes ?? 0 > 0 {
            sendPendingData(streamID: id)
        }
    }

    /// Sends as much of a stream's unsent body as the windows and the client's frame size allow, then its end.
    func sendPendingData(streamID id: UInt32) {
        guard streams[id] != nil else { return }
        while streams[id]!.unsent.readableBytes > 0 {
            let allowed = min(streams[id]!.unsent.readableBytes, streams[id]!.sendWindow, sendWindow, output.maxFrameSize)
            guard allowed > 0 else { return }
            let chunk = streams[id]!.unsent.readSlice(length: allowed)!
            let last = streams[id]!.unsent.readableBytes == 0 && streams[id]!.endQueued && streams[id]!.trailers == nil
            output.buffer.writeHTTP2Frame(.data, flags: last ? .endStream : [], streamID: id, payload: chunk)
            streams[id]!.sendWindow -= allowed
            sendWindow -= allowed
            if last { return finishStream(id) }
        }
        if streams[id]!.unsent.capacity > 0 { streams[id]!.unsent = ByteBuffer() }
        if context?.channel.isWritable != false {
            streams[id]!.unsentDrained?.succeed()
            streams[id]!.unsentDrained = nil
        }
        guard streams[id]!.endQueued else { return }
        if let trailers = streams[id]!.trailers {
            output.writeTrailers(trailers, streamID: id)
        } else {
            output.buffer.writeHTTP2FrameHeader(HTTP2FrameHeader(length: 0, type: .data, flags: .endStream, streamID: id))
        }
        finishStream(id)
    }

    /// The response has ended. A request still being sent is cut short with RST_STREAM(NO_ERROR), as RFC 9113
    /// §8.1 asks after a complete response to an unfinished request.
    private func finishStream(_ id: UInt32) {
        guard let stream = removeStream(id, reset: false) else { return }
        stream.deadline?.cancel()
        stream.unsentDrained?.succeed()
        if !stream.requestEnded {
            output.buffer.writeHTTP2ResetStream(id, code: .noError)
            recentlyReset.insert(id)
        }
        streamEnded()
    }

    /// 431 for a header list past the announced limit, on a stream that never enters the table; a request still
    /// being sent is cut short, as ``finishStream(_:)`` does.
    func answerHeaderFieldsTooLarge(streamID id: UInt32, requestEnded: Bool) {
        output.writeResponseHead(HTTPResponse(status: .requestHeaderFieldsTooLarge, headerFields: [.contentLength: "0"]), streamID: id, endStream: true)
        if !requestEnded {
            output.buffer.writeHTTP2ResetStream(id, code: .noError)
            recentlyReset.insert(id)
        }
        streamEnded()
    }

    // MARK: Output

    /// Writes and flushes the output, unless a read is under way: its end flushes once for every answer it made.
    func flushOutput() {
        guard !isReading else { return }
        writeOutput()
        context?.flush()
    }

    /// Flushes the output once the event loop has run the tasks queued before this one: the router's answers come as
    /// one task each, from other threads, and those that come together (misses answered by one upstream read, say) go
    /// out in one TLS record and one write instead of one each.
    func flushOutputSoon() {
        guard !isReading, !flushQueued, phase != .closed, let context else { return }
        flushQueued = true
        context.eventLoop.assumeIsolated().execute { [self] in
            flushQueued = false
            flushOutput()
        }
    }

    /// Hands the output to the channel, without flushing.
    func writeOutput() {
        guard output.buffer.readableBytes > 0, let context else { return }
        context.write(wrapOutboundOut(output.take(allocator: context.channel.allocator)), promise: nil)
    }
}
