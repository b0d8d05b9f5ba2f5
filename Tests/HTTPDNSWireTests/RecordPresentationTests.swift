import HTTPDNSCore
import HTTPDNSWire
import Testing

/// RDATA in presentation form, as JSON DNS writes it.
@Suite struct RecordPresentationTests {
    static func name(_ text: String) -> [UInt8] {
        text.split(separator: ".").flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0]
    }

    static func record(_ type: DNSRecordType, _ data: [UInt8]) -> DNSMessage.Record {
        DNSMessage.Record(name: "x.test", type: type, ttlSeconds: 60, data: data)
    }

    @Test(arguments: [
        (record(.a, [192, 0, 2, 9]), "192.0.2.9"),
        (record(.aaaa, [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1]), "2001:db8::1"),
        (record(.cname, name("real.test")), "real.test."),
        (record(.ns, [0]), "."),
        (record(.mx, [0, 10] + name("mx1.mail.test")), "10 mx1.mail.test."),
        (record(.txt, [11] + Array("v=spf1 -all".utf8) + [3] + Array(#"a"b"#.utf8)), #""v=spf1 -all" "a\"b""#),
        (record(.srv, [0, 1, 0, 5, 0x13, 0xC4] + name("sip.srv.test")), "1 5 5060 sip.srv.test."),
        (record(.soa, name("ns.test") + name("hostmaster.test") + [0, 0, 0, 1, 0, 0, 0x0E, 0x10, 0, 0, 2, 0x58, 0, 1, 0x51, 0x80, 0, 0, 0, 120]), "ns.test. hostmaster.test. 1 3600 600 86400 120"),
        (record(.https, [0, 1, 0]), ##"\# 3 000100"##),
        (record(65_280, []), ##"\# 0"##),
        // Not what its type says: written in the generic form rather than misread.
        (record(.mx, [0]), ##"\# 1 00"##),
        (record(.a, [1, 2, 3]), ##"\# 3 010203"##),
        (record(.cname, [3, 97, 46, 98, 0]), #"a\.b."#),
        (record(.txt, [1, 0x07]), #""\007""#),
        // Inside quotes a dot or a space is text, as dig prints it; in a name it would split a label.
        (record(.txt, [31] + Array("v=spf1 include:_spf.example.com".utf8)), #""v=spf1 include:_spf.example.com""#),
    ])
    func writesEachType(_ record: DNSMessage.Record, _ expected: String) {
        #expect(RecordPresentation.text(record) == expected)
    }

    @Test func typesAreReadByMnemonicNumberOrTYPEn() {
        #expect(DNSRecordType(presentation: "mx") == .mx)
        #expect(DNSRecordType(presentation: "HTTPS") == .https)
        #expect(DNSRecordType(presentation: "TYPE65280")?.rawValue == 65_280)
        #expect(DNSRecordType(presentation: "33") == .srv)
        for bad in ["", "0", "TYPE0", "65536", "BOGUS", "TYPE"] { #expect(DNSRecordType(presentation: bad) == nil, "\(bad)") }
    }
}
