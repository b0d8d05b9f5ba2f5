@_spi(Fuzzing) import HTTPDNSServerTransport
import NIOHPACK

/// How the two servers' outcomes are held against each other, and the differences that are meant
/// (docs/RELIABILITY.md, "The differential HTTP/2 target", lists them with their reasons).
enum Comparison {
    /// A stream's fate on one side: the response it was given, and the RST_STREAM code.
    struct Fate: Equatable, CustomStringConvertible {
        var status: String?
        var reset: UInt32?

        var description: String {
            switch (status, reset) {
            case (nil, nil): "nothing"
            case (let status?, nil): "a \(status) response"
            case (nil, let reset?): "RST_STREAM \(errorName(reset))"
            case (let status?, let reset?): "a \(status) response and RST_STREAM \(errorName(reset))"
            }
        }
    }

    /// A whole frame of the client's, after the preface; `index` counts from 1.
    struct ClientFrame: CustomStringConvertible {
        let index: Int
        let end: Int
        let length: Int
        let type: UInt8
        let flags: UInt8
        let streamID: UInt32

        /// Where the frame's header and its payload start in the input.
        var start: Int { end - length - 9 }
        var payloadStart: Int { end - length }

        var description: String {
            "frame \(index) (type 0x\(String(type, radix: 16)), flags 0x\(String(flags, radix: 16)), stream \(streamID), \(length) bytes)"
        }
    }

