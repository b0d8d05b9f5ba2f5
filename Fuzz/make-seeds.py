#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into Fuzz/Corpus/<target>/: a few valid inputs of each kind, and some
odd ones. Re-run after changing it; the files are checked in. Needs python's h2 (for the HTTP/2 seeds)."""
import base64
import os
import struct

import h2.config
import h2.connection

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Corpus")


def write(target, name, data):
    os.makedirs(os.path.join(root, target), exist_ok=True)
    with open(os.path.join(root, target, name), "wb") as f:
        f.write(data.encode("latin1") if isinstance(data, str) else data)


def dns_name(name):
    return b"".join(bytes([len(label)]) + label.encode() for label in name.split(".") if label) + b"\0"


query = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + dns_name("example.test") + struct.pack(">HH", 1, 1)
write("FuzzDNSMessage", "query-a", query)
answer = struct.pack(">HHHHHH", 0x1234, 0x8180, 1, 2, 1, 1) + dns_name("www.example.test") + struct.pack(">HH", 1, 1)
answer += b"\xc0\x0c" + struct.pack(">HHIH", 5, 1, 300, 2) + b"\xc0\x10"
answer += b"\xc0\x10" + struct.pack(">HHIH", 1, 1, 60, 4) + bytes([192, 0, 2, 1])
soa = dns_name("ns.example.test") + dns_name("admin.example.test") + struct.pack(">IIIII", 1, 2, 3, 4, 5)
answer += b"\xc0\x10" + struct.pack(">HHIH", 6, 1, 300, len(soa)) + soa
answer += b"\x00" + struct.pack(">HHIH", 41, 1232, 0, 0)
write("FuzzDNSMessage", "answer-cname-soa-opt", answer)
mx_data = struct.pack(">H", 10) + dns_name("mx.test")
write("FuzzDNSMessage", "answer-mx", struct.pack(">HHHHHH", 1, 0x8180, 1, 1, 0, 0) + dns_name("mail.test")
      + struct.pack(">HH", 15, 1) + b"\xc0\x0c" + struct.pack(">HHIH", 15, 1, 60, len(mx_data)) + mx_data)
write("FuzzDNSMessage", "answer-txt", struct.pack(">HHHHHH", 1, 0x8180, 1, 1, 0, 0) + dns_name("t.test")
      + struct.pack(">HH", 16, 1) + b"\xc0\x0c" + struct.pack(">HHIH", 16, 1, 60, 6) + b"\x05hello")
write("FuzzDNSMessage", "pointer-loop", struct.pack(">HHHHHH", 1, 0x8180, 1, 0, 0, 0) + b"\xc0\x0c" + struct.pack(">HH", 1, 1))

write("FuzzNativeJSON", "answer",
      '{"host":"api.example.test","ips":["192.0.2.10"],"ipsv6":["2001:db8::1"],"ttl":60,"origin_ttl":60}')
write("FuzzNativeJSON", "batch",
      '{"dns":[{"host":"a.test","type":1,"ips":["192.0.2.1"],"ttl":30},{"host":"a.test","type":28,"ips":[],"ttl":30,"stale":true}]}')
write("FuzzNativeJSON", "error", '{"code":"InvalidHost","message":"the host \\u00e9 is not a name"}')
write("FuzzNativeJSON", "nested", '{"host":"x","ips":[[[[[[1]]]]]],"ttl":1e400,"origin_ttl":-0.0}')

write("FuzzCacheControl", "common", "max-age=60, public")
write("FuzzCacheControl", "quoted", 'private="Set-Cookie, X-Foo", no-cache, s-maxage=30\nmust-revalidate')
write("FuzzCacheControl", "odd", 'max-age="120", max-age=0, no-store=, , ,stale-while-revalidate=99999999999999999999')

# Request targets after their leading "/".
write("FuzzQueryParameters", "d", "d?host=api.example.test&query=4,6")
write("FuzzQueryParameters", "odd", "resolve?host=a.test&host=b.test&=x&query&&type=AAAA#frag?host=c")
write("FuzzQueryParameters", "doh", "dns-query?dns=AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB&ct=application/dns-message")
write("FuzzQueryParameters", "plus", "d?host=a+b.test&t=1&s=%41")

# The service's example configuration file as it ships, and odd ones; the first byte also picks a flag.
with open(os.path.join(os.path.dirname(root), "..", "deploy", "httpdns.json"), "rb") as f:
    write("FuzzSettings", "deploy-httpdns.json", f.read())
write("FuzzSettings", "resolve", '{"source":"httpdns","servers":["https://192.0.2.1:443"],"budgetMs":2000,"pins":["sha256/AAAA"]}')
write("FuzzSettings", "health", '{"services":["https://[2001:db8::1]:8443/"],"dns":["127.0.0.1:53"],"allowPrivate":["*.corp.test"]}')
write("FuzzSettings", "odd", '{"listen":"[::1]:99999","upstream":"127.0.0.1","maxConnections":1e400,"accounts":{"a":{"secret":""}}}')
write("FuzzSettings", "not-an-object", '[{"listen":"127.0.0.1:8053"}]')

write("FuzzCanonicalRequest", "plain", "https://api.example.test/v1/items?b=2&a=1\nAccept: */*\nUser-Agent: fuzz")
write("FuzzCanonicalRequest", "messy",
      "HTTPS://User:Pw@API.Example.TEST:443/a/./b/../%7euser/%2F?q=%zz#frag\nHost: other.test\nAccept-Encoding: gzip")
