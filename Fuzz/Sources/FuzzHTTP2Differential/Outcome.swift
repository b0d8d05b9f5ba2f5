import NIOCore
import NIOHPACK

/// What a server did with a connection, read back from the bytes it wrote: the error code of the GOAWAY that
/// ended it, if any, and each stream's fate. After that GOAWAY only RST_STREAM frames count (neither server writes
/// a response after it).
struct Outcome: Equatable {
    /// The code of the first GOAWAY that names an error; nil when the connection did not end in one.
    var connectionError: UInt32?
    /// The code of the first RST_STREAM the server sent on each stream.
    var resets: [UInt32: UInt32] = [:]
    /// The `:status` of the first response each stream was given.
    var responses: [UInt32: String] = [:]

    /// Reads `bytes`: frames as RFC 9113 §4 lays them out, after the server's SETTINGS. Response header blocks
    /// are decoded in order with one HPACK decoder, as a client would.
    init(serverBytes bytes: [UInt8]) {
        var buffer = ByteBuffer(bytes: bytes)
        // The servers' encoders may announce a table as large as the client allows (up to 4 GiB), which this decoder
        // would allocate whole: it keeps 64 KiB, more than all the responses to 16 KiB of input add, and the size
        // updates are taken out of each block before it is decoded (`droppingTableSizeUpdates`).
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator(), maxDynamicTableSize: 65_536)
        var block: (streamID: UInt32, fragment: ByteBuffer)?
        while let (length, type, flags, stream) = buffer.readMultipleIntegers(as: (UInt16, UInt8, UInt8, UInt8, UInt32).self)
            .map({ (Int($0.0) << 8 | Int($0.1), $0.2, $0.3, $0.4 & 0x7FFF_FFFF) }),
            var payload = buffer.readSlice(length: length)
        {
            switch type {
            case 0x1, 0x9:  // HEADERS, CONTINUATION
                guard connectionError == nil else { continue }
                if type == 0x1 {
                    if flags & 0x8 != 0 { payload.moveReaderIndex(forwardBy: 1) }  // our servers never pad, but may
                    if flags & 0x20 != 0 { payload.moveReaderIndex(forwardBy: 5) }
                    block = (stream, payload)
                } else {
                    block?.fragment.writeImmutableBuffer(payload)
                }
                guard flags & 0x4 != 0, case (let id, var fragment)? = block else { continue }
                block = nil
                Self.droppingTableSizeUpdates(&fragment)
                guard let fields = try? decoder.decodeHeaders(from: &fragment) else { continue }
                if responses[id] == nil, let status = fields.first(name: ":status") { responses[id] = status }
            case 0x3:  // RST_STREAM
                if resets[stream] == nil, let code = payload.readInteger(as: UInt32.self) { resets[stream] = code }
            case 0x7:  // GOAWAY
                guard let (_, code) = payload.readMultipleIntegers(as: (UInt32, UInt32).self), code != 0 else { continue }
                if connectionError == nil { connectionError = code }
            default:
                continue
            }
        }
    }

    init() {}

    /// Moves `block` past the dynamic table size updates it starts with (RFC 7541 §4.2, §6.3: `001` and an integer
    /// with a 5-bit prefix).
    static func droppingTableSizeUpdates(_ block: inout ByteBuffer) {
        while let first = block.getInteger(at: block.readerIndex, as: UInt8.self), first & 0xE0 == 0x20 {
            var index = block.readerIndex + 1
            if first & 0x1F == 0x1F {
                while let byte = block.getInteger(at: index, as: UInt8.self) {
                    index += 1
                    if byte & 0x80 == 0 { break }
                }
            }
            block.moveReaderIndex(to: index)
        }
    }
}

/// HTTP/2's error codes by name, for the reports.
func errorName(_ code: UInt32?) -> String {
    guard let code else { return "none" }
    let names = [
        "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
        "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
    ]
    return code < names.count ? names[Int(code)] : "0x\(String(code, radix: 16))"
}
