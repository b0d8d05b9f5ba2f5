import NIOCore
import NIOHPACK

/// Each frame the client sends, checked as RFC 9113 §5–6 asks. A connection error ends the connection with
/// GOAWAY; a stream error resets one stream. RST_STREAM is never sent on a stream the client has not opened.
extension HTTP2ServerConnection {
    func receive(_ header: HTTP2FrameHeader, payload: ByteBuffer) {
        if let pending = pendingHeaderBlock {
            guard header.type == .continuation, header.streamID == pending.streamID else {
                return connectionError(.protocolError, "\(header.type) inside the header block of stream \(pending.streamID)")
            }
        }
        if case .awaitingSettings = phase {
            guard header.type == .settings, !header.flags.contains(.ack) else {
                return connectionError(.protocolError, "the client's preface starts with \(header.type), not SETTINGS")
            }
            phase = .open
            endHeaderDeadline()
        }
        switch header.type {
        case .data: receiveData(header, payload: payload)
        case .headers: receiveHeaders(header, payload: payload)
        case .continuation: receiveContinuation(header, payload: payload)
        case .settings: receiveSettings(header, payload: payload)
        case .windowUpdate: receiveWindowUpdate(header, payload: payload)
        case .ping: receivePing(header, payload: payload)
        case .rstStream: receiveResetStream(header, payload: payload)
        case .priority: receivePriority(header, payload: payload)
        case .goAway: receiveGoAway(header)
        case .pushPromise: connectionError(.protocolError, "a client may not send PUSH_PROMISE")
        default: break  // unknown frame types are ignored (§4.1)
        }
    }

    /// A stream the client has not opened: not a client stream ID, or above every one it has used (§5.1.1).
    func isIdle(_ id: UInt32) -> Bool {
        id & 1 == 0 || id > lastStreamID
    }

    // MARK: Streams

    private func receiveHeaders(_ header: HTTP2FrameHeader, payload: ByteBuffer) {
        let id = header.streamID
        guard id != 0, id & 1 == 1 else { return connectionError(.protocolError, "HEADERS on stream \(id), not a client stream") }
        emptyDataFrames = 0
        var fragment = payload
        // The pad length comes first, then the priority fields, then the block; the padding must fit in the block (§6.2).
        let priorityFields = header.flags.contains(.priority) ? 5 : 0
        guard priorityFields == 0 || fragment.readableBytes >= (header.flags.contains(.padded) ? 1 : 0) + priorityFields else {
            return connectionError(.frameSizeError, "HEADERS too short for its priority")
        }
        guard stripPadding(header, &fragment, after: priorityFields) else { return }
        var dependsOnItself = false
        if priorityFields > 0, let (dependency, _) = fragment.readMultipleIntegers(as: (UInt32, UInt8).self) {
            dependsOnItself = dependency & 0x7FFF_FFFF == id
        }
        let endStream = header.flags.contains(.endStream)
        guard header.flags.contains(.endHeaders) else {
            guard fragment.readableBytes <= configuration.maxHeaderBlockBytes else {
                return connectionError(.enhanceYourCalm, "a header block over \(configuration.maxHeaderBlockBytes) bytes")
            }
            var kept = context?.channel.allocator.buffer(capacity: fragment.readableBytes * 2) ?? ByteBuffer()
            kept.writeImmutableBuffer(fragment)
            pendingHeaderBlock = PendingHeaderBlock(streamID: id, endStream: endStream, dependsOnItself: dependsOnItself, fragment: kept)
            startHeaderDeadline("the header block of stream \(id)")
            return
        }
        endHeaderDeadline()
        headerBlockComplete(streamID: id, endStream: endStream, block: &fragment, dependsOnItself: dependsOnItself)
    }

    private func receiveContinuation(_ header: HTTP2FrameHeader, payload: ByteBuffer) {
        guard var pending = pendingHeaderBlock else {
            return connectionError(.protocolError, "CONTINUATION without HEADERS before it")
        }
        pending.continuationFrames += 1
        guard pending.continuationFrames <= configuration.maxContinuationFrames else {
            return connectionError(.enhanceYourCalm, "more than \(configuration.maxContinuationFrames) CONTINUATION frames")
        }
        guard pending.fragment.readableBytes + payload.readableBytes <= configuration.maxHeaderBlockBytes else {
            return connectionError(.enhanceYourCalm, "a header block over \(configuration.maxHeaderBlockBytes) bytes")
        }
        pendingHeaderBlock = nil
        pending.fragment.writeImmutableBuffer(payload)
        if header.flags.contains(.endHeaders) {
            endHeaderDeadline()
            headerBlockComplete(
                streamID: pending.streamID,
                endStream: pending.endStream,
                block: &pending.fragment,
                dependsOnItself: pending.dependsOnItself
            )
        } else {
            pendingHeaderBlock = pending
        }
    }

