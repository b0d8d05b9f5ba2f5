import HTTPDNSCore
import HTTPDNSWire
import Testing

@Suite struct DNSMessageTests {
    /// A query for www.example.com A with RD set and an EDNS OPT record, as `dig` sends it.
    private let query: [UInt8] = [
        0x12, 0x34, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
        0x03, 0x77, 0x77, 0x77, 0x07, 0x65, 0x78, 0x61, 0x6D, 0x70, 0x6C, 0x65, 0x03, 0x63, 0x6F, 0x6D, 0x00,
        0x00, 0x01, 0x00, 0x01,
        0x00, 0x00, 0x29, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ]

    @Test func parsesAQueryWithEDNS() throws {
        let message = try DNSMessage(parsingQuery: query)
        #expect(message.id == 0x1234)
        #expect(!message.isResponse)
        #expect(message.recursionDesired)
        #expect(message.questions == [DNSMessage.Question(name: "www.example.com", type: 1)])
        #expect(message.hasEDNS)
    }

    @Test func encodesAResponseThatParsesBackWithItsAnswers() throws {
        var response = try DNSMessage(parsingQuery: query)
        response.isResponse = true
        response.recursionAvailable = true
        // dig sets AD in its query (RFC 6840 §5.7); a response claims it only when it validated.
        #expect(response.authenticData)
        response.authenticData = false
        response.answers = [
            .init(name: "www.example.com", address: .v4(IPv4Address("192.0.2.10")!), ttlSeconds: 57),
            .init(name: "www.example.com", address: .v6(IPv6Address("2001:db8::10")!), ttlSeconds: 30),
        ]
        let bytes = try response.encoded()
        // Header: id, QR|RD|RA, one question, two answers, and the OPT record answering the query's.
        #expect(Array(bytes[0..<12]) == [0x12, 0x34, 0x81, 0x80, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01])
        // First answer: pointer to the question name, A, IN, TTL 57, 4 bytes of address.
        let first = 12 + 17 + 4
        #expect(Array(bytes[first..<(first + 16)]) == [0xC0, 0x0C, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x39, 0x00, 0x04, 192, 0, 2, 10])
        let second = first + 16
        #expect(Array(bytes[second..<(second + 12)]) == [0xC0, 0x0C, 0x00, 0x1C, 0x00, 0x01, 0x00, 0x00, 0x00, 0x1E, 0x00, 0x10])
        let opt = second + 12 + 16
        // OPT: root name, type 41, payload size 1232, extended rcode/version/flags 0, no data.
        #expect(Array(bytes[opt...]) == [0x00, 0x00, 0x29, 0x04, 0xD0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])
        // The answers are well formed records: the parser skips them without complaint.
        let reparsed = try DNSMessage(parsingQuery: bytes)
        #expect(reparsed.isResponse && reparsed.recursionAvailable)
        #expect(reparsed.questions == response.questions)
        #expect(reparsed.hasEDNS)
    }

    @Test func aQueryWithoutEDNSGetsNoOPT() throws {
        let plain = DNSMessage(id: 1, questions: [.init(name: "a.example", type: 1)])
        let reparsed = try DNSMessage(parsingQuery: plain.encoded())
        #expect(!reparsed.hasEDNS)
        #expect(try plain.encoded()[11] == 0)
    }

    @Test func keepsTheResponseCode() throws {
        var response = try DNSMessage(parsingQuery: query)
        response.isResponse = true
        response.responseCode = .nameError
        let reparsed = try DNSMessage(parsingQuery: response.encoded())
        #expect(reparsed.responseCode == .nameError)
        #expect(reparsed.responseCode.description == "NXDOMAIN")
    }

