extension DNSMessage {
    /// Parses a query: the header and the question section. Answer, authority and additional sections are
    /// skipped record by record (so an EDNS OPT record is accepted), but must be well formed. This is the DoH
    /// service's path for every request, so it reads no more than it needs.
    public init(parsingQuery bytes: some Collection<UInt8>) throws(DNSMessageError) {
        try self.init(parsingQuery: Array(bytes))
    }

    /// The same, for bytes already in an array: no generic copy on the DoH path.
    public init(parsingQuery bytes: [UInt8]) throws(DNSMessageError) {
        var reader = try DNSReader(bytes)
        let header = try reader.header()
        self.init(header: header, questions: try reader.questions(count: header.questionCount))
        let recordCount = Int(header.answerCount) + Int(header.authorityCount)
        for index in 0..<(recordCount + Int(header.additionalCount)) {
            let type = try reader.skipRecord("record \(index + 1) after the question")
            if type == .opt && index >= recordCount { hasEDNS = true }
        }
        guard reader.isAtEnd else {
            throw DNSMessageError(.trailingBytes, reason: "\(reader.remaining) bytes follow the last record")
        }
    }

    /// Parses a whole message: every section, each record with its RDATA, names in the RDATA of the RFC 1035
    /// types expanded. An OPT record in the additional section sets ``hasEDNS`` and is not kept.
    public init(parsing bytes: some Collection<UInt8>) throws(DNSMessageError) {
        try self.init(parsing: Array(bytes))
    }

    /// The same, for bytes already in an array.
    public init(parsing bytes: [UInt8]) throws(DNSMessageError) {
        var reader = try DNSReader(bytes)
        let header = try reader.header()
        self.init(header: header, questions: try reader.questions(count: header.questionCount))
        answers = try reader.records(count: header.answerCount, section: "answer")
        authorities = try reader.records(count: header.authorityCount, section: "authority")
        let additional = try reader.records(count: header.additionalCount, section: "additional")
        hasEDNS = additional.contains { $0.type == .opt }
        additionals = additional.filter { $0.type != .opt }
        guard reader.isAtEnd else {
            throw DNSMessageError(.trailingBytes, reason: "\(reader.remaining) bytes follow the last record")
        }
    }

    private init(header: DNSReader.Header, questions: [Question]) {
        let flags = header.flags
        self.init(
            id: header.id,
            isResponse: flags & 0x8000 != 0,
            opcode: UInt8((flags >> 11) & 0x0F),
            recursionDesired: flags & 0x0100 != 0,
            recursionAvailable: flags & 0x0080 != 0,
            responseCode: ResponseCode(rawValue: UInt8(flags & 0x0F)),
            questions: questions
        )
        isAuthoritative = flags & 0x0400 != 0
        isTruncated = flags & 0x0200 != 0
        authenticData = flags & 0x0020 != 0
        checkingDisabled = flags & 0x0010 != 0
    }