    static let protocolError: UInt32 = 0x1
    static let streamClosed: UInt32 = 0x5
    static let frameSizeError: UInt32 = 0x6
    static let refusedStream: UInt32 = 0x7
    static let compressionError: UInt32 = 0x9
    static let enhanceYourCalm: UInt32 = 0xB
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// What differs beyond the deliberate differences, or nil.
    static func difference(_ bytes: [UInt8], ours: HTTP2Exchange, reference: Reference.Result) async -> String? {
        let (oursOutcome, referenceOutcome) = (Outcome(serverBytes: ours.output), Outcome(serverBytes: reference.output))
        if !bytes.starts(with: preface.prefix(bytes.count)) {
            // The service tells a wrong preface at its first wrong byte (PROTOCOL_ERROR, RFC 9113 §3.4);
            // swift-nio-http2 waits for 24 bytes.
            guard oursOutcome.connectionError == protocolError else {
                return "the preface: it is wrong, and the service ended the connection with \(errorName(oursOutcome.connectionError))"
            }
            return nil
        }
        let frames = clientFrames(bytes)
        if let first = frames.first, first.type != 0x4 || first.flags & 0x1 != 0 {
            // RFC 9113 §3.4: the client's preface ends with SETTINGS, or the connection ends with PROTOCOL_ERROR. At
            // this frame swift-nio-http2 parses a header block before it checks (COMPRESSION_ERROR for one that does
            // not decode) and skips extension frames (ALTSVC, ORIGIN, unknown types), so the service is held to
            // the RFC alone here.
            guard oursOutcome.connectionError == protocolError else {
                return
                    "the preface: the client's first frame is not SETTINGS, and the service ended the connection with \(errorName(oursOutcome.connectionError))"
            }
            return nil
        }
        // HEADERS without END_HEADERS that cannot hold the priority fields its flags announce (too short for them and
        // the pad length: FRAME_SIZE_ERROR, §4.2; padding longer than what follows them: PROTOCOL_ERROR, §6.2): the
        // service ends the connection at it. swift-nio-http2 reads the priority fields from the whole block once it
        // has ended, so it may take the request, and more after it, and end the connection later or with another
        // code, or not at all. From that frame on the two are not comparable: the service is held to ending the
        // connection with the fault's code, and both to what they do with the frames before it.
        if let faulty = frames.first(where: { $0.type == 0x1 && $0.flags & 0x4 == 0 && priorityFieldsFault($0, bytes) != nil }),
            oursOutcome.connectionError == priorityFieldsFault(faulty, bytes)
        {
            let before = comparable(Array(bytes[..<faulty.start]))
            return await difference(before, ours: await TransportFuzzing.http2Exchange(before), reference: Reference.exchange(before))
        }
        // Limits: both bound control frames, resets, malformed streams, empty DATA and CONTINUATION frames, by
        // different counts.
        if oursOutcome.connectionError == enhanceYourCalm || referenceOutcome.connectionError == enhanceYourCalm { return nil }
        if oursOutcome.connectionError != referenceOutcome.connectionError {
            let referenceFrame = await frameEndingConnection(bytes, frames, ended: referenceOutcome.connectionError != nil) {
                Outcome(serverBytes: Reference.exchange($0).output)
            }
            let oursFrame = await frameEndingConnection(bytes, frames, ended: oursOutcome.connectionError != nil, likely: referenceFrame) {
                await Outcome(serverBytes: TransportFuzzing.http2Exchange($0).output)
            }
            if connectionEndsAsMeant(
                ours: (oursOutcome, oursFrame),
                reference: (referenceOutcome.connectionError, referenceFrame),
                frames: frames,
                bytes: bytes
            ) {
                return nil
            }
            let (oursAt, referenceAt) = (oursFrame.map(\.description) ?? "no frame", referenceFrame.map(\.description) ?? "no frame")
            return
                "the connection: the service ended it with \(errorName(oursOutcome.connectionError)) at \(oursAt), swift-nio-http2 with \(errorName(referenceOutcome.connectionError)) at \(referenceAt)"
        }
        var notTakenByUs: Set<UInt32> = []
        var refusedWhileResetWorkRuns = 0
        let streams = Set(oursOutcome.resets.keys).union(oursOutcome.responses.keys)
            .union(referenceOutcome.resets.keys).union(referenceOutcome.responses.keys)
        for id in streams.sorted() {
            let oursFate = Fate(status: oursOutcome.responses[id], reset: oursOutcome.resets[id])
            let referenceFate = Fate(status: referenceOutcome.responses[id], reset: referenceOutcome.resets[id])
            guard oursFate != referenceFate else { continue }
            switch streamEndsAsMeant(
                id,
                ours: oursFate,
                reference: referenceFate,
                result: reference,
                frames: frames,
                bytes: bytes,
                referenceEnded: referenceOutcome.connectionError
            ) {
            case .no: break
            case .sameRequestsTaken: continue
            case .onlyReferenceMayTakeIt:
                notTakenByUs.insert(id)
                continue
            case .refusedWhileResetWorkRuns where refusedWhileResetWorkRuns < reference.resetAfterTaken:
                refusedWhileResetWorkRuns += 1
                notTakenByUs.insert(id)
                continue
            case .refusedWhileResetWorkRuns:
                break
            }
            return "stream \(id): the service gave \(oursFate), swift-nio-http2 \(referenceFate)"
        }
        // A request the service refused as malformed and swift-nio-http2 took: its stream's fates may agree all the
        // same (swift-nio-http2 resets it for what the client sent next).
        for (id, _) in reference.requests where oursOutcome.resets[id] == protocolError && malformedForTheServiceAlone(reference.fields[id]) {
            notTakenByUs.insert(id)
        }
        let oursTaken = ours.requests.map(\.description).sorted()
        let referenceTaken = reference.requests.filter { !notTakenByUs.contains($0.key) }.map(\.value.description).sorted()
        guard oursTaken == referenceTaken else {
            return "the requests taken: the service's router was handed \(oursTaken), swift-nio-http2's application \(referenceTaken)"
        }
        return nil
    }

