import HTTPDNSCore
import HTTPDNSWire
import Testing

/// Whole messages: every section, records of any type carried as RDATA, names in RDATA expanded.
@Suite struct DNSMessageRecordTests {
    /// A response for www.example.com A: a compressed CNAME to web.example.com, its A record, an authority SOA
    /// whose names are compressed, an MX and a TXT in the additional section, and an OPT record.
    static let response: [UInt8] = {
        var bytes: [UInt8] = [0xAB, 0xCD, 0x81, 0x80, 0, 1, 0, 2, 0, 1, 0, 3]
        // Question at 12: www.example.com A IN; "example.com" starts at 16.
        bytes += [3] + Array("www".utf8) + [7] + Array("example".utf8) + [3] + Array("com".utf8) + [0, 0, 1, 0, 1]
        // CNAME: owner -> pointer 12, RDATA "web" + pointer 16.
        bytes += [0xC0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 6, 3] + Array("web".utf8) + [0xC0, 16]
        let webOffset = 12 + 17 + 4 + 12
        // A for web.example.com (pointer to the CNAME's RDATA).
        bytes += [0xC0, UInt8(webOffset), 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 192, 0, 2, 7]
        // SOA for example.com: MNAME ns + pointer 16, RNAME hostmaster + pointer 16, five numbers.
        var soa: [UInt8] = [2] + Array("ns".utf8) + [0xC0, 16] + [10] + Array("hostmaster".utf8) + [0xC0, 16]
        soa += [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 1, 44]
        bytes += [0xC0, 16, 0, 6, 0, 1, 0, 0, 0, 90, 0, UInt8(soa.count)] + soa
        // MX 10 mail.example.com.
        bytes += [0xC0, 16, 0, 15, 0, 1, 0, 0, 0, 90, 0, 9, 0, 10, 4] + Array("mail".utf8) + [0xC0, 16]
        // TXT "hi" (no names: kept as it is).
        bytes += [0xC0, 16, 0, 16, 0, 1, 0, 0, 0, 90, 0, 3, 2] + Array("hi".utf8)
        // OPT.
        bytes += [0, 0, 41, 4, 0xD0, 0, 0, 0, 0, 0, 0]
        return bytes
    }()

    static func name(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for label in text.split(separator: ".") { bytes += [UInt8(label.utf8.count)] + Array(label.utf8) }
        return bytes + [0]
    }

    @Test func parsesEverySectionAndExpandsNamesInRDATA() throws {
        let message = try DNSMessage(parsing: Self.response)
        #expect(message.id == 0xABCD && message.isResponse && message.recursionAvailable)
        #expect(message.questions == [.init(name: "www.example.com", type: .a)])
        #expect(message.answers.map(\.type) == [.cname, .a])
        #expect(message.answers[0].data == Self.name("web.example.com"))
        #expect(message.answers[1].name == "web.example.com")
        #expect(message.answers[1].address == .v4(IPv4Address("192.0.2.7")!))
        #expect(message.answers[1].ttlSeconds == 30)
        let soa = try #require(message.authorities.first)
        #expect(soa.type == .soa && soa.name == "example.com")
        #expect(soa.data == Self.name("ns.example.com") + Self.name("hostmaster.example.com") + [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 1, 44])
        #expect(message.additionals.map(\.type) == [.mx, .txt])
        #expect(message.additionals[0].data == [0, 10] + Self.name("mail.example.com"))
        #expect(message.additionals[1].data == [2] + Array("hi".utf8))
        #expect(message.hasEDNS)
    }

    @Test func encodedMessagesParseBackToTheSameRecords() throws {
        let message = try DNSMessage(parsing: Self.response)
        let reparsed = try DNSMessage(parsing: message.encoded())
        #expect(reparsed == message)
    }

    @Test func addressRecordsRoundTrip() {
        let v6 = IPAddress.v6(IPv6Address("2001:db8::10")!)
        let record = DNSMessage.Record(name: "a.example", address: v6, ttlSeconds: 5)
        #expect(record.type == .aaaa && record.data.count == 16 && record.address == v6)
        #expect(DNSMessage.Record(name: "a.example", type: .a, ttlSeconds: 5, data: [1, 2, 3]).address == nil)
        #expect(DNSMessage.Record(name: "a.example", type: .txt, ttlSeconds: 5, data: [1, 2, 3, 4]).address == nil)
    }