    /// The message in wire format. A record owned by the first question's name points to it (the name starts
    /// right after the 12-byte header); other names are written whole. Without a question, no records are
    /// written: a message that answers nothing carries nothing.
    /// - Throws: ``DNSMessageError`` when a section holds more than 65,535 entries, a record more than 65,535 bytes
    ///   of data, or the whole more than ``maxSize`` bytes.
    public func encoded() throws(DNSMessageError) -> [UInt8] {
        let extra = hasEDNS ? 1 : 0
        let limit = Int(UInt16.max)
        if questions.count > limit || answers.count > limit || authorities.count > limit || additionals.count + extra > limit {
            throw DNSMessageError(.tooLarge, reason: "a section holds more than 65,535 entries")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512)
        func u16(_ value: UInt16) {
            bytes.append(UInt8(value >> 8))
            bytes.append(UInt8(value & 0xFF))
        }
        func u32(_ value: UInt32) {
            u16(UInt16(value >> 16))
            u16(UInt16(value & 0xFFFF))
        }
        var flags: UInt16 = 0
        if isResponse { flags |= 0x8000 }
        flags |= UInt16(opcode & 0x0F) << 11
        if isAuthoritative { flags |= 0x0400 }
        if isTruncated { flags |= 0x0200 }
        if recursionDesired { flags |= 0x0100 }
        if recursionAvailable { flags |= 0x0080 }
        if authenticData { flags |= 0x0020 }
        if checkingDisabled { flags |= 0x0010 }
        flags |= UInt16(responseCode.rawValue)
        let hasRecords = !questions.isEmpty
        u16(id)
        u16(flags)
        u16(UInt16(questions.count))
        u16(hasRecords ? UInt16(answers.count) : 0)
        u16(hasRecords ? UInt16(authorities.count) : 0)
        u16(UInt16((hasRecords ? additionals.count : 0) + extra))
        for question in questions {
            Self.appendName(question.name, to: &bytes)
            u16(question.type.rawValue)
            u16(question.recordClass)
        }
        func append(_ records: [Record], after questionName: String) throws(DNSMessageError) {
            for record in records { try Self.append(record, after: questionName, to: &bytes) }
        }
        if hasRecords {
            try append(answers, after: questions[0].name)
            try append(authorities, after: questions[0].name)
            try append(additionals, after: questions[0].name)
        }
        if hasEDNS {
            bytes.append(0)  // the root name
            u16(DNSRecordType.opt.rawValue)
            u16(Self.ednsPayloadSize)
            u32(0)  // extended rcode 0, version 0, no flags
            u16(0)
        }
        guard bytes.count <= Self.maxSize else {
            throw DNSMessageError(.tooLarge, reason: "the message would be \(bytes.count) bytes; at most \(Self.maxSize) fit")
        }
        return bytes
    }

    /// One record: its owner name (a pointer to the first question's name when it is that name), type, class,
    /// TTL and data.
    private static func append(_ record: Record, after questionName: String, to bytes: inout [UInt8]) throws(DNSMessageError) {
        let dataCount = record.dataCount
        guard dataCount <= Int(UInt16.max) else {
            throw DNSMessageError(.tooLarge, reason: "a \(record.type) record of \(record.name) has \(dataCount) bytes of data; at most 65,535 fit")
        }
        if record.name.utf8.elementsEqual(questionName.utf8) {
            bytes.append(0xC0)
            bytes.append(0x0C)
        } else {
            appendName(record.name, to: &bytes)
        }
        let ttl = record.ttlSeconds
        bytes.append(UInt8(record.type.rawValue >> 8))
        bytes.append(UInt8(record.type.rawValue & 0xFF))
        bytes.append(UInt8(record.recordClass >> 8))
        bytes.append(UInt8(record.recordClass & 0xFF))
        bytes.append(UInt8(ttl >> 24))
        bytes.append(UInt8((ttl >> 16) & 0xFF))
        bytes.append(UInt8((ttl >> 8) & 0xFF))
        bytes.append(UInt8(ttl & 0xFF))
        bytes.append(UInt8(dataCount >> 8))
        bytes.append(UInt8(dataCount & 0xFF))
        record.appendData(to: &bytes)
    }

    /// A name's labels, each cut at 63 bytes, then the root; empty labels (two dots in a row) are left out.
    static func appendName(_ name: String, to bytes: inout [UInt8]) {
        var name = name
        // A native string's bytes are contiguous: walk them through a pointer, which is most of what encoding a DoH
        // answer costs otherwise.
        name.withUTF8 { utf8 in
            var start = 0
            while start < utf8.count {
                var end = start
                while end < utf8.count, utf8[end] != UInt8(ascii: ".") { end += 1 }
                let length = min(end - start, 63)
                if length > 0 {
                    bytes.append(UInt8(length))
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<(start + length)]))
                }
                start = end + 1
            }
        }
        bytes.append(0)
    }
}