    /// Whether the two ended the connection differently in one of the ways that are meant.
    private static func connectionEndsAsMeant(
        ours: (outcome: Outcome, frame: ClientFrame?),
        reference: (code: UInt32?, frame: ClientFrame?),
        frames: [ClientFrame],
        bytes: [UInt8]
    ) -> Bool {
        let oursCode = ours.outcome.connectionError
        guard let referenceFrame = reference.frame else { return false }
        let oursLater = ours.frame.map { $0.index > referenceFrame.index } ?? true
        // swift-nio-http2 checks extension frames it knows (ALTSVC, ORIGIN) that the service does not implement and
        // so ignores, as every unknown frame type (RFC 9113 §5.5).
        if referenceFrame.type == 0xA || referenceFrame.type == 0xC, oursLater { return true }
        // A client's GOAWAY naming a stream of its own (odd) as the last one processed: swift-nio-http2 ends the
        // connection with PROTOCOL_ERROR; RFC 9113 §6.8 does not make it an error, and the service takes any GOAWAY
        // from the client for its leaving.
        if referenceFrame.type == 0x7, reference.code == protocolError, oursCode == nil, referenceFrame.length >= 8,
            bytes[referenceFrame.payloadStart + 3] & 1 == 1
        {
            return true
        }
        // A stream that depends on itself: a stream error (RFC 9113 §5.3.1), so the service resets it;
        // swift-nio-http2 ends the connection.
        if reference.code == protocolError, oursLater, ours.outcome.resets[referenceFrame.streamID] == protocolError,
            dependsOnItself(referenceFrame, bytes)
        {
            return true
        }
        // A frame on a closed stream: the service resets the stream (a stream error, §5.1, §6.1), or ignores the frame
        // when it had reset the stream itself (§5.1: frames the client sent before it heard of the reset);
        // swift-nio-http2 ends the connection, which §5.1 also allows.
        if reference.code == streamClosed || reference.code == protocolError, oursLater, referenceFrame.streamID != 0,
            ours.outcome.resets[referenceFrame.streamID] != nil
        {
            return true
        }
        // PRIORITY of a length other than 5 on a stream the client has opened: a stream error (§6.3), so the service
        // resets the stream with FRAME_SIZE_ERROR; swift-nio-http2 ends the connection.
        if reference.code == frameSizeError, oursLater, referenceFrame.type == 0x2, referenceFrame.length != 5,
            ours.outcome.resets[referenceFrame.streamID] != nil  // the first reset's code is the one kept
        {
            return true
        }
        // A header list past the 16,384 bytes both announce: the service answers 431 on its stream (§10.5.1),
        // swift-nio-http2 ends the connection (COMPRESSION_ERROR).
        if reference.code == compressionError, oursLater, ours.outcome.responses[referenceFrame.streamID] == "431" { return true }
        // PUSH_PROMISE from a client is the fault itself (PROTOCOL_ERROR, §8.4); swift-nio-http2 checks the frame's
        // form and its header block first, at the CONTINUATION that ends the block when the frame does not.
        if let oursFrame = ours.frame, oursFrame.type == 0x5, oursCode == protocolError,
            reference.code == frameSizeError || reference.code == compressionError, oursFrame.index <= referenceFrame.index,
            frames[oursFrame.index..<referenceFrame.index].allSatisfy({ $0.type == 0x9 && $0.streamID == oursFrame.streamID })
        {
            return true
        }
        guard let oursFrame = ours.frame, oursFrame.index == referenceFrame.index else { return false }
        let frame = oursFrame
        // A header block that does not decode, in a frame that breaks another rule too: swift-nio-http2 decodes
        // before it checks the frame, the service checks first (and decodes every block it keeps).
        if Set([oursCode, reference.code]) == [compressionError, protocolError], breaksAStreamRule(frame, frames) { return true }
        // HEADERS far below the highest stream opened: the service remembers which of the last 512 client streams
        // were opened (STREAM_CLOSED for those, PROTOCOL_ERROR for those skipped) and takes older ones as closed.
        if frame.type == 0x1, oursCode == streamClosed, reference.code == protocolError {
            let highest = frames.prefix(frame.index - 1).filter { $0.type == 0x1 }.map(\.streamID).max() ?? 0
            if frame.streamID &+ 1_024 <= highest { return true }
        }
        // A frame that is both on the wrong kind of stream (a connection frame on a stream, or a stream frame on
        // stream 0) and of the wrong length: the service checks the stream first, swift-nio-http2 the length.
        if Set([oursCode, reference.code]) == [protocolError, frameSizeError], onTheWrongStreamWithTheWrongLength(frame) { return true }
        // HEADERS too short for the priority (and pad length) its flags announce: FRAME_SIZE_ERROR, as §4.2 asks of
        // a frame too small for its mandatory fields; swift-nio-http2 says PROTOCOL_ERROR.
        if frame.type == 0x1, oursCode == frameSizeError, reference.code == protocolError, priorityFieldsFault(frame, bytes) == frameSizeError {
            return true
        }
        return false
    }

