import NIOCore

/// The nine bytes in front of every HTTP/2 frame (RFC 9113 §4.1).
struct HTTP2FrameHeader: Equatable {
    static let size = 9

    var length: Int
    var type: HTTP2FrameType
    var flags: HTTP2FrameFlags
    var streamID: UInt32

    /// The header at the reader index, without moving it; nil when fewer than nine bytes are readable.
    init?(peekingAt buffer: ByteBuffer) {
        guard
            let (high, low, type, flags, streamID) = buffer.getMultipleIntegers(
                at: buffer.readerIndex,
                as: (UInt8, UInt16, UInt8, UInt8, UInt32).self
            )
        else { return nil }
        length = Int(high) << 16 | Int(low)
        self.type = HTTP2FrameType(rawValue: type)
        self.flags = HTTP2FrameFlags(rawValue: flags)
        // The high bit is reserved and must be ignored on receipt.
        self.streamID = streamID & 0x7FFF_FFFF
    }

    init(length: Int, type: HTTP2FrameType, flags: HTTP2FrameFlags = [], streamID: UInt32) {
        self.length = length
        self.type = type
        self.flags = flags
        self.streamID = streamID
    }
}

/// A frame's type. Unknown types are kept as they are: RFC 9113 §4.1 says to ignore them.
struct HTTP2FrameType: RawRepresentable, Hashable, CustomStringConvertible {
    let rawValue: UInt8

    static let data = Self(rawValue: 0x0)
    static let headers = Self(rawValue: 0x1)
    static let priority = Self(rawValue: 0x2)
    static let rstStream = Self(rawValue: 0x3)
    static let settings = Self(rawValue: 0x4)
    static let pushPromise = Self(rawValue: 0x5)
    static let ping = Self(rawValue: 0x6)
    static let goAway = Self(rawValue: 0x7)
    static let windowUpdate = Self(rawValue: 0x8)
    static let continuation = Self(rawValue: 0x9)

    var description: String {
        let names = ["DATA", "HEADERS", "PRIORITY", "RST_STREAM", "SETTINGS", "PUSH_PROMISE", "PING", "GOAWAY", "WINDOW_UPDATE", "CONTINUATION"]
        return Int(rawValue) < names.count ? names[Int(rawValue)] : "unknown frame type \(rawValue)"
    }
}

/// A frame's flags; what a bit means depends on the frame's type.
struct HTTP2FrameFlags: OptionSet, Hashable {
    let rawValue: UInt8

    static let endStream = Self(rawValue: 0x1)
    static let ack = Self(rawValue: 0x1)
    static let endHeaders = Self(rawValue: 0x4)
    static let padded = Self(rawValue: 0x8)
    static let priority = Self(rawValue: 0x20)
}

/// The error codes of RST_STREAM and GOAWAY (RFC 9113 §7).
struct HTTP2ErrorCode: RawRepresentable, Hashable, CustomStringConvertible {
    let rawValue: UInt32

    static let noError = Self(rawValue: 0x0)
    static let protocolError = Self(rawValue: 0x1)
    static let internalError = Self(rawValue: 0x2)
    static let flowControlError = Self(rawValue: 0x3)
    static let settingsTimeout = Self(rawValue: 0x4)
    static let streamClosed = Self(rawValue: 0x5)
    static let frameSizeError = Self(rawValue: 0x6)
    static let refusedStream = Self(rawValue: 0x7)
    static let cancel = Self(rawValue: 0x8)
    static let compressionError = Self(rawValue: 0x9)
    static let connectError = Self(rawValue: 0xA)
    static let enhanceYourCalm = Self(rawValue: 0xB)
    static let inadequateSecurity = Self(rawValue: 0xC)
    static let http11Required = Self(rawValue: 0xD)

    var description: String {
        let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR",
            "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
        ]
        return rawValue < names.count ? names[Int(rawValue)] : "error code \(rawValue)"
    }
}

/// The SETTINGS parameters this server reads or sends (RFC 9113 §6.5.2).
enum HTTP2Setting {
    static let headerTableSize: UInt16 = 0x1
    static let enablePush: UInt16 = 0x2
    static let maxConcurrentStreams: UInt16 = 0x3
    static let initialWindowSize: UInt16 = 0x4
    static let maxFrameSize: UInt16 = 0x5
    static let maxHeaderListSize: UInt16 = 0x6
    /// RFC 8441: 0 or 1, and a sender may not go back from 1 to 0 (§3). The service offers no extended CONNECT, but
    /// checks the client's values all the same, as swift-nio-http2 does.
    static let enableConnectProtocol: UInt16 = 0x8
}

