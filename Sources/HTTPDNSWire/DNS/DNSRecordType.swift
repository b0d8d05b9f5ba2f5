/// A resource record type (RFC 1035 §3.2.2 and the IANA registry), any 16-bit value, with names for the common ones.
public struct DNSRecordType: Sendable, Hashable, RawRepresentable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    public let rawValue: UInt16

    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt16) { self.rawValue = value }

    public static let a: DNSRecordType = 1
    public static let ns: DNSRecordType = 2
    public static let cname: DNSRecordType = 5
    public static let soa: DNSRecordType = 6
    public static let ptr: DNSRecordType = 12
    public static let mx: DNSRecordType = 15
    public static let txt: DNSRecordType = 16
    public static let aaaa: DNSRecordType = 28
    public static let srv: DNSRecordType = 33
    public static let opt: DNSRecordType = 41
    public static let https: DNSRecordType = 65

    /// The types whose RDATA holds names a server may have compressed, laid out field by field: those of RFC 1035,
    /// which RFC 3597 §4 says to decompress, and RP, AFSDB, RT, PX, SRV and NAPTR, which it says should be.
    /// `nil` for every other type, whose RDATA is kept as it came.
    var compressedNameLayout: [Layout]? {
        switch rawValue {
        case 2, 3, 4, 5, 7, 8, 9, 12: [.name]  // NS, MD, MF, CNAME, MB, MG, MR, PTR
        case 6: [.name, .name, .bytes(20)]  // SOA: MNAME, RNAME, five 32-bit numbers
        case 14, 17: [.name, .name]  // MINFO; RP: mailbox, TXT owner
        case 15, 18, 21: [.bytes(2), .name]  // MX, AFSDB, RT: a 16-bit number, a name
        case 26: [.bytes(2), .name, .name]  // PX: preference, MAP822, MAPX400
        case 33: [.bytes(6), .name]  // SRV: priority, weight, port, target
        case 35: [.bytes(4), .characterString, .characterString, .characterString, .name]  // NAPTR
        default: nil
        }
    }

    /// One part of an RDATA layout.
    enum Layout {
        case name
        case bytes(Int)
        /// A length byte and that many bytes (RFC 1035 §3.3).
        case characterString
    }

    /// The mnemonics known here.
    private static let mnemonics: [UInt16: String] = [
        1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA", 33: "SRV", 41: "OPT",
        43: "DS", 48: "DNSKEY", 52: "TLSA", 64: "SVCB", 65: "HTTPS", 255: "ANY", 257: "CAA",
    ]

    /// The mnemonic (`A`, `AAAA`, `HTTPS`) or `TYPE<n>` (RFC 3597 §5) for the others.
    public var description: String { Self.mnemonics[rawValue] ?? "TYPE\(rawValue)" }

    /// A type as written: its mnemonic in any case, `TYPE<n>`, or a number; nil for anything else (0 included).
    public init?(presentation text: some StringProtocol) {
        let upper = text.uppercased()
        if let known = Self.mnemonics.first(where: { $0.value == upper }) {
            self.init(rawValue: known.key)
        } else if let number = UInt16(upper.hasPrefix("TYPE") ? String(upper.dropFirst(4)) : upper), number > 0 {
            self.init(rawValue: number)
        } else {
            return nil
        }
    }
}
