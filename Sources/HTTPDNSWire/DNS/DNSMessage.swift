import HTTPDNSCore

/// A DNS message (RFC 1035 §4): the header, the question, and the answer, authority and additional records.
///
/// Records of every type are carried through as raw RDATA (RFC 3597), so a message can be relayed without this
/// type knowing what its records mean; A and AAAA records can also be read and written as addresses. Names
/// inside the RDATA of the types RFC 1035 lets a server compress are expanded when a message is parsed, so a
/// record's ``Record/data`` never points into the message it came from. An EDNS OPT record (RFC 6891) is not
/// kept among the additional records: ``hasEDNS`` says whether there was one.
///
/// Parsing is strict about structure and bounds and says what was wrong (``DNSMessageError``).
public struct DNSMessage: Sendable, Hashable {
    /// Response codes (RFC 1035 §4.1.1, RFC 6895).
    public struct ResponseCode: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue & 0x0F }

        public static let noError = ResponseCode(rawValue: 0)
        public static let formatError = ResponseCode(rawValue: 1)
        public static let serverFailure = ResponseCode(rawValue: 2)
        public static let nameError = ResponseCode(rawValue: 3)
        public static let notImplemented = ResponseCode(rawValue: 4)
        public static let refused = ResponseCode(rawValue: 5)

        public var description: String {
            switch rawValue {
            case 0: "NOERROR"
            case 1: "FORMERR"
            case 2: "SERVFAIL"
            case 3: "NXDOMAIN"
            case 4: "NOTIMP"
            case 5: "REFUSED"
            default: "RCODE\(rawValue)"
            }
        }
    }

    /// One entry of the question section.
    public struct Question: Sendable, Hashable {
        /// The name asked, as it was written (letters' case kept, no trailing dot); not validated as a host name.
        public var name: String
        public var type: DNSRecordType
        public var recordClass: UInt16

        public init(name: String, type: DNSRecordType, recordClass: UInt16 = 1) {
            self.name = name
            self.type = type
            self.recordClass = recordClass
        }
    }

    /// One resource record of any type, its RDATA kept as bytes.
    public struct Record: Sendable, Hashable {
        /// The owner name, without a trailing dot (the root is the empty string).
        public var name: String
        public var type: DNSRecordType
        public var recordClass: UInt16
        public var ttlSeconds: UInt32
        /// An address record made from its address keeps the address as it is, and writes its RDATA when the
        /// message is encoded: the DoH service answers every cache hit this way, with no array per address.
        private var storage: Storage

        private enum Storage: Sendable {
            case bytes([UInt8])
            case address(IPAddress)
        }

        public init(name: String, type: DNSRecordType, recordClass: UInt16 = 1, ttlSeconds: UInt32, data: [UInt8]) {
            self.name = name
            self.type = type
            self.recordClass = recordClass
            self.ttlSeconds = ttlSeconds
            self.storage = .bytes(data)
        }

        /// An Internet-class A or AAAA record for `address`, by its family.
        public init(name: String, address: IPAddress, ttlSeconds: UInt32) {
            self.name = name
            switch address {
            case .v4: type = .a
            case .v6: type = .aaaa
            }
            recordClass = 1
            self.ttlSeconds = ttlSeconds
            storage = .address(address)
        }

        /// The RDATA in wire format, with any names in it uncompressed.
        public var data: [UInt8] {
            get {
                switch storage {
                case .bytes(let bytes): return bytes
                case .address(let address):
                    var bytes: [UInt8] = []
                    Self.append(address, to: &bytes)
                    return bytes
                }
            }
            set { storage = .bytes(newValue) }
        }

        /// The length of ``data``.
        var dataCount: Int {
            switch storage {
            case .bytes(let bytes): bytes.count
            case .address(.v4): 4
            case .address(.v6): 16
            }
        }

        /// Appends ``data`` to `bytes`.
        func appendData(to bytes: inout [UInt8]) {
            switch storage {
            case .bytes(let data): bytes.append(contentsOf: data)
            case .address(let address): Self.append(address, to: &bytes)
            }
        }

        private static func append(_ address: IPAddress, to bytes: inout [UInt8]) {
            switch address {
            case .v4(let v4):
                for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v4.value >> UInt32(shift))) }
            case .v6(let v6):
                for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v6.high >> UInt64(shift))) }
                for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v6.low >> UInt64(shift))) }
            }
        }

        /// The address of an Internet-class A record with 4 bytes of data or AAAA record with 16; nil for any other.
        public var address: IPAddress? {
            guard recordClass == 1 else { return nil }
            if case .address(let address) = storage {
                return (type == .a && address.isV4) || (type == .aaaa && !address.isV4) ? address : nil
            }
            let data = self.data
            if type == .a, data.count == 4 {
                return .v4(IPv4Address(data.reduce(0) { $0 << 8 | UInt32($1) }))
            }
            if type == .aaaa, data.count == 16 {
                let high = data[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
                let low = data[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
                return .v6(IPv6Address(high: high, low: low))
            }
            return nil
        }

        /// Records are equal when every field and the RDATA's bytes are, however the RDATA is held.
        public static func == (lhs: Record, rhs: Record) -> Bool {
            lhs.name == rhs.name && lhs.type == rhs.type && lhs.recordClass == rhs.recordClass && lhs.ttlSeconds == rhs.ttlSeconds
                && lhs.data == rhs.data
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(name)
            hasher.combine(type)
            hasher.combine(recordClass)
            hasher.combine(ttlSeconds)
            hasher.combine(data)
        }
    }

    public var id: UInt16
    /// QR: a response rather than a query.
    public var isResponse: Bool
    public var opcode: UInt8
    /// AA: the answer is authoritative.
    public var isAuthoritative: Bool = false
    /// TC: the message was truncated.
    public var isTruncated: Bool = false
    /// RD, copied from query to response.
    public var recursionDesired: Bool
    /// RA.
    public var recursionAvailable: Bool
    /// AD: the answer was authenticated by DNSSEC (RFC 4035).
    public var authenticData: Bool = false
    /// CD: DNSSEC checking disabled (RFC 4035).
    public var checkingDisabled: Bool = false
    public var responseCode: ResponseCode
    public var questions: [Question]
    public var answers: [Record]
    public var authorities: [Record] = []
    /// The additional records, without the EDNS OPT record.
    public var additionals: [Record] = []
    /// Whether the message carries an EDNS OPT record (RFC 6891). A response to a query with one carries one
    /// too: a minimal OPT advertising ``ednsPayloadSize``, version 0, no options.
    public var hasEDNS: Bool = false
    /// The UDP payload size the OPT record of an encoded message advertises.
    public static let ednsPayloadSize: UInt16 = 1232
    /// The largest DNS message there is (RFC 1035 §4.2.2: a two-byte length over TCP). Longer input is refused
    /// by the parsers, and a message that would encode longer is refused by ``encoded()``.
    public static let maxSize = 65_535

    public init(
        id: UInt16,
        isResponse: Bool = false,
        opcode: UInt8 = 0,
        recursionDesired: Bool = true,
        recursionAvailable: Bool = false,
        responseCode: ResponseCode = .noError,
        questions: [Question],
        answers: [Record] = []
    ) {
        self.id = id
        self.isResponse = isResponse
        self.opcode = opcode
        self.recursionDesired = recursionDesired
        self.recursionAvailable = recursionAvailable
        self.responseCode = responseCode
        self.questions = questions
        self.answers = answers
    }
}