    private func headerBlockComplete(streamID id: UInt32, endStream: Bool, block: inout ByteBuffer, dependsOnItself: Bool) {
        // Decoded whatever becomes of the stream: the decoder's table must follow the client's encoder. A block
        // that fails (including one past the header list size) may have changed the table already, so the
        // connection cannot go on.
        let fields: HPACKHeaders
        do {
            fields = try decoder.decodeHeaders(from: &block)
        } catch {
            return connectionError(.compressionError, "the header block of stream \(id) does not decode: \(error)")
        }
        if streams[id] != nil {
            return receiveTrailers(fields, streamID: id, endStream: endStream)
        }
        guard id > lastStreamID else {
            if recentlyReset.contains(id) { return }  // trailers the client sent before it heard of the reset
            guard openedStreamIDs.wasOpened(id) else {
                return connectionError(.protocolError, "HEADERS on stream \(id), below stream \(lastStreamID) already opened")
            }
            return connectionError(.streamClosed, "HEADERS on stream \(id), which is closed")  // §5.1
        }
        lastStreamID = id
        openedStreamIDs.open(id)
        guard !dependsOnItself else { return streamError(id, .protocolError, "stream \(id) depends on itself") }
        if case .final = drain { return resetStream(id, .refusedStream) }
        guard occupiedStreams < configuration.maxConcurrentStreams else {
            resetStream(id, .refusedStream)
            // Counted when the client itself broke the limit: it is not kept busy refusing it for free.
            if streams.count >= configuration.maxConcurrentStreams { countGlitch() }
            return
        }
        guard Self.headerListSize(fields) <= configuration.maxHeaderListBytes else {
            // Past what SETTINGS_MAX_HEADER_LIST_SIZE announced, but decoded: this stream is refused, not the
            // connection (§10.5.1).
            answerHeaderFieldsTooLarge(streamID: id, requestEnded: endStream)
            return countGlitch()
        }
        let head: HTTP2RequestHead
        do {
            head = try HTTP2RequestHead(validating: fields)
        } catch {
            return streamError(id, .protocolError, "malformed request: \(error)")
        }
        if endStream, let contentLength = head.contentLength, contentLength != 0 {
            return streamError(id, .protocolError, "content-length \(contentLength) without a body")
        }
        requestReceived(streamID: id, head: head, endStream: endStream)
    }

    /// A header list's size as SETTINGS_MAX_HEADER_LIST_SIZE counts it: each field's name and value, plus 32.
    static func headerListSize(_ fields: HPACKHeaders) -> Int {
        var size = 0
        for field in fields { size += field.name.utf8.count + field.value.utf8.count + 32 }
        return size
    }

    /// HEADERS on a stream whose request is being read: trailers, which must end the request, carry no pseudo-header
    /// fields (§8.1) and be well-formed like any field (§8.2), and which the router has no use for.
    private func receiveTrailers(_ fields: HPACKHeaders, streamID id: UInt32, endStream: Bool) {
        guard !streams[id]!.requestEnded else {
            return streamError(id, .streamClosed, "HEADERS after the request on stream \(id) ended")
        }
        guard endStream else { return streamError(id, .protocolError, "trailers on stream \(id) without END_STREAM") }
        do {
            try HTTP2RequestHead.validateTrailers(fields)
        } catch {
            return streamError(id, .protocolError, "malformed trailers on stream \(id): \(error)")
        }
        requestBodyEnded(streamID: id)
    }

    private func receiveData(_ header: HTTP2FrameHeader, payload: ByteBuffer) {
        let id = header.streamID
        guard id != 0 else { return connectionError(.protocolError, "DATA on stream 0") }
        // Padding counts against flow control like the data. What a stream keeps of its body is credited back to
        // the connection's window only when the stream lets it go; everything else at once (``letGo(_:)``).
        guard header.length <= receiveWindow else {
            return connectionError(.flowControlError, "DATA past the connection's window")
        }
        receiveWindow -= header.length
        let endStream = header.flags.contains(.endStream)
        var data = payload
        guard stripPadding(header, &data) else { return }
        if data.readableBytes == 0 && !endStream {
            emptyDataFrames += 1
            guard emptyDataFrames <= 1 else { return connectionError(.enhanceYourCalm, "empty DATA frames in a row") }
        } else {
            emptyDataFrames = 0
        }
        guard streams[id] != nil else {
            letGo(header.length)
            return receiveDataWithoutStream(id)
        }
        requestBodyReceived(streamID: id, data: data, flowControlledLength: header.length, endStream: endStream)
        if receiveWindow == 0, creditOwed == 0, phase != .closed, !routerWorkWithoutStream.values.contains(where: { $0.heldBytes > 0 }),
            !streams.values.contains(where: { $0.answering != nil && $0.heldBytes > 0 })
        {
            // Unfinished bodies take the whole window, and nothing the router holds will come back to free it. One
            // more byte of credit lets the oldest body either end or go one byte past the largest a route reads,
            // which the route then refuses (413): never a wait for nothing. The byte is taken back from the next
            // bytes let go.
            output.buffer.writeHTTP2WindowUpdate(0, increment: 1)
            receiveWindow = 1
            creditGivenAhead += 1
        }
    }

