import HTTPDNSCore

/// Just enough of the DNS wire format (RFC 1035 §4) for the stub server: reading the question of a query and
/// writing answers. Names are written uncompressed, which every resolver must accept.
enum DNSWire {
    static let headerLength = 12

    enum RecordType: UInt16, Sendable {
        case a = 1
        case cname = 5
        case aaaa = 28
    }

    enum ResponseCode: UInt8, Sendable {
        case noError = 0
        case serverFailure = 2
        case nameError = 3
        case refused = 5
    }

    /// The part of a query the stub needs.
    struct Query: Sendable, Hashable {
        var id: UInt16
        var recursionDesired: Bool
        /// Lower case, without the trailing dot.
        var name: String
        var type: UInt16
        var qclass: UInt16
    }

    /// One resource record to put in an answer section.
    struct Record: Sendable, Hashable {
        var name: String
        var type: RecordType
        var ttl: UInt32
        var data: [UInt8]

        static func a(_ name: String, _ address: IPv4Address, ttl: UInt32) -> Record {
            let value = address.value
            return Record(name: name, type: .a, ttl: ttl, data: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) })
        }

        static func aaaa(_ name: String, _ address: IPv6Address, ttl: UInt32) -> Record {
            var data: [UInt8] = []
            for half in [address.high, address.low] {
                for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: half >> UInt64(shift))) }
            }
            return Record(name: name, type: .aaaa, ttl: ttl, data: data)
        }

        static func cname(_ name: String, target: String, ttl: UInt32) -> Record {
            Record(name: name, type: .cname, ttl: ttl, data: DNSWire.encodeName(target))
        }
    }

    /// Reads the header and the single question of a query; nil when the bytes are not one.
    static func parseQuery(_ bytes: [UInt8]) -> Query? {
        guard bytes.count >= headerLength else { return nil }
        func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
        let flags = u16(2)
        // A response (QR set) or anything but one question is not a query this stub answers.
        guard flags & 0x8000 == 0, u16(4) == 1 else { return nil }
        var offset = headerLength
        var labels: [String] = []
        while true {
            guard offset < bytes.count else { return nil }
            let length = Int(bytes[offset])
            offset += 1
            if length == 0 { break }
            // Queries are never compressed; a pointer or an over-long label means garbage.
            guard length <= 63, offset + length <= bytes.count else { return nil }
            labels.append(String(decoding: bytes[offset..<offset + length], as: UTF8.self).lowercased())
            offset += length
        }
        guard offset + 4 <= bytes.count else { return nil }
        return Query(
            id: u16(0),
            recursionDesired: flags & 0x0100 != 0,
            name: labels.joined(separator: "."),
            type: u16(offset),
            qclass: u16(offset + 2)
        )
    }

    /// A response to `query` (whose question is repeated, under `questionName` when given).
    static func response(
        to query: Query,
        id: UInt16? = nil,
        questionName: String? = nil,
        code: ResponseCode = .noError,
        truncated: Bool = false,
        answers: [Record] = []
    ) -> [UInt8] {
        var flags: UInt16 = 0x8000 | 0x0400 | 0x0080  // QR, AA, RA
        if query.recursionDesired { flags |= 0x0100 }
        if truncated { flags |= 0x0200 }
        flags |= UInt16(code.rawValue)
        var bytes: [UInt8] = []
        for field in [id ?? query.id, flags, 1, UInt16(answers.count), 0, 0] { append16(field, to: &bytes) }
        bytes += encodeName(questionName ?? query.name)
        append16(query.type, to: &bytes)
        append16(query.qclass, to: &bytes)
        for record in answers {
            bytes += encodeName(record.name)
            append16(record.type.rawValue, to: &bytes)
            append16(1, to: &bytes)  // IN
            append16(UInt16(truncatingIfNeeded: record.ttl >> 16), to: &bytes)
            append16(UInt16(truncatingIfNeeded: record.ttl), to: &bytes)
            append16(UInt16(record.data.count), to: &bytes)
            bytes += record.data
        }
        return bytes
    }

    static func encodeName(_ name: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for label in name.split(separator: ".") {
            bytes.append(UInt8(label.utf8.count))
            bytes += label.utf8
        }
        bytes.append(0)
        return bytes
    }

    private static func append16(_ value: UInt16, to bytes: inout [UInt8]) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }
}