extension IPAddress {
    fileprivate var isV4: Bool {
        if case .v4 = self { true } else { false }
    }
}

/// A DNS message that could not be parsed or encoded, and why.
///
/// Compare errors by ``code``; the ``reason`` is for people and may change.
public struct DNSMessageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for the kind of fault (usable as a metric dimension). A struct, not an enum,
    /// so that codes can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case truncated
            case trailingBytes = "trailing_bytes"
            case tooLarge = "too_large"
            case invalidName = "invalid_name"
            case invalidCompression = "invalid_compression"
            case invalidRecordData = "invalid_record_data"
            case malformed
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The message ends before what its header and lengths announce: inside the header, a question, a name, a
        /// record or its data.
        public static let truncated = Code(.truncated)
        /// Bytes follow the last record the header announces.
        public static let trailingBytes = Code(.trailingBytes)
        /// More than a DNS message holds: over 65,535 bytes, a section of over 65,535 entries, or a record of over
        /// 65,535 bytes of data (when encoding).
        public static let tooLarge = Code(.tooLarge)
        /// A name longer than 255 bytes, a label holding a dot, or a reserved label type.
        public static let invalidName = Code(.invalidName)
        /// A compression pointer that does not point backwards, or a chain of too many (a loop).
        public static let invalidCompression = Code(.invalidCompression)
        /// A record's data does not hold the fields its type has in exactly the length it gives.
        public static let invalidRecordData = Code(.invalidRecordData)
        /// Any other breach of the format: what ``DNSMessageError/init(reason:)`` gives. The parser and encoder
        /// throw the more precise codes.
        public static let malformed = Code(.malformed)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`truncated`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// What kind of fault this is.
    public let code: Code
    /// What was wrong and where: the section, the record, the name.
    public let reason: String
    /// The error underneath, when there is one (parsing itself has none). Not compared or hashed: two errors are
    /// the same when their code and reason are.
    public let cause: (any Error)?

    /// An error of code ``Code/malformed``, with no cause.
    /// - Parameter reason: what was wrong and where.
    public init(reason: String) {
        self.init(.malformed, reason: reason)
    }

    /// - Parameters:
    ///   - code: what kind of fault this is.
    ///   - reason: what was wrong and where.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, reason: String, cause: (any Error)? = nil) {
        self.code = code
        self.reason = reason
        self.cause = cause
    }

    public var description: String { "malformed DNS message: \(reason)" }

    public static func == (lhs: DNSMessageError, rhs: DNSMessageError) -> Bool {
        lhs.code == rhs.code && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(reason)
    }
}
