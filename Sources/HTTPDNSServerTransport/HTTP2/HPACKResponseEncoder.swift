import HTTPTypes
import NIOCore

/// Writes response header blocks (RFC 7541) for ``HTTP2ServerConnection``.
///
/// Every field is a literal that is never added to the dynamic table, with the name taken from the static table
/// where it is there: the encoder keeps no state about what the client has seen, so a block costs one pass over
/// the fields and no look-ups. Responses here carry a handful of short fields, where the dynamic table would save
/// a few bytes per response and cost a table per connection.
struct HPACKResponseEncoder {
    /// Whether the next block must start by setting the dynamic table's size to zero: on the first block, and
    /// after the client changes SETTINGS_HEADER_TABLE_SIZE (RFC 7541 §4.2 asks for the update after a change; zero
    /// is within any limit, and is what this encoder uses).
    private var announceEmptyTable = true

    /// The client has sent SETTINGS_HEADER_TABLE_SIZE.
    mutating func tableSizeSettingChanged() {
        announceEmptyTable = true
    }

    /// Appends a response's header block: the status, the content type and cache policy of a reply, the other
    /// fields without the ones HTTP/2 forbids (RFC 9113 §8.2.2) and without `date`, `content-length` when the head
    /// knows it, and `date`.
    mutating func writeHead(_ head: ResponseHead, date: String, into buffer: inout ByteBuffer) {
        startBlock(&buffer)
        Self.writeStatus(head.status.code, into: &buffer)
        if let contentType = head.contentType {
            Self.writeField(nameIndex: StaticName.contentType, value: contentType, into: &buffer)
        }
        switch head.cacheControl {
        case .maxAge(let seconds)?:
            let prefix = "max-age="
            Self.writeFieldHead(
                nameIndex: StaticName.cacheControl,
                valueLength: prefix.utf8.count + ByteBuffer.decimalDigits(Int(seconds)),
                into: &buffer
            )
            buffer.writeString(prefix)
            buffer.writeDecimal(Int(seconds))
        case .noStore?:
            Self.writeField(nameIndex: StaticName.cacheControl, value: "no-store", into: &buffer)
        case nil:
            break
        }
        head.fields.forEach(canonical: true) { name, value in
            guard ResponseHead.isWritten(name) else { return }
            Self.write(name: name, value: value, into: &buffer)
        }
        if let length = head.contentLength {
            Self.writeFieldHead(nameIndex: StaticName.contentLength, valueLength: ByteBuffer.decimalDigits(length), into: &buffer)
            buffer.writeDecimal(length)
        }
        Self.writeField(nameIndex: StaticName.date, value: date, into: &buffer)
    }

    /// Appends a trailer block: `fields` without the fields HTTP/2 forbids.
    mutating func writeTrailers(_ fields: HTTPFields, into buffer: inout ByteBuffer) {
        startBlock(&buffer)
        Self.write(fields, into: &buffer)
    }

    private mutating func startBlock(_ buffer: inout ByteBuffer) {
        guard announceEmptyTable else { return }
        announceEmptyTable = false
        buffer.writeInteger(UInt8(0x20))  // dynamic table size update, to 0
    }

    private static func write(_ fields: HTTPFields, into buffer: inout ByteBuffer) {
        for field in fields { write(name: field.name.canonicalName, value: field.value, into: &buffer) }
    }

    /// One field of a head or trailers, its name already lower case (RFC 9113 §8.2.1).
    private static func write(name: String, value: String, into buffer: inout ByteBuffer) {
        if let index = StaticName.index(of: name) {
            writeField(nameIndex: index, value: value, into: &buffer)
        } else if !isConnectionSpecific(name) {
            buffer.writeInteger(UInt8(0))  // literal without indexing, new name
            writeString(name, into: &buffer)
            writeString(value, into: &buffer)
        }
    }

    /// Fields that belong to one HTTP/1.1 connection, which HTTP/2 must not carry (RFC 9113 §8.2.2).
    static func isConnectionSpecific(_ name: String) -> Bool {
        switch name {
        case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade": true
        default: false
        }
    }

    private static func writeStatus(_ code: Int, into buffer: inout ByteBuffer) {
        let indexed: Int? =
            switch code {
            case 200: 8
            case 204: 9
            case 206: 10
            case 304: 11
            case 400: 12
            case 404: 13
            case 500: 14
            default: nil
            }
        if let indexed {
            writeInteger(indexed, prefixBits: 7, flags: 0x80, into: &buffer)
        } else {
            writeInteger(StaticName.status, prefixBits: 4, flags: 0, into: &buffer)
            writeDecimal(code, into: &buffer)
        }
    }

    private static func writeField(nameIndex: Int, value: String, into buffer: inout ByteBuffer) {
        writeFieldHead(nameIndex: nameIndex, valueLength: value.utf8.count, into: &buffer)
        buffer.writeString(value)
    }

    /// A literal field without indexing, its name from the static table, up to its value's bytes.
    private static func writeFieldHead(nameIndex: Int, valueLength: Int, into buffer: inout ByteBuffer) {
        if nameIndex >= 15, nameIndex < 15 + 0x80, valueLength < 0x7F {
            // The common case in one write: a 4-bit prefix that overflows into a second byte, then a short length.
            buffer.writeMultipleIntegers(UInt8(0x0F), UInt8(nameIndex - 15), UInt8(valueLength))
        } else {
            writeInteger(nameIndex, prefixBits: 4, flags: 0, into: &buffer)
            writeInteger(valueLength, prefixBits: 7, flags: 0, into: &buffer)
        }
    }

    /// A string literal without Huffman coding.
    private static func writeString(_ string: String, into buffer: inout ByteBuffer) {
        writeInteger(string.utf8.count, prefixBits: 7, flags: 0, into: &buffer)
        buffer.writeString(string)
    }

    /// A non-negative decimal number as a string literal, without making a `String`.
    private static func writeDecimal(_ value: Int, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ByteBuffer.decimalDigits(value)))
        buffer.writeDecimal(value)
    }

    /// An integer with an N-bit prefix (RFC 7541 §5.1); `flags` fills the first byte's other bits.
    static func writeInteger(_ value: Int, prefixBits: Int, flags: UInt8, into buffer: inout ByteBuffer) {
        let limit = (1 << prefixBits) - 1
        guard value >= limit else {
            buffer.writeInteger(flags | UInt8(value))
            return
        }
        buffer.writeInteger(flags | UInt8(limit))
        var rest = value - limit
        while rest >= 0x80 {
            buffer.writeInteger(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        buffer.writeInteger(UInt8(rest))
    }

    /// Names in HPACK's static table (RFC 7541 Appendix A) that responses use.
    enum StaticName {
        static let status = 8
        static let cacheControl = 24
        static let contentLength = 28
        static let contentType = 31
        static let date = 33

        static func index(of name: String) -> Int? {
            switch name {
            case "content-type": 31
            case "cache-control": 24
            case "content-length": 28
            case "date": 33
            case "retry-after": 53
            case "allow": 22
            case "access-control-allow-origin": 20
            case "age": 21
            case "content-disposition": 25
            case "content-encoding": 26
            case "content-language": 27
            case "content-location": 29
            case "content-range": 30
            case "etag": 34
            case "expires": 36
            case "last-modified": 44
            case "link": 45
            case "location": 46
            case "server": 54
            case "set-cookie": 55
            case "strict-transport-security": 56
            case "vary": 59
            case "via": 60
            case "www-authenticate": 61
            default: nil
            }
        }
    }
}