    @Test func followsABackwardCompressionPointer() throws {
        // Two questions; the second name is "mail" + pointer to "example.com" in the first.
        var bytes: [UInt8] = [0, 1, 0x01, 0x00, 0, 2, 0, 0, 0, 0, 0, 0]
        bytes += [3, 0x77, 0x77, 0x77, 7] + Array("example".utf8) + [3] + Array("com".utf8) + [0, 0, 1, 0, 1]
        bytes += [4] + Array("mail".utf8) + [0xC0, 16, 0, 28, 0, 1]
        let message = try DNSMessage(parsingQuery: bytes)
        #expect(message.questions.map(\.name) == ["www.example.com", "mail.example.com"])
        #expect(message.questions[1].type == 28)
    }

    @Test(arguments: [
        ([UInt8]([0x12, 0x34, 0x01]), "ends inside the header"),
        ([0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 5, 0x61], "runs past the end"),
        ([0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1], "does not point backwards"),
        ([0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x80, 0, 1, 0, 1], "reserved label type"),
        ([0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0xFF], "bytes follow the last record"),
        ([0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1], "record 1 after the question"),
    ])
    func rejectsMalformedMessagesSayingWhy(bytes: [UInt8], reason: String) {
        let error = #expect(throws: DNSMessageError.self) { try DNSMessage(parsingQuery: bytes) }
        #expect(error?.reason.contains(reason) == true, "\(error?.reason ?? "no error")")
    }

    @Test func rejectsADotInsideALabel() {
        var bytes: [UInt8] = [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        bytes += [8] + Array("evil.com".utf8) + [0, 0, 1, 0, 1]
        let error = #expect(throws: DNSMessageError.self) { try DNSMessage(parsingQuery: bytes) }
        #expect(error?.reason.contains("contains a dot") == true)
    }

    /// A long chain of backward pointers is cut off after 127 hops instead of being walked to its end: each
    /// question's name points at the previous question's name, so question N takes N - 1 hops.
    @Test func rejectsALongPointerChain() {
        var bytes: [UInt8] = [0, 1, 0, 0, 0, 200, 0, 0, 0, 0, 0, 0]
        var previous = bytes.count
        bytes += [1, 0x61, 0, 0, 1, 0, 1]
        for _ in 1..<200 {
            let here = bytes.count
            bytes += [0xC0 | UInt8(previous >> 8), UInt8(previous & 0xFF), 0, 1, 0, 1]
            previous = here
        }
        let error = #expect(throws: DNSMessageError.self) { try DNSMessage(parsingQuery: bytes) }
        #expect(error?.reason.contains("too many compression pointers") == true, "\(error?.reason ?? "no error")")
        // The same chain within the limit parses.
        var short: [UInt8] = [0, 1, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0]
        previous = short.count
        short += [1, 0x61, 0, 0, 1, 0, 1]
        for _ in 1..<100 {
            let here = short.count
            short += [0xC0 | UInt8(previous >> 8), UInt8(previous & 0xFF), 0, 1, 0, 1]
            previous = here
        }
        #expect((try? DNSMessage(parsingQuery: short))?.questions.count == 100)
    }

    @Test func rejectsANameLongerThan255Bytes() {
        var bytes: [UInt8] = [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        for _ in 0..<5 { bytes += [63] + [UInt8](repeating: 0x61, count: 63) }
        bytes += [0, 0, 1, 0, 1]
        let error = #expect(throws: DNSMessageError.self) { try DNSMessage(parsingQuery: bytes) }
        #expect(error?.reason.contains("longer than 255") == true)
    }

    @Test func randomBytesNeverCrashTheParser() {
        var generator = SystemRandomNumberGenerator()
        var parsed = 0
        for _ in 0..<20_000 {
            let count = Int.random(in: 0..<64, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Keep the counts small so that some inputs get past the header.
            if bytes.count >= 12 { bytes[4] = 0; bytes[5] = 1; bytes[6] = 0; bytes[7] = 0; bytes[8] = 0; bytes[9] = 0; bytes[10] = 0; bytes[11] = 0 }
            if (try? DNSMessage(parsingQuery: bytes)) != nil { parsed += 1 }
        }
        // Most random inputs are malformed; the point is that none crashes or hangs.
        #expect(parsed < 20_000)
    }
}
