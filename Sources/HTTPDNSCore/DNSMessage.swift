/// The parts of a DNS message (RFC 1035 §4) that an HTTPDNS service reads and writes: the header, the
/// question, and A/AAAA answers. Parsing is strict about structure and bounds and says what was wrong.
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
        public var type: UInt16
        public var recordClass: UInt16

        public init(name: String, type: UInt16, recordClass: UInt16 = 1) {
            self.name = name
            self.type = type
            self.recordClass = recordClass
        }
    }

    /// One answer record: A or AAAA, owned by the question's name.
    public struct Answer: Sendable, Hashable {
        public var address: IPAddress
        public var ttlSeconds: UInt32

        public init(address: IPAddress, ttlSeconds: UInt32) {
            self.address = address
            self.ttlSeconds = ttlSeconds
        }
    }

    public var id: UInt16
    /// QR: a response rather than a query.
    public var isResponse: Bool
    public var opcode: UInt8
    /// RD, copied from query to response.
    public var recursionDesired: Bool
    /// RA.
    public var recursionAvailable: Bool
    public var responseCode: ResponseCode
    public var questions: [Question]
    public var answers: [Answer]
    /// Whether the message carries an EDNS OPT record (RFC 6891). A response to a query with one carries one
    /// too: a minimal OPT advertising ``ednsPayloadSize``, version 0, no options.
    public var hasEDNS: Bool = false
    /// The UDP payload size the OPT record of an encoded message advertises.
    public static let ednsPayloadSize: UInt16 = 1232

    public init(
        id: UInt16,
        isResponse: Bool = false,
        opcode: UInt8 = 0,
        recursionDesired: Bool = true,
        recursionAvailable: Bool = false,
        responseCode: ResponseCode = .noError,
        questions: [Question],
        answers: [Answer] = []
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

/// A DNS message that could not be parsed, and why.
public struct DNSMessageError: Error, Sendable, Hashable, CustomStringConvertible {
    public let reason: String
    public var description: String { "malformed DNS message: \(reason)" }
}

extension DNSMessage {
    /// Parses a query: the header and the question section. Answer, authority and additional sections are
    /// skipped record by record (so an EDNS OPT record is accepted), but must be well formed.
    public init(parsingQuery bytes: some Collection<UInt8>) throws(DNSMessageError) {
        var reader = Reader(Array(bytes))
        let id = try reader.u16("the header")
        let flags = try reader.u16("the header")
        let questionCount = try reader.u16("the header")
        let answerCount = try reader.u16("the header")
        let authorityCount = try reader.u16("the header")
        let additionalCount = try reader.u16("the header")
        var questions: [Question] = []
        for index in 0..<Int(questionCount) {
            let name = try reader.name("question \(index + 1)")
            let type = try reader.u16("question \(index + 1)")
            let recordClass = try reader.u16("question \(index + 1)")
            questions.append(Question(name: name, type: type, recordClass: recordClass))
        }
        var hasEDNS = false
        for index in 0..<(Int(answerCount) + Int(authorityCount) + Int(additionalCount)) {
            let type = try reader.skipRecord("record \(index + 1) after the question")
            if type == 41 && index >= Int(answerCount) + Int(authorityCount) { hasEDNS = true }
        }
        guard reader.isAtEnd else {
            throw DNSMessageError(reason: "\(reader.remaining) bytes follow the last record")
        }
        self.init(
            id: id,
            isResponse: flags & 0x8000 != 0,
            opcode: UInt8((flags >> 11) & 0x0F),
            recursionDesired: flags & 0x0100 != 0,
            recursionAvailable: flags & 0x0080 != 0,
            responseCode: ResponseCode(rawValue: UInt8(flags & 0x0F)),
            questions: questions
        )
        self.hasEDNS = hasEDNS
    }

    /// The message in wire format. Answers are written for the first question's name (a compression pointer
    /// to it), as A or AAAA by their address family.
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512)
        func u16(_ value: UInt16) { bytes.append(UInt8(value >> 8)); bytes.append(UInt8(value & 0xFF)) }
        func u32(_ value: UInt32) { u16(UInt16(value >> 16)); u16(UInt16(value & 0xFFFF)) }
        var flags: UInt16 = 0
        if isResponse { flags |= 0x8000 }
        flags |= UInt16(opcode & 0x0F) << 11
        if recursionDesired { flags |= 0x0100 }
        if recursionAvailable { flags |= 0x0080 }
        flags |= UInt16(responseCode.rawValue)
        u16(id)
        u16(flags)
        u16(UInt16(questions.count))
        u16(questions.isEmpty ? 0 : UInt16(answers.count))
        u16(0)
        u16(hasEDNS ? 1 : 0)
        for question in questions {
            appendName(question.name, to: &bytes)
            u16(question.type)
            u16(question.recordClass)
        }
        func opt() {
            bytes.append(0)  // the root name
            u16(41)
            u16(Self.ednsPayloadSize)
            u32(0)  // extended rcode 0, version 0, no flags
            u16(0)
        }
        guard !questions.isEmpty else {
            if hasEDNS { opt() }
            return bytes
        }
        for answer in answers {
            u16(0xC00C)  // the first question's name, which starts right after the 12-byte header
            switch answer.address {
            case .v4(let address):
                u16(1)
                u16(1)
                u32(answer.ttlSeconds)
                u16(4)
                u32(address.value)
            case .v6(let address):
                u16(28)
                u16(1)
                u32(answer.ttlSeconds)
                u16(16)
                u32(UInt32(address.high >> 32))
                u32(UInt32(address.high & 0xFFFF_FFFF))
                u32(UInt32(address.low >> 32))
                u32(UInt32(address.low & 0xFFFF_FFFF))
            }
        }
        if hasEDNS { opt() }
        return bytes
    }
}

