import HummingbirdCore
import NIOCore

/// Requests: a cache hit answered as its HEADERS frame is read, everything else collected and handed to the
/// router.
extension HTTP2ServerConnection {
    func requestReceived(streamID id: UInt32, head: HTTP2RequestHead, endStream: Bool) {
        let started = ContinuousClock.now
        if endStream, head.method == "GET", let context {
            switch cacheHits.answer(toGET: head.path, channel: context.channel, sendableAtOnce: sendableAtOnce) {
            case .reply(let reply, let route):
                // A stream refused for the service's budget was never answered: no request to record.
                if answer(reply, streamID: id, head: head) { hitTimers.record(route: route, status: reply.status, since: started) }
                return
            case .lookUp(let miss):
                return lookUp(miss, streamID: id, head: head, started: started, context: context)
            case .router:
                break
            }
        }
        guard reserveStream(id) else { return }
        var stream = HTTP2ServerStream(head: head, sendWindow: peer.initialWindowSize)
        stream.openedInRead = readsEnded
        open(stream, streamID: id)
        if endStream { requestBodyEnded(streamID: id) }
    }

    /// A GET the cache missed, looked up without the router or a task. The stream is in the table meanwhile, as one
    /// the router answers is: it takes one of the service's streams, its idle deadline runs, a reset or a close drops
    /// it, and a drain waits for it.
    private func lookUp(_ miss: CacheMiss, streamID id: UInt32, head: HTTP2RequestHead, started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        guard reserveStream(id) else { return }
        var stream = HTTP2ServerStream(head: head, sendWindow: peer.initialWindowSize)
        stream.openedInRead = readsEnded
        stream.requestEnded = true
        stream.answering = .lookUp(.none)
        open(stream, streamID: id)
        routerTaskStarted()
        let connection = NIOLoopBound(self, eventLoop: context.eventLoop)
        let route = miss.route
        let cancellation = miss.start(on: context.eventLoop) { reply in
            connection.value.lookedUp(reply, route: route, streamID: id, started: started)
        }
        // Unless the completion has run already (it may, on this loop, before `start` returns), the stream waits for
        // it, and a reset or a close cancels it.
        if case .lookUp = streams[id]?.answering { streams[id]!.answering = .lookUp(cancellation) }
    }

    /// A lookup's reply, on the event loop: sent when its stream is still there.
    private func lookedUp(_ reply: Reply, route: String, streamID id: UInt32, started: ContinuousClock.Instant) {
        if streams[id] != nil {
            // The stream now holds its slot in the service's budget as any other does, until it leaves the table.
            streams[id]!.answering = nil
            if phase != .closed {
                answer(reply, onOpenStream: id)
                hitTimers.record(route: route, status: reply.status, since: started)
                // With the other replies of this turn of the event loop (those of one upstream read): one flush.
                flushOutputSoon()
            } else {
                abandonStream(id)
            }
        }
        routerWorkEnded(streamID: id)
    }

    /// Takes one of the service's streams for stream `id`, or refuses the stream (REFUSED_STREAM, so the client may
    /// try the request again) when the service holds as many as it will.
    func reserveStream(_ id: UInt32) -> Bool {
        guard bodyBudget.reserveStream() else {
            logger.debug("HTTP/2 request refused: the service's stream budget is spent", metadata: ["http2.stream": "\(id)"])
            output.buffer.writeHTTP2ResetStream(id, code: .refusedStream)
            recentlyReset.insert(id)
            return false
        }
        return true
    }

    /// Enters a stream in the table, with the deadline that resets it if it is still open after the idle timeout:
    /// a request that never ends, or an answer the client will not take (no flow-control credit), ends in bounded
    /// time, and so does the connection holding it.
    func open(_ stream: HTTP2ServerStream, streamID id: UInt32) {
        var stream = stream
        stream.deadline = context?.eventLoop.assumeIsolated().scheduleTask(in: configuration.idleTimeout) { [self] in
            guard streams[id] != nil else { return }
            resetStream(id, .cancel)
            flushOutput()
        }
        streams[id] = stream
    }