    enum MeantDifference {
        case no
        /// Meant, and both took the stream's request or neither did.
        case sameRequestsTaken
        /// Meant, and the service did not take the request, which swift-nio-http2 may have.
        case onlyReferenceMayTakeIt
        /// The service refused the stream while router work for streams the client reset was still counted.
        case refusedWhileResetWorkRuns
    }

    /// Whether the two treated stream `id` differently in one of the ways that are meant.
    private static func streamEndsAsMeant(
        _ id: UInt32,
        ours: Fate,
        reference: Fate,
        result: Reference.Result,
        frames: [ClientFrame],
        bytes: [UInt8],
        referenceEnded: UInt32?
    ) -> MeantDifference {
        // swift-nio-http2 writes its GOAWAY at once but buffers stream resets, and once it has ended the connection
        // the ones decided in the same read are not written: a stream it reset then shows nothing.
        if ours.reset != nil, ours.status == nil, reference == Fate(), referenceEnded != nil, result.requests[id] == nil {
            return .sameRequestsTaken
        }
        // PRIORITY of a length other than 5: the service resets the stream (§6.3), swift-nio-http2 ends the
        // connection there (a connection-level difference, unless both end it, later, with the same code).
        if ours == Fate(reset: frameSizeError), reference == Fate(), referenceEnded == frameSizeError,
            frames.contains(where: { $0.type == 0x2 && $0.streamID == id && $0.length != 5 })
        {
            return .sameRequestsTaken
        }
        // The service counts a stream the client reset after its request was taken until the router's work for it
        // ends; swift-nio-http2 frees it at once. So the service may refuse a stream opened after such a reset that
        // swift-nio-http2 takes (at most one for each such reset: `difference` counts them).
        if ours == Fate(reset: refusedStream), reference == Fate(status: "200"), let after = result.highestStreamAtFirstReset, id > after {
            return .refusedWhileResetWorkRuns
        }
        // swift-nio-http2 sends no response header block larger than the client's SETTINGS_MAX_HEADER_LIST_SIZE (its
        // responses here take about 90 bytes); the service takes the setting as the advice RFC 9113 §6.5.2 calls it.
        if ours.status != nil, reference == Fate(), let last = clientSetting(0x6, bytes, frames).last, last < 100 { return .sameRequestsTaken }
        // HEADERS on a stream whose request has ended (half-closed, remote): STREAM_CLOSED, as RFC 9113 §5.1 asks;
        // swift-nio-http2 says PROTOCOL_ERROR.
        if ours == Fate(reset: streamClosed), reference == Fate(reset: protocolError), requestEndedBeforeMoreHeaders(id, frames: frames) {
            return .sameRequestsTaken
        }
        // A frame on a closed stream that swift-nio-http2's application never saw opened (one skipped, or one
        // swift-nio-http2 refused): the service resets it (a stream error, §5.1, §6.1), swift-nio-http2 ignores the
        // frame.
        if ours == Fate(reset: streamClosed), reference == Fate(), result.fields[id] == nil { return .sameRequestsTaken }
        // A request the service finds malformed (RST_STREAM PROTOCOL_ERROR) for a rule swift-nio-http2 does not check.
        // (swift-nio-http2 may reset the stream later, for what the client sent next.)
        if ours == Fate(reset: protocolError), malformedForTheServiceAlone(result.fields[id]) {
            return .onlyReferenceMayTakeIt
        }
        return .no
    }