    private func receiveDataWithoutStream(_ id: UInt32) {
        guard !isIdle(id) else { return connectionError(.protocolError, "DATA on idle stream \(id)") }
        if recentlyReset.contains(id) { return }
        // A stream this side finished: the client sent past its own END_STREAM.
        streamError(id, .streamClosed, "DATA on closed stream \(id)")
    }

    private func receiveResetStream(_ header: HTTP2FrameHeader, payload: ByteBuffer) {
        let id = header.streamID
        guard id != 0 else { return connectionError(.protocolError, "RST_STREAM on stream 0") }
        guard header.length == 4 else { return connectionError(.frameSizeError, "RST_STREAM of \(header.length) bytes") }
        guard !isIdle(id) else { return connectionError(.protocolError, "RST_STREAM on idle stream \(id)") }
        guard abandonStream(id) != nil else { return }  // closed already
        streamEnded()
        countGlitch()
    }

    private func receivePriority(_ header: HTTP2FrameHeader, payload: ByteBuffer) {
        // Priorities are not acted on (RFC 9113 §5.3.2 deprecates them); only their form is checked.
        let id = header.streamID
        guard id != 0 else { return connectionError(.protocolError, "PRIORITY on stream 0") }
        guard countControlFrame() else { return }
        let dependsOnItself = payload.getInteger(at: payload.readerIndex, as: UInt32.self).map { $0 & 0x7FFF_FFFF == id } ?? false
        guard header.length == 5, !dependsOnItself else {
            let reason = header.length == 5 ? "stream \(id) depends on itself" : "PRIORITY of \(header.length) bytes"
            let code: HTTP2ErrorCode = header.length == 5 ? .protocolError : .frameSizeError
            // A stream error, but RST_STREAM may not be sent on a stream not opened yet: then it ends the connection.
            return isIdle(id) ? connectionError(code, reason) : streamError(id, code, reason)
        }
    }

    // MARK: The connection