/// Bounds-checked reading of a DNS message. What is being read is described only when it turns out malformed.
struct DNSReader {
    struct Header {
        var id: UInt16
        var flags: UInt16
        var questionCount: UInt16
        var answerCount: UInt16
        var authorityCount: UInt16
        var additionalCount: UInt16
    }

    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) throws(DNSMessageError) {
        guard bytes.count <= DNSMessage.maxSize else {
            throw DNSMessageError(.tooLarge, reason: "the message is \(bytes.count) bytes; a DNS message is at most \(DNSMessage.maxSize)")
        }
        self.bytes = bytes
    }

    var isAtEnd: Bool { offset == bytes.count }
    var remaining: Int { bytes.count - offset }

    mutating func header() throws(DNSMessageError) -> Header {
        Header(
            id: try u16("the header"),
            flags: try u16("the header"),
            questionCount: try u16("the header"),
            answerCount: try u16("the header"),
            authorityCount: try u16("the header"),
            additionalCount: try u16("the header")
        )
    }

    mutating func questions(count: UInt16) throws(DNSMessageError) -> [DNSMessage.Question] {
        var questions: [DNSMessage.Question] = []
        for index in 0..<Int(count) {
            let name = try name("question \(index + 1)")
            let type = try u16("question \(index + 1)")
            let recordClass = try u16("question \(index + 1)")
            questions.append(DNSMessage.Question(name: name, type: DNSRecordType(rawValue: type), recordClass: recordClass))
        }
        return questions
    }

    mutating func records(count: UInt16, section: String) throws(DNSMessageError) -> [DNSMessage.Record] {
        var records: [DNSMessage.Record] = []
        for index in 0..<Int(count) {
            records.append(try record("\(section) record \(index + 1)"))
        }
        return records
    }

    mutating func u8(_ part: @autoclosure () -> String) throws(DNSMessageError) -> UInt8 {
        guard offset < bytes.count else { throw DNSMessageError(.truncated, reason: "the message ends inside \(part())") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16(_ part: @autoclosure () -> String) throws(DNSMessageError) -> UInt16 {
        UInt16(try u8(part())) << 8 | UInt16(try u8(part()))
    }

    mutating func u32(_ part: @autoclosure () -> String) throws(DNSMessageError) -> UInt32 {
        UInt32(try u16(part())) << 16 | UInt32(try u16(part()))
    }

    mutating func skip(_ count: Int, _ part: @autoclosure () -> String) throws(DNSMessageError) {
        guard count <= remaining else { throw DNSMessageError(.truncated, reason: "the message ends inside \(part())") }
        offset += count
    }

    /// Reads a name, following compression pointers (RFC 1035 §4.1.4) that point backwards only.
    mutating func name(_ part: @autoclosure () -> String) throws(DNSMessageError) -> String {
        var name: [UInt8] = []
        try walkName(part()) { label in
            if !name.isEmpty { name.append(UInt8(ascii: ".")) }
            name.append(contentsOf: label)
        }
        return String(decoding: name, as: UTF8.self)
    }

    /// Reads a name, pointers followed, handing each label to `visit` in order. A name read as text must not have a
    /// dot inside a label (it would read as two); a name kept in RDATA keeps its labels apart and may.
    @inline(__always)
    private mutating func walkName(
        _ part: @autoclosure () -> String,
        allowingDots: Bool = false,
        _ visit: (ArraySlice<UInt8>) -> Void
    ) throws(DNSMessageError) {
        var cursor = offset
        var jumped = false
        var length = 0
        var jumps = 0
        while true {
            guard cursor < bytes.count else { throw DNSMessageError(.truncated, reason: "the message ends inside the name of \(part())") }
            let byte = bytes[cursor]
            switch byte & 0xC0 {
            case 0x00:
                if byte == 0 {
                    if !jumped { offset = cursor + 1 }
                    return
                }
                let end = cursor + 1 + Int(byte)
                guard end <= bytes.count else { throw DNSMessageError(.truncated, reason: "a label of \(part()) runs past the end of the message") }
                length += Int(byte) + 1
                // 255 bytes at most with the root's zero byte (RFC 1035 §3.1), so 254 for the labels.
                guard length <= 254 else { throw DNSMessageError(.invalidName, reason: "the name of \(part()) is longer than 255 bytes") }
                guard allowingDots || !bytes[(cursor + 1)..<end].contains(UInt8(ascii: ".")) else {
                    throw DNSMessageError(.invalidName, reason: "a label of \(part()) contains a dot")
                }
                visit(bytes[(cursor + 1)..<end])
                cursor = end
            case 0xC0:
                guard cursor + 1 < bytes.count else { throw DNSMessageError(.truncated, reason: "a compression pointer of \(part()) is cut off") }
                let target = Int(byte & 0x3F) << 8 | Int(bytes[cursor + 1])
                guard target < cursor else {
                    throw DNSMessageError(.invalidCompression, reason: "a compression pointer of \(part()) does not point backwards")
                }
                // A name has at most 127 labels; more pointers than that is a loop or an attack.
                jumps += 1
                guard jumps <= 127 else {
                    throw DNSMessageError(.invalidCompression, reason: "the name of \(part()) follows too many compression pointers")
                }
                if !jumped { offset = cursor + 2 }
                jumped = true
                cursor = target
            default:
                throw DNSMessageError(.invalidName, reason: "the name of \(part()) uses a reserved label type (0x\(String(byte, radix: 16)))")
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
                throw DNSMessageError(.invalidName, reason: "the name of \(part()) uses a reserved label type (0x\(String(byte, radix: 16)))")
            }
        }
    }

    /// Steps over one resource record. Returns its type.
    mutating func skipRecord(_ part: @autoclosure () -> String) throws(DNSMessageError) -> DNSRecordType {
        try skipName(part())
        let type = try u16(part())
        try skip(6, part())  // class, TTL
        let dataLength = try u16(part())
        try skip(Int(dataLength), part())
        return DNSRecordType(rawValue: type)
    }

    /// Reads one resource record, expanding the names in the RDATA of the RFC 1035 types.
    mutating func record(_ part: @autoclosure () -> String) throws(DNSMessageError) -> DNSMessage.Record {
        let name = try name(part())
        let type = DNSRecordType(rawValue: try u16(part()))
        let recordClass = try u16(part())
        let ttl = try u32(part())
        let dataLength = Int(try u16(part()))
        guard dataLength <= remaining else { throw DNSMessageError(.truncated, reason: "the data of \(part()) runs past the end of the message") }
        let end = offset + dataLength
        guard let layout = type.compressedNameLayout else {
            defer { offset = end }
            return DNSMessage.Record(name: name, type: type, recordClass: recordClass, ttlSeconds: ttl, data: Array(bytes[offset..<end]))
        }
        var data: [UInt8] = []
        data.reserveCapacity(dataLength)
        for piece in layout {
            switch piece {
            case .name:
                guard offset < end else { throw DNSMessageError(.invalidRecordData, reason: "the data of \(part()) (\(type)) is cut short") }
                try walkName("the data of \(part())", allowingDots: true) { label in
                    data.append(UInt8(label.count))
                    data.append(contentsOf: label)
                }
                data.append(0)
            case .bytes(let count):
                guard offset + count <= end else { throw DNSMessageError(.invalidRecordData, reason: "the data of \(part()) (\(type)) is cut short") }
                data.append(contentsOf: bytes[offset..<(offset + count)])
                offset += count
            case .characterString:
                guard offset < end, offset + 1 + Int(bytes[offset]) <= end else {
                    throw DNSMessageError(.invalidRecordData, reason: "the data of \(part()) (\(type)) is cut short")
                }
                let count = 1 + Int(bytes[offset])
                data.append(contentsOf: bytes[offset..<(offset + count)])
                offset += count
            }
        }
        guard offset == end else {
            throw DNSMessageError(.invalidRecordData, reason: "the fields of \(part()) (\(type)) do not fill its \(dataLength) bytes of data exactly")
        }
        return DNSMessage.Record(name: name, type: type, recordClass: recordClass, ttlSeconds: ttl, data: data)
    }
}