extension DNSMessage {
    /// A name's labels, each cut at 63 bytes, then the root; empty labels (two dots in a row) are left out.
    private func appendName(_ name: String, to bytes: inout [UInt8]) {
        let utf8 = name.utf8
        var start = utf8.startIndex
        while start < utf8.endIndex {
            let end = utf8[start...].firstIndex(of: UInt8(ascii: ".")) ?? utf8.endIndex
            let length = min(utf8.distance(from: start, to: end), 63)
            if length > 0 {
                bytes.append(UInt8(length))
                bytes.append(contentsOf: utf8[start..<utf8.index(start, offsetBy: length)])
            }
            start = end == utf8.endIndex ? end : utf8.index(after: end)
        }
        bytes.append(0)
    }
}

/// Bounds-checked reading of a DNS message. What is being read is described only when it turns out malformed.
private struct Reader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }
    var remaining: Int { bytes.count - offset }

    mutating func u8(_ part: @autoclosure () -> String) throws(DNSMessageError) -> UInt8 {
        guard offset < bytes.count else { throw DNSMessageError(reason: "the message ends inside \(part())") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16(_ part: @autoclosure () -> String) throws(DNSMessageError) -> UInt16 {
        UInt16(try u8(part())) << 8 | UInt16(try u8(part()))
    }

    mutating func skip(_ count: Int, _ part: @autoclosure () -> String) throws(DNSMessageError) {
        guard count <= remaining else { throw DNSMessageError(reason: "the message ends inside \(part())") }
        offset += count
    }

    /// Reads a name, following compression pointers (RFC 1035 §4.1.4) that point backwards only.
    mutating func name(_ part: @autoclosure () -> String) throws(DNSMessageError) -> String {
        var name: [UInt8] = []
        var cursor = offset
        var jumped = false
        var length = 0
        var jumps = 0
        while true {
            guard cursor < bytes.count else { throw DNSMessageError(reason: "the message ends inside the name of \(part())") }
            let byte = bytes[cursor]
            switch byte & 0xC0 {
            case 0x00:
                if byte == 0 {
                    if !jumped { offset = cursor + 1 }
                    return String(decoding: name, as: UTF8.self)
                }
                let end = cursor + 1 + Int(byte)
                guard end <= bytes.count else { throw DNSMessageError(reason: "a label of \(part()) runs past the end of the message") }
                length += Int(byte) + 1
                guard length <= 255 else { throw DNSMessageError(reason: "the name of \(part()) is longer than 255 bytes") }
                guard !bytes[(cursor + 1)..<end].contains(UInt8(ascii: ".")) else {
                    throw DNSMessageError(reason: "a label of \(part()) contains a dot")
                }
                if !name.isEmpty { name.append(UInt8(ascii: ".")) }
                name.append(contentsOf: bytes[(cursor + 1)..<end])
                cursor = end
            case 0xC0:
                guard cursor + 1 < bytes.count else { throw DNSMessageError(reason: "a compression pointer of \(part()) is cut off") }
                let target = Int(byte & 0x3F) << 8 | Int(bytes[cursor + 1])
                guard target < cursor else { throw DNSMessageError(reason: "a compression pointer of \(part()) does not point backwards") }
                // A name has at most 127 labels; more pointers than that is a loop or an attack.
                jumps += 1
                guard jumps <= 127 else { throw DNSMessageError(reason: "the name of \(part()) follows too many compression pointers") }
                if !jumped { offset = cursor + 2 }
                jumped = true
                cursor = target
            default:
                throw DNSMessageError(reason: "the name of \(part()) uses a reserved label type (0x\(String(byte, radix: 16)))")
            }
        }
    }

    /// Steps over a name without following its pointers: a record only skipped costs its own bytes.
    mutating func skipName(_ part: @autoclosure () -> String) throws(DNSMessageError) {
        while true {
            let byte = try u8("the name of \(part())")
            switch byte & 0xC0 {
            case 0x00:
                if byte == 0 { return }
                try skip(Int(byte), "the name of \(part())")
            case 0xC0:
                try skip(1, "the name of \(part())")
                return
            default:
                throw DNSMessageError(reason: "the name of \(part()) uses a reserved label type (0x\(String(byte, radix: 16)))")
            }
        }
    }

    /// Steps over one resource record. Returns its type.
    mutating func skipRecord(_ part: @autoclosure () -> String) throws(DNSMessageError) -> UInt16 {
        try skipName(part())
        let type = try u16(part())
        try skip(6, part())  // class, TTL
        let dataLength = try u16(part())
        try skip(Int(dataLength), part())
        return type
    }
}