    private func receiveSettings(_ header: HTTP2FrameHeader, payload: ByteBuffer) {
        guard header.streamID == 0 else { return connectionError(.protocolError, "SETTINGS on stream \(header.streamID)") }
        if header.flags.contains(.ack) {
            guard header.length == 0 else { return connectionError(.frameSizeError, "SETTINGS acknowledgement with a payload") }
            return
        }
        guard header.length % 6 == 0 else { return connectionError(.frameSizeError, "SETTINGS of \(header.length) bytes") }
        guard countControlFrame() else { return }
        var payload = payload
        var initialWindowSize: Int?
        while let (identifier, value) = payload.readMultipleIntegers(as: (UInt16, UInt32).self) {
            switch identifier {
            case HTTP2Setting.headerTableSize:
                output.tableSizeSettingChanged()
            case HTTP2Setting.enablePush:
                guard value <= 1 else { return connectionError(.protocolError, "SETTINGS_ENABLE_PUSH of \(value)") }
            case HTTP2Setting.enableConnectProtocol:
                guard value <= 1, value == 1 || !peer.enabledConnectProtocol else {
                    return connectionError(.protocolError, "SETTINGS_ENABLE_CONNECT_PROTOCOL of \(value)\(value == 0 ? " after 1" : "")")
                }
                peer.enabledConnectProtocol = value == 1
            case HTTP2Setting.initialWindowSize:
                guard value <= HTTP2Limits.largestWindowSize else {
                    return connectionError(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE of \(value)")
                }
                initialWindowSize = Int(value)  // the last one counts; the streams are adjusted once, below
            case HTTP2Setting.maxFrameSize:
                guard (HTTP2Limits.defaultMaxFrameSize...HTTP2Limits.largestMaxFrameSize).contains(Int(value)) else {
                    return connectionError(.protocolError, "SETTINGS_MAX_FRAME_SIZE of \(value)")
                }
                output.maxFrameSize = Int(value)
            default:
                break  // the rest limit what this server never sends (pushes, large header lists); unknown ones are ignored
            }
        }
        var windowGrew = false
        if let initialWindowSize {
            let change = initialWindowSize - peer.initialWindowSize
            peer.initialWindowSize = initialWindowSize
            // The change applies to every open stream's window, and may take it below zero (§6.9.2).
            for id in streams.keys {
                streams[id]!.sendWindow += change
                guard streams[id]!.sendWindow <= HTTP2Limits.largestWindowSize else {
                    return connectionError(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE overflows stream \(id)'s window")
                }
            }
            windowGrew = change > 0
        }
        output.buffer.writeHTTP2FrameHeader(HTTP2FrameHeader(length: 0, type: .settings, flags: .ack, streamID: 0))
        if windowGrew { sendPendingData() }
    }

    private func receiveWindowUpdate(_ header: HTTP2FrameHeader, payload: ByteBuffer) {
        guard header.length == 4 else { return connectionError(.frameSizeError, "WINDOW_UPDATE of \(header.length) bytes") }
        let increment = Int(payload.getInteger(at: payload.readerIndex, as: UInt32.self)! & 0x7FFF_FFFF)
        let id = header.streamID
        guard id != 0 else {
            guard increment > 0 else { return connectionError(.protocolError, "WINDOW_UPDATE of 0 on the connection") }
            guard sendWindow + increment <= HTTP2Limits.largestWindowSize else {
                return connectionError(.flowControlError, "WINDOW_UPDATE overflows the connection's window")
            }
            sendWindow += increment
            return sendPendingData()
        }
        guard !isIdle(id) else { return connectionError(.protocolError, "WINDOW_UPDATE on idle stream \(id)") }
        guard streams[id] != nil else { return }  // a stream answered already
        guard increment > 0 else { return streamError(id, .protocolError, "WINDOW_UPDATE of 0 on stream \(id)") }
        guard streams[id]!.sendWindow + increment <= HTTP2Limits.largestWindowSize else {
            return streamError(id, .flowControlError, "WINDOW_UPDATE overflows stream \(id)'s window")
        }
        streams[id]!.sendWindow += increment
        sendPendingData(streamID: id)
    }

    private func receivePing(_ header: HTTP2FrameHeader, payload: ByteBuffer) {
        guard header.streamID == 0 else { return connectionError(.protocolError, "PING on stream \(header.streamID)") }
        guard header.length == 8 else { return connectionError(.frameSizeError, "PING of \(header.length) bytes") }
        guard !header.flags.contains(.ack) else {
            // The client has seen the first GOAWAY of a graceful shutdown: what it sent before is all there is.
            if drain == .announced, payload.getInteger(at: payload.readerIndex, as: UInt64.self) == Self.drainPing { finishDraining() }
            return
        }
        guard countControlFrame() else { return }
        output.buffer.writeHTTP2Frame(.ping, flags: .ack, streamID: 0, payload: payload)
    }

    private func receiveGoAway(_ header: HTTP2FrameHeader) {
        guard header.streamID == 0 else { return connectionError(.protocolError, "GOAWAY on stream \(header.streamID)") }
        guard header.length >= 8 else { return connectionError(.frameSizeError, "GOAWAY of \(header.length) bytes") }
        // The client opens no more streams: answer the open ones, then close.
        finishDraining()
    }

    /// Removes a padded frame's padding (§6.1); false, after a connection error, when the padding does not fit in what
    /// follows the pad length and `fixedFields` more bytes (HEADERS' priority fields), which the caller has checked are there.
    private func stripPadding(_ header: HTTP2FrameHeader, _ payload: inout ByteBuffer, after fixedFields: Int = 0) -> Bool {
        guard header.flags.contains(.padded) else { return true }
        guard let padding = payload.readInteger(as: UInt8.self), Int(padding) <= payload.readableBytes - fixedFields else {
            connectionError(.protocolError, "\(header.type) padding longer than the \(fixedFields > 0 ? "block after the priority fields" : "frame")")
            return false
        }
        payload = payload.getSlice(at: payload.readerIndex, length: payload.readableBytes - Int(padding))!
        return true
    }

    // MARK: Errors on one stream

    /// A stream error of the client's making: reset, logged, and counted against the connection.
    func streamError(_ id: UInt32, _ code: HTTP2ErrorCode, _ reason: String) {
        logger.debug("HTTP/2 stream error", metadata: ["http2.stream": "\(id)", "http2.error": "\(code)", "http2.reason": "\(reason)"])
        resetStream(id, code)
        countGlitch()
    }

    /// RST_STREAM; a stream being answered is abandoned.
    func resetStream(_ id: UInt32, _ code: HTTP2ErrorCode) {
        output.buffer.writeHTTP2ResetStream(id, code: code)
        recentlyReset.insert(id)
        if abandonStream(id) != nil { streamEnded() }
    }
}