    /// Whether a header block's frame breaks a rule of streams besides its block: PUSH_PROMISE from a client; HEADERS
    /// on stream 0, an even stream, or one at or below the highest stream opened before; CONTINUATION with no
    /// header block to continue, or on another stream than the block's.
    static func breaksAStreamRule(_ frame: ClientFrame, _ frames: [ClientFrame]) -> Bool {
        let before = frames.prefix(frame.index - 1)
        switch frame.type {
        case 0x5:
            return true
        case 0x1:
            let highest = before.filter { $0.type == 0x1 }.map(\.streamID).max() ?? 0
            return frame.streamID == 0 || frame.streamID & 1 == 0 || frame.streamID <= highest
        case 0x9:
            guard let previous = before.last, [0x1, 0x5, 0x9].contains(previous.type), previous.flags & 0x4 == 0 else { return true }
            return previous.streamID != frame.streamID
        default:
            return false
        }
    }

    /// The connection error the service owes `frame`, a HEADERS frame, for the priority fields its flags announce:
    /// FRAME_SIZE_ERROR when it is too short for them (and the pad length), PROTOCOL_ERROR when its padding is longer
    /// than what follows them (RFC 9113 §6.2); nil when they fit, or when it has none.
    static func priorityFieldsFault(_ frame: ClientFrame, _ bytes: [UInt8]) -> UInt32? {
        guard frame.flags & 0x20 != 0 else { return nil }
        let padded = frame.flags & 0x8 != 0
        if frame.length < 5 + (padded ? 1 : 0) { return frameSizeError }
        return padded && Int(bytes[frame.payloadStart]) > frame.length - 6 ? protocolError : nil
    }

    /// Whether `frame` is a connection frame (SETTINGS, PING, GOAWAY) on a stream, or a PRIORITY or RST_STREAM frame
    /// on stream 0, and also not of its type's length.
    static func onTheWrongStreamWithTheWrongLength(_ frame: ClientFrame) -> Bool {
        switch frame.type {
        case 0x4: frame.streamID != 0 && (frame.flags & 0x1 != 0 ? frame.length != 0 : frame.length % 6 != 0)
        case 0x6: frame.streamID != 0 && frame.length != 8
        case 0x7: frame.streamID != 0 && frame.length < 8
        case 0x2: frame.streamID == 0 && frame.length != 5
        case 0x3: frame.streamID == 0 && frame.length != 4
        default: false
        }
    }

