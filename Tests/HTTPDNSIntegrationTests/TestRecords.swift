/// The zone every integration test serves: TTLs, a CNAME chain, an AAAA-only name; anything else under
/// `test.` is NXDOMAIN.
enum TestRecords {
    static let lines = [
        "host-record=dual.test,192.0.2.10,2001:db8::10,60",
        "host-record=multi.test,192.0.2.21,300",
        "host-record=multi.test,192.0.2.22,300",
        "host-record=short.test,192.0.2.11,7",
        "host-record=v6only.test,2001:db8::66,120",
        // alias2 → alias1 → dual: the answer's TTL is the smallest along the chain (15).
        "cname=alias1.test,dual.test,40",
        "cname=alias2.test,alias1.test,15",
        "host-record=cold.test,192.0.2.99,2001:db8::99,300",
    ]
}

/// The zone the live service tests serve: names that resolve to loopback only, so a client that follows an
/// answer (curl after DoH) connects to our own server and nowhere else.
enum ServiceTestRecords {
    static let lines = [
        "host-record=serve.test,127.0.0.1,::1,300",
        "host-record=other.test,127.0.0.2,120",
        // readyz.invalid must be answered (NXDOMAIN), not refused, for /readyz to see a working upstream.
        "local=/invalid/",
    ]
}

/// Records of types besides addresses, for the tests that relay DNS messages as they are (c-ares, DoH).
enum OtherTypeRecords {
    static let lines = [
        "mx-host=mail.test,mx1.mail.test,10",
        #"txt-record=txt.test,"v=spf1 -all""#,
        "srv-host=_sip._tcp.srv.test,sip.srv.test,5060,1,5",
        "host-record=real.test,192.0.2.9,300",
        "cname=alias.test,real.test",
    ]
}