    @Test func unknownTypesAreCarriedAsTheyAre() throws {
        var message = DNSMessage(id: 7, isResponse: true, questions: [.init(name: "a.example", type: 65_280)])
        message.answers = [.init(name: "a.example", type: 65_280, ttlSeconds: 9, data: [0xC0, 0x0C, 0xFF])]
        let reparsed = try DNSMessage(parsing: message.encoded())
        #expect(reparsed.answers == message.answers)
        #expect(reparsed.questions[0].type.description == "TYPE65280")
    }

    @Test(arguments: [
        // A CNAME whose RDATA says 6 bytes but whose name takes 4 more.
        ([UInt8]([0, 1, 0x81, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 5, 0, 1, 0, 0, 0, 1, 0, 2, 1, 0x61, 0]), "do not fill"),
        // An A record cut off inside its data.
        ([0, 1, 0x81, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2], "runs past the end"),
        // An SOA whose fixed numbers are missing.
        ([0, 1, 0x81, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 6, 0, 1, 0, 0, 0, 1, 0, 2, 0, 0], "cut short"),
    ])
    func rejectsRecordsThatDoNotHoldTogether(bytes: [UInt8], reason: String) {
        let error = #expect(throws: DNSMessageError.self) { try DNSMessage(parsing: bytes) }
        #expect(error?.reason.contains(reason) == true, "\(error?.reason ?? "no error")")
    }

    /// A label in RDATA may hold a dot (an SOA mailbox `john\.doe`): the name is kept as labels, so it is no
    /// ambiguity there, where an owner name read as text would be.
    @Test func aDotInsideAnRDATALabelIsKept() throws {
        var message = DNSMessage(id: 1, isResponse: true, questions: [.init(name: "example.com", type: .soa)])
        let soa = [UInt8(2)] + Array("ns".utf8) + [0] + [8] + Array("john.doe".utf8) + [0] + [UInt8](repeating: 0, count: 20)
        message.authorities = [.init(name: "example.com", type: .soa, ttlSeconds: 60, data: soa)]
        #expect(try DNSMessage(parsing: message.encoded()).authorities.first?.data == soa)
    }

    /// SRV's target may be compressed by older servers (RFC 3597 §4 says to expand it); it is.
    @Test func anSRVTargetIsExpanded() throws {
        var bytes: [UInt8] = [0, 1, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]
        bytes += [4] + Array("_sip".utf8) + [4] + Array("_udp".utf8) + [7] + Array("example".utf8) + [0, 0, 33, 0, 1]
        let exampleOffset = 12 + 5 + 5
        bytes += [0xC0, 12, 0, 33, 0, 1, 0, 0, 0, 60, 0, 12, 0, 1, 0, 2, 0x13, 0xC4, 3] + Array("sip".utf8) + [0xC0, UInt8(exampleOffset)]
        let message = try DNSMessage(parsing: bytes)
        #expect(message.answers.first?.data == [0, 1, 0, 2, 0x13, 0xC4] + Self.name("sip.example"))
    }

    @Test func messagesLargerThanDNSAllowsAreRefused() throws {
        let error = #expect(throws: DNSMessageError.self) { try DNSMessage(parsing: [UInt8](repeating: 0, count: 65_536)) }
        #expect(error?.reason.contains("at most 65535") == true)
        var message = DNSMessage(id: 1, isResponse: true, questions: [.init(name: "a.example", type: .txt)])
        message.answers = [.init(name: "a.example", type: .txt, ttlSeconds: 1, data: [UInt8](repeating: 1, count: 65_536))]
        #expect(throws: DNSMessageError.self) { try message.encoded() }
        message.answers = Array(repeating: .init(name: "a.example", type: .txt, ttlSeconds: 1, data: [UInt8](repeating: 1, count: 60_000)), count: 2)
        #expect(throws: DNSMessageError.self) { try message.encoded() }
    }

    @Test func randomBytesNeverCrashTheFullParser() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            var bytes = (0..<Int.random(in: 0..<96, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if bytes.count >= 12 { for index in 4..<12 { bytes[index] = index.isMultiple(of: 2) ? 0 : UInt8.random(in: 0...2) } }
            _ = try? DNSMessage(parsing: bytes)
        }
        // Also every prefix of a real response: each must fail cleanly or parse.
        for end in 0..<Self.response.count {
            #expect(throws: DNSMessageError.self) { try DNSMessage(parsing: Self.response[..<end]) }
        }
    }
}