    /// Whether `frame`, a HEADERS frame with priority fields or a PRIORITY frame, makes its stream depend on itself.
    static func dependsOnItself(_ frame: ClientFrame, _ bytes: [UInt8]) -> Bool {
        var start = frame.payloadStart
        switch frame.type {
        case 0x1 where frame.flags & 0x20 != 0: if frame.flags & 0x8 != 0 { start += 1 }
        case 0x2: break
        default: return false
        }
        guard start + 4 <= frame.end else { return false }
        return bytes[start..<start + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF == frame.streamID
    }

    /// Whether a request's header fields break a rule the service checks and swift-nio-http2 does not: a :path
    /// that is neither absolute nor "*" (RFC 9113 §8.3.1), a content-length that is not a number (RFC 9110 §8.6), a
    /// field value with a space or tab at either end (RFC 9113 §8.2.1).
    static func malformedForTheServiceAlone(_ fields: HPACKHeaders?) -> Bool {
        guard let fields else { return false }
        if let path = fields.first(name: ":path"), !path.hasPrefix("/"), path != "*" { return true }
        if fields["content-length"].contains(where: { $0.isEmpty || !$0.utf8.allSatisfy { (0x30...0x39).contains($0) } }) {
            return true
        }
        let blank: Set<UInt8> = [0x20, 0x09]
        return fields.contains { blank.contains($0.value.utf8.first ?? 0) || blank.contains($0.value.utf8.last ?? 0) }
    }

    /// Every value the client's SETTINGS frames gave the setting `identifier`.
    static func clientSetting(_ identifier: UInt8, _ bytes: [UInt8], _ frames: [ClientFrame]) -> [Int] {
        var values: [Int] = []
        for frame in frames where frame.type == 0x4 && frame.flags & 0x1 == 0 && frame.streamID == 0 {
            var offset = frame.payloadStart
            while offset + 6 <= frame.end {
                if bytes[offset] == 0 && bytes[offset + 1] == identifier {
                    values.append(bytes[offset + 2..<offset + 6].reduce(0) { $0 << 8 | Int($1) })
                }
                offset += 6
            }
        }
        return values
    }

    /// Whether the client ended stream `id`'s request (END_STREAM on HEADERS or DATA) before a later HEADERS frame on it.
    static func requestEndedBeforeMoreHeaders(_ id: UInt32, frames: [ClientFrame]) -> Bool {
        var ended = false
        for frame in frames where frame.streamID == id {
            if frame.type == 0x1, ended { return true }
            if frame.type == 0x0 || frame.type == 0x1, frame.flags & 0x1 != 0 { ended = true }
        }
        return false
    }

    /// The client's whole frames after the preface.
    static func clientFrames(_ bytes: [UInt8]) -> [ClientFrame] {
        var frames: [ClientFrame] = []
        var offset = preface.count
        while offset + 9 <= bytes.count {
            let length = Int(bytes[offset]) << 16 | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
            guard offset + 9 + length <= bytes.count else { break }
            let streamID = bytes[offset + 5..<offset + 9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF
            frames.append(
                ClientFrame(
                    index: frames.count + 1,
                    end: offset + 9 + length,
                    length: length,
                    type: bytes[offset + 3],
                    flags: bytes[offset + 4],
                    streamID: streamID
                )
            )
            offset += 9 + length
        }
        return frames
    }

    /// The frame after which `server` ends the connection with an error (`ended` says whether it does with all of
    /// `bytes`): the shortest run of whole frames that does it. `likely` is tried first (two runs); otherwise the
    /// frame is found by halving (once a server has ended a connection, more input cannot change that). Nil when
    /// it does not, or already at the preface.
    static func frameEndingConnection(
        _ bytes: [UInt8],
        _ frames: [ClientFrame],
        ended: Bool,
        likely: ClientFrame? = nil,
        _ server: ([UInt8]) async -> Outcome
    ) async -> ClientFrame? {
        guard ended else { return nil }
        func endsWithin(_ count: Int) async -> Bool {
            await server(Array(bytes.prefix(count == 0 ? preface.count : frames[count - 1].end))).connectionError != nil
        }
        if let likely, await endsWithin(likely.index), await !endsWithin(likely.index - 1) { return likely }
        var (low, high) = (0, frames.count)  // how many frames it takes
        while low < high {
            let middle = (low + high) / 2
            if await endsWithin(middle) { high = middle } else { low = middle + 1 }
        }
        return low == 0 ? nil : frames[low - 1]
    }

    /// `bytes` as both servers are given them: at most 16 KiB, up to the end of the client's first GOAWAY frame, if
    /// it sends one; without a frame cut short at the end; and without a header block left unfinished at the end.
    ///
    /// The service takes a client's GOAWAY for the client's leaving, answers what it has and closes; swift-nio-http2
    /// reads on. Either is allowed (RFC 9113 §6.8), so what follows is not compared. swift-nio-http2 acts on a DATA
    /// frame's first bytes before the rest has come, where the service waits for the whole frame; and it checks a
    /// HEADERS frame only once its header block is complete, where the service checks it at once. Inputs that end
    /// mid-frame or mid-block would be compared on when each acts, not on what.
    static func comparable(_ input: [UInt8]) -> [UInt8] {
        guard input.count > preface.count else { return input }
        // Within every flow-control window of both (65,535 bytes), so neither waits for credit.
        let bytes = Array(input.prefix(16_384))
        var end = preface.count
        var blockStart: Int?
        for frame in clientFrames(bytes) {
            if blockStart != nil {
                // CONTINUATION goes on with the block; any other frame breaks it, and both end the connection there.
                if frame.type != 0x9 || frame.flags & 0x4 != 0 { blockStart = nil }
            } else if frame.type == 0x1 || frame.type == 0x5, frame.flags & 0x4 == 0 {
                blockStart = frame.start
            }
            end = frame.end
            if frame.type == 0x7 { break }
        }
        return Array(bytes.prefix(blockStart ?? end))
    }
}