write("FuzzCanonicalRequest", "ipv6", "http://[2001:DB8::1]:8080/\nCookie: a=b")

doh = base64.urlsafe_b64encode(query).rstrip(b"=").decode()
write("FuzzHTTP1", "hit-and-miss",
      "GET /d?host=api.example.test HTTP/1.1\r\nHost: x\r\n\r\nGET /resolve?host=a.test,b.test&query=4,6 HTTP/1.1\r\nHost: x\r\n\r\n")
write("FuzzHTTP1", "doh-get-post",
      f"GET /dns-query?dns={doh} HTTP/1.1\r\nHost: x\r\nAccept: application/dns-message\r\n\r\n"
      f"POST /dns-query HTTP/1.1\r\nHost: x\r\nContent-Type: application/dns-message\r\nContent-Length: {len(query)}\r\n\r\n"
      + query.decode("latin1"))
write("FuzzHTTP1", "signed-json",
      "GET /acct/sign_d?host=a.test&t=9999999999&s=00 HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /dns-query?name=nx.a.test&type=AAAA HTTP/1.1\r\nHost: x\r\nAccept: application/dns-json\r\n\r\n"
      "HEAD /healthz HTTP/1.0\r\n\r\n")
write("FuzzHTTP1", "chunked", "POST /dns-query HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
write("FuzzHTTP1", "half-head", "GET /d?host=exam")


def h2_seed(build, validate=True):
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(
        client_side=True, validate_outbound_headers=validate, normalize_outbound_headers=validate))
    conn.initiate_connection()
    build(conn)
    return conn.data_to_send()


def gets(conn):
    for index, path in enumerate(["/d?host=api.example.test", "/dns-query?dns=" + doh, "/resolve?host=a.test&query=6",
                                  "/healthz", "/acct/d?host=nx.b.test"]):
        conn.send_headers(1 + 2 * index, [(":method", "GET"), (":scheme", "https"), (":authority", "x"), (":path", path)],
                          end_stream=True)


def posts(conn):
    conn.send_headers(1, [(":method", "POST"), (":scheme", "https"), (":authority", "x"), (":path", "/dns-query"),
                          ("content-type", "application/dns-message"), ("content-length", str(len(query)))])
    conn.send_data(1, query, end_stream=True)
    conn.send_headers(3, [(":method", "POST"), (":scheme", "https"), (":authority", "x"), (":path", "/dns-query")])
    conn.send_data(3, b"\0" * 100)
    conn.reset_stream(3)
    conn.ping(b"12345678")
    conn.increment_flow_control_window(1000)


def continuations_and_trailers(conn):
    # A header block over HEADERS and CONTINUATION (h2 splits at the peer's frame size; sent raw instead), a body
    # with trailers, PRIORITY and WINDOW_UPDATE frames.
    conn.send_headers(1, [(":method", "POST"), (":scheme", "https"), (":authority", "x"), (":path", "/dns-query"),
                          ("content-type", "application/dns-message")])
    conn.send_data(1, query)
    conn.send_headers(1, [("x-trailer", "1")], end_stream=True)
    conn.prioritize(3, weight=32, depends_on=1)
    conn.increment_flow_control_window(100, stream_id=None)


def malformed(conn):
    # Requests each server must refuse on their own stream, then one it must take.
    fields = [(":method", "GET"), (":scheme", "https"), (":authority", "x"), (":path", "/d?host=a.test")]
    conn.send_headers(1, fields + [("connection", "close")], end_stream=True)
    conn.send_headers(3, [(":method", "GET"), (":scheme", "https")], end_stream=True)
    conn.send_headers(5, fields + [("te", "gzip")], end_stream=True)
    conn.send_headers(7, fields, end_stream=True)


def raw_frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def continuation_seed():
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    encoder = conn.encoder
    block = encoder.encode([(":method", "GET"), (":scheme", "https"), (":authority", "x"), (":path", "/d?host=a.test"),
                            ("x-long", "y" * 40)])
    return (conn.data_to_send() + raw_frame(1, 0x1, 1, block[:10]) + raw_frame(9, 0, 1, block[10:20])
            + raw_frame(9, 0x4, 1, block[20:]) + raw_frame(7, 0, 0, struct.pack(">II", 0, 0)))


def priority_across_continuation_seed():
    """HEADERS without END_HEADERS, padded past its priority fields, which a CONTINUATION would complete: a
    difference meant (docs/RELIABILITY.md); then a request on a stream of its own."""
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    block = conn.encoder.encode([(":method", "GET"), (":scheme", "https"), (":authority", "x"), (":path", "/d?host=a.test")])
    return (conn.data_to_send() + raw_frame(1, 0x29, 1, bytes([1, 0, 0, 0, 0, 0]))
            + raw_frame(9, 0x4, 1, bytes([16]) + block) + raw_frame(1, 0x5, 3, block))


for target in ("FuzzHTTP2", "FuzzHTTP2Differential"):
    write(target, "gets", h2_seed(gets))
    write(target, "post-reset-ping", h2_seed(posts))
write("FuzzHTTP2Differential", "trailers-priority-window", h2_seed(continuations_and_trailers))
write("FuzzHTTP2Differential", "malformed-then-good", h2_seed(malformed, validate=False))
write("FuzzHTTP2Differential", "continuations-goaway", continuation_seed())
write("FuzzHTTP2Differential", "priority-across-continuation", priority_across_continuation_seed())
