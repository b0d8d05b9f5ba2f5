import HTTPDNSCore
import HTTPDNSWire
import Testing

/// The small JSON writer every JSON answer goes through.
@Suite struct JSONTests {
    @Test func writesCompactText() {
        let value = JSON.object([
            ("host", .string("api.example.test")),
            ("ips", .array([.string("192.0.2.1"), .string("192.0.2.2")])),
            ("empty", .array([])),
            ("ttl", .integer(60)),
            ("ratio", .number(0.5)),
            ("nan", .number(.nan)),
            ("stale", .bool(true)),
            ("none", .null),
            ("nested", .object([])),
        ])
        #expect(
            value.text
                == #"{"host":"api.example.test","ips":["192.0.2.1","192.0.2.2"],"empty":[],"ttl":60,"ratio":0.5,"nan":null,"stale":true,"none":null,"nested":{}}"#
        )
    }

    @Test func escapesWhatJSONRequires() {
        #expect(JSON.quote(#"a"b\c"#) == #""a\"b\\c""#)
        #expect(JSON.quote("line\nfeed\r\ttab\u{1}") == #""line\nfeed\r\ttab\u0001""#)
        #expect(JSON.quote("naïve ☃") == "\"naïve ☃\"")
        #expect(JSON.string("\u{7F}").text == "\"\u{7F}\"")
    }
}