    /// A DATA frame on a stream in the table. What the stream keeps of it (its body, up to one byte past the largest
    /// a route reads) is held until the stream leaves the table, against the connection's window and the service's
    /// ``RequestBudget``; the rest is let go at once.
    func requestBodyReceived(streamID id: UInt32, data: ByteBuffer, flowControlledLength: Int, endStream: Bool) {
        guard !streams[id]!.requestEnded else {
            letGo(flowControlledLength)
            return streamError(id, .streamClosed, "DATA after the request on stream \(id) ended")
        }
        guard flowControlledLength <= streams[id]!.receiveWindow else {
            letGo(flowControlledLength)
            return streamError(id, .flowControlError, "DATA past stream \(id)'s window")
        }
        streams[id]!.receiveWindow -= flowControlledLength
        streams[id]!.bodyBytesReceived += data.readableBytes
        if let contentLength = streams[id]!.head.contentLength, streams[id]!.bodyBytesReceived > contentLength {
            letGo(flowControlledLength)
            return streamError(id, .protocolError, "more DATA on stream \(id) than its content-length of \(contentLength)")
        }
        let routerHasIt = streams[id]!.answering != nil
        var kept = 0
        if !routerHasIt {
            let room = router.maxBodyBytes + 1 - streams[id]!.body.readableBytes
            kept = max(0, min(room, data.readableBytes))
        }
        letGo(flowControlledLength - kept)
        if kept > 0 {
            guard bodyBudget.reserve(kept) else {
                // The service holds as much request body as it will: the client may try this request again.
                logger.debug("HTTP/2 request body refused: the service's body budget is spent", metadata: ["http2.stream": "\(id)"])
                letGo(kept)
                return resetStream(id, .refusedStream)
            }
            streams[id]!.heldBytes += kept
            bodyBytesHeld += kept
            streams[id]!.body.writeImmutableBuffer(data.getSlice(at: data.readerIndex, length: kept)!)
        }
        if endStream { return requestBodyEnded(streamID: id) }
        guard !routerHasIt else { return }
        if streams[id]!.body.readableBytes > router.maxBodyBytes {
            // Answered now (the route refuses the body); the client is not given credit for the rest.
            answerThroughRouter(streamID: id)
        } else if streams[id]!.receiveWindow < HTTP2Limits.defaultWindowSize / 2 {
            output.buffer.writeHTTP2WindowUpdate(id, increment: HTTP2Limits.defaultWindowSize - streams[id]!.receiveWindow)
            streams[id]!.receiveWindow = HTTP2Limits.defaultWindowSize
        }
        if bodyBytesHeld > HTTP2Limits.defaultWindowSize / 2 { refuseNewestUnfinishedBodies() }
    }

    /// At the end of a read, requests still waiting for their body past ``Configuration/maxUnfinishedRequests``:
    /// the newest of those opened before this read are refused, and counted against the client. A request whose
    /// HEADERS came in this read may have its body in the next (as nghttp2 sends a batch: every HEADERS, then every
    /// body), so it gets one more read.
    func refuseUnfinishedRequestsPastLimit() {
        let unfinished = streams.filter { !$0.value.requestEnded && $0.value.answering == nil }
        guard unfinished.count > configuration.maxUnfinishedRequests else { return }
        let older = unfinished.filter { $0.value.openedInRead < readsEnded - 1 }.keys.sorted()
        for id in older.dropFirst(configuration.maxUnfinishedRequests) {
            logger.debug("HTTP/2 request refused: too many requests left unfinished", metadata: ["http2.stream": "\(id)"])
            resetStream(id, .refusedStream)
            countGlitch()
            guard phase != .closed else { return }
        }
    }

    /// Unfinished bodies may hold at most half the connection's window between them, unless one stream holds them
    /// alone: past that the newest are refused (REFUSED_STREAM) and their bytes credited back, so the oldest can
    /// always finish. Without this, bodies that each wait for more window could fill it and wait for ever.
    private func refuseNewestUnfinishedBodies() {
        // A body the router already has (one past the limit, being refused) is not unfinished: its work has begun.
        var unfinished = streams.filter { !$0.value.requestEnded && $0.value.answering == nil && $0.value.heldBytes > 0 }
            .map { (id: $0.key, held: $0.value.heldBytes) }
        guard unfinished.count > 1 else { return }
        unfinished.sort { $0.id < $1.id }
        var total = unfinished.reduce(0) { $0 + $1.held }
        while unfinished.count > 1, total > HTTP2Limits.defaultWindowSize / 2 {
            let newest = unfinished.removeLast()
            total -= newest.held
            logger.debug("HTTP/2 request body refused: unfinished bodies fill the window", metadata: ["http2.stream": "\(newest.id)"])
            resetStream(newest.id, .refusedStream)
        }
    }

    func requestBodyEnded(streamID id: UInt32) {
        streams[id]!.requestEnded = true
        let received = streams[id]!.bodyBytesReceived
        if let contentLength = streams[id]!.head.contentLength, contentLength != received {
            return streamError(id, .protocolError, "stream \(id) sent \(received) bytes against a content-length of \(contentLength)")
        }
        if streams[id]!.answering == nil { answerThroughRouter(streamID: id) }
    }

    /// Hands a request to the router in a task of its own; the response comes back through
    /// ``HTTP2ResponseWriter``.
    private func answerThroughRouter(streamID id: UInt32) {
        guard let context else { return }
        let request = Request(head: streams[id]!.head.httpRequest(), body: RequestBody(buffer: streams[id]!.body))
        streams[id]!.body = ByteBuffer()
        let connection = NIOLoopBound(self, eventLoop: context.eventLoop)
        let (router, channel, eventLoop) = (router, context.channel, context.eventLoop)
        routerTaskStarted()
        streams[id]!.answering = .router(Task {
            let response = await router.respond(to: request, channel: channel)
            do {
                try await response.body.write(HTTP2ResponseWriter(connection: connection, eventLoop: eventLoop, streamID: id, head: response.head))
            } catch {
                // The client reset the stream, or the connection went away: nobody is left to answer.
                router.logger.debug("response not written", metadata: ["error.type": "\(error)"])
            }
            eventLoop.execute { connection.value.routerTaskEnded(streamID: id) }
        })
    }
}