/// Limits of the protocol itself (RFC 9113).
enum HTTP2Limits {
    /// What every connection starts with, before SETTINGS say otherwise: window sizes and the largest frame.
    static let defaultWindowSize = 65_535
    static let defaultMaxFrameSize = 16_384
    static let largestMaxFrameSize = 16_777_215
    /// The largest stream ID.
    static let largestStreamID: UInt32 = 0x7FFF_FFFF
    /// The largest a flow-control window may grow.
    static let largestWindowSize = Int(Int32.max)
    /// What a client sends first: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".
    static let clientPreface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
}

extension ByteBuffer {
    /// Appends a frame header.
    mutating func writeHTTP2FrameHeader(_ header: HTTP2FrameHeader) {
        writeMultipleIntegers(
            UInt8(truncatingIfNeeded: header.length >> 16),
            UInt16(truncatingIfNeeded: header.length),
            header.type.rawValue,
            header.flags.rawValue,
            header.streamID
        )
    }

    /// Writes a frame header over the nine bytes at `index`.
    mutating func setHTTP2FrameHeader(_ header: HTTP2FrameHeader, at index: Int) {
        setMultipleIntegers(
            UInt8(truncatingIfNeeded: header.length >> 16),
            UInt16(truncatingIfNeeded: header.length),
            header.type.rawValue,
            header.flags.rawValue,
            header.streamID,
            at: index
        )
    }

    /// Leaves room for a frame header, to be filled in once the payload after it is written; returns where it is.
    mutating func reserveHTTP2FrameHeader() -> Int {
        let start = writerIndex
        writeRepeatingByte(0, count: HTTP2FrameHeader.size)
        return start
    }

    /// Makes the header block written after the frame header reserved at `start` a HEADERS frame, or, when the
    /// block is larger than the peer's `maxFrameSize`, HEADERS followed by CONTINUATION frames (RFC 9113 §6.10).
    mutating func completeHTTP2Headers(startingAt start: Int, streamID: UInt32, endStream: Bool, maxFrameSize: Int) {
        let blockLength = writerIndex - start - HTTP2FrameHeader.size
        let streamFlags: HTTP2FrameFlags = endStream ? .endStream : []
        guard blockLength > maxFrameSize else {
            let header = HTTP2FrameHeader(length: blockLength, type: .headers, flags: streamFlags.union(.endHeaders), streamID: streamID)
            return setHTTP2FrameHeader(header, at: start)
        }
        // The slice keeps the block's bytes: writing over them below copies the storage first.
        var block = getSlice(at: start + HTTP2FrameHeader.size, length: blockLength)!
        moveWriterIndex(to: start)
        var type = HTTP2FrameType.headers
        var flags = streamFlags
        while block.readableBytes > 0 {
            let fragment = block.readSlice(length: min(block.readableBytes, maxFrameSize))!
            if block.readableBytes == 0 { flags.insert(.endHeaders) }
            writeHTTP2Frame(type, flags: flags, streamID: streamID, payload: fragment)
            (type, flags) = (.continuation, [])
        }
    }

    /// Appends a frame whose payload is `payload`.
    mutating func writeHTTP2Frame(_ type: HTTP2FrameType, flags: HTTP2FrameFlags = [], streamID: UInt32, payload: ByteBuffer) {
        writeHTTP2FrameHeader(HTTP2FrameHeader(length: payload.readableBytes, type: type, flags: flags, streamID: streamID))
        writeImmutableBuffer(payload)
    }

    /// Appends RST_STREAM.
    mutating func writeHTTP2ResetStream(_ streamID: UInt32, code: HTTP2ErrorCode) {
        writeHTTP2FrameHeader(HTTP2FrameHeader(length: 4, type: .rstStream, streamID: streamID))
        writeInteger(code.rawValue)
    }

    /// Appends WINDOW_UPDATE.
    mutating func writeHTTP2WindowUpdate(_ streamID: UInt32, increment: Int) {
        writeHTTP2FrameHeader(HTTP2FrameHeader(length: 4, type: .windowUpdate, streamID: streamID))
        writeInteger(UInt32(increment))
    }

    /// Appends GOAWAY, with `debugData` as its opaque data.
    mutating func writeHTTP2GoAway(lastStreamID: UInt32, code: HTTP2ErrorCode, debugData: String) {
        writeHTTP2FrameHeader(HTTP2FrameHeader(length: 8 + debugData.utf8.count, type: .goAway, streamID: 0))
        writeMultipleIntegers(lastStreamID, code.rawValue)
        writeString(debugData)
    }
}
