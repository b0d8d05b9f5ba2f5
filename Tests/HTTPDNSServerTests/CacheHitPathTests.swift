import HTTPDNSCore
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Metrics
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Prometheus
import Testing

@testable import HTTPDNSServer

/// Cache hits answered on the event loop: the same bytes as the router over a live HTTP/1.1 connection
/// (``HTTP1FrontHandler``), and on its own the HTTP/2 streams' ``CacheHitHandler``: the same admission, and
/// responses in request order.
@Suite struct CacheHitPathTests {
    static let requests: [String] = [
        "/d?host=api.example.test",
        "/d?host=api.example.test&query=4,6",
        "/d?host=v4.example.test&query=6",
        "/d?host=missing.example.test",
        "/dns-query?dns=\(DoHAPITests.base64URL(DoHAPITests.query("api.example.test", type: 1)))",
        "/dns-query?dns=\(DoHAPITests.base64URL(DoHAPITests.query("api.example.test", type: 28)))",
        "/dns-query?dns=\(DoHAPITests.base64URL(DoHAPITests.query("missing.example.test", type: 1)))",
        "/dns-query?dns=\(DoHAPITests.base64URL(DoHAPITests.query("api.example.test", type: 16)))",
        "/dns-query?name=api.example.test&type=AAAA",
    ]

    /// Every request twice (a miss through the router, then a hit), through the router alone and through the
    /// whole service on a loopback port; the hits must match byte for byte.
    @Test func hitsGetTheRoutersBytes() async throws {
        let viaRouter = ServiceFixture(NativeAPITests.dual)
        let viaEventLoop = ServiceFixture(NativeAPITests.dual)
        let expected = ResponseLog()
        try await viaRouter.test { client in
            for uri in Self.requests {
                _ = try await client.execute(uri: uri, method: .get)
                expected.append(try await client.execute(uri: uri, method: .get))
            }
        }
        let actual = ResponseLog()
        try await viaEventLoop.testLive { client in
            for uri in Self.requests {
                _ = try await client.execute(uri: uri, method: .get)
                actual.append(try await client.execute(uri: uri, method: .get))
            }
        }
        for (uri, (expected, actual)) in zip(Self.requests, zip(expected.responses, actual.responses)) {
            #expect(actual.status == expected.status, "\(uri)")
            #expect(actual.body == expected.body, "\(uri)")
            #expect(actual.headers[.contentType] == expected.headers[.contentType], "\(uri)")
            #expect(actual.headers[.cacheControl] == expected.headers[.cacheControl], "\(uri)")
            #expect(actual.headers[.contentLength] == String(actual.body.readableBytes), "\(uri)")
            #expect(actual.headers[.date]?.hasSuffix(" GMT") == true, "\(uri)")
        }
        #expect(viaEventLoop.source.queryCount("api.example.test") == viaRouter.source.queryCount("api.example.test"))
    }

    @Test func aHitIsAnsweredWithoutTheRouter() async throws {
        let f = ServiceFixture(NativeAPITests.dual)
        let channel = try f.embeddedChannel()
        try channel.request("/d?host=api.example.test")
        #expect(try channel.forwarded() == 2, "a miss goes to the router, head and end")
        try channel.respond()
        try await f.prime("api.example.test")

        try channel.request("/d?host=api.example.test")
        #expect(try channel.forwarded() == 0)
        let (head, body) = try channel.response()
        #expect(head.status == .ok)
        #expect(String(buffer: body) == #"{"host":"api.example.test","ips":["192.0.2.10"],"ttl":60,"origin_ttl":60}"#)
        #expect(head.headerFields[.contentLength] == String(body.readableBytes))
        #expect(head.headerFields[.cacheControl] == "max-age=60")
        #expect(f.source.queryCount("api.example.test") == 1)
    }

    @Test func whatTheRouterMustAnswerIsHandedOn() async throws {
        let f = ServiceFixture(NativeAPITests.dual)
        try await f.prime("api.example.test")
        let channel = try f.embeddedChannel()
        // Each of these names a cached host, yet is the router's to answer.
        let others: [(HTTPRequest.Method, String, HTTPFields)] = [
            (.post, "/d?host=api.example.test", [:]),
            (.get, "/d?host=api.example.test", [.connection: "keep-alive, Close"]),
            (.get, "/d?host=api.example.test&query=5", [:]),
            (.get, "/d?host=-bad-", [:]),
            (.get, "/resolve?host=api.example.test", [:]),
            (.get, "/acct/d?host=api.example.test", [:]),
            (.get, "/d?host=api.example.test&pad=" + String(repeating: "x", count: 2048), [:]),
        ]
        for (method, path, headers) in others {
            try channel.request(path, method: method, headers: headers)
            #expect(try channel.forwarded() == 2, "\(method) \(path.prefix(60))")
            try channel.respond()
        }
        #expect(try channel.readOutbound(as: HTTPResponsePart.self) == nil)
    }

    @Test func aHitBehindAPendingRequestWaitsItsTurn() async throws {
        let f = ServiceFixture(NativeAPITests.dual)
        try await f.prime("api.example.test")
        let channel = try f.embeddedChannel()

        // Pipelined: a miss, then a hit. The hit must not overtake the miss's answer.
        try channel.request("/d?host=v4.example.test")
        try channel.request("/d?host=api.example.test")
        #expect(try channel.forwarded() == 4)
        #expect(try channel.readOutbound(as: HTTPResponsePart.self) == nil)
        try channel.respond()
        try channel.respond()

        // With nothing owed, hits are answered here again.
        try channel.request("/d?host=api.example.test")
        #expect(try channel.forwarded() == 0)
        #expect(try channel.response().0.status == .ok)
    }

    @Test func aRequestBodyIsDroppedNotHandedOn() async throws {
        let f = ServiceFixture(NativeAPITests.dual)
        try await f.prime("api.example.test")
        let channel = try f.embeddedChannel()
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .get, scheme: "http", authority: "x", path: "/d?host=api.example.test")))
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "ignored")))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(try channel.forwarded() == 0)
        #expect(try channel.response().0.status == .ok)
    }

    @Test func hitsTakeTokensFromTheSameBuckets() async throws {
        let f = ServiceFixture(NativeAPITests.dual) {
            $0.rateLimitPerSecond = 0.5
            $0.rateLimitBurst = 2
        }
        try await f.prime("api.example.test")
        let registry = f.registry
        try withMetricsFactory(PrometheusMetricsFactory(registry: registry)) {
            let channel = try f.embeddedChannel()
            for _ in 0..<2 {
                try channel.request("/d?host=api.example.test")
                #expect(try channel.response().0.status == .ok)
            }
            try channel.request("/d?host=api.example.test")
            let (head, body) = try channel.response()
            #expect(head.status == .tooManyRequests)
            #expect(head.headerFields[.retryAfter] == "2")
            #expect(String(buffer: body).contains(#""code":"RateLimited""#))
            f.clock.advance(seconds: 2)
            try channel.request("/d?host=api.example.test")
            #expect(try channel.response().0.status == .ok)

            var text: [UInt8] = []
            registry.emit(into: &text)
            let metrics = String(decoding: text, as: UTF8.self)
            #expect(metrics.contains(#"httpdns_server_rejected_total{reason="rate_limited"} 1"#))
            #expect(metrics.contains(#"http_server_request_duration_seconds_count{route="/d",method="GET",status="200"} 3"#))
            #expect(metrics.contains(#"http_server_request_duration_seconds_count{route="/d",method="GET",status="429"} 1"#))
        }
    }

    @Test func theDateHeaderIsAnIMFFixdate() {
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(1_795_000_000) == "Wed, 18 Nov 2026 11:06:40 GMT")
    }
}

/// Responses collected inside a test client's closure.
private final class ResponseLog: @unchecked Sendable {
    var responses: [TestResponse] = []
    func append(_ response: TestResponse) { responses.append(response) }
}

extension ServiceFixture {
    /// A channel with the service's ``CacheHitHandler``; what it hands on is read back with `forwarded()`.
    func embeddedChannel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(CacheHitHandler(responder: service.cacheHitResponder(logger: Logger(label: "httpdns.test"))))
        return channel
    }
}

extension ServiceFixture {
    /// Fills the cache with `host`'s IPv4 answer, as a miss through the router would.
    func prime(_ host: String) async throws {
        _ = try await cache.resolve(HostName(host), families: .ipv4)
    }
}

extension EmbeddedChannel {
    func request(_ path: String, method: HTTPRequest.Method = .get, headers: HTTPFields = [:]) throws {
        try writeInbound(HTTPRequestPart.head(HTTPRequest(method: method, scheme: "http", authority: "x", path: path, headerFields: headers)))
        try writeInbound(HTTPRequestPart.end(nil))
    }

    /// How many request parts reached the router's side of the handler.
    func forwarded() throws -> Int {
        var count = 0
        while try readInbound(as: HTTPRequestPart.self) != nil { count += 1 }
        return count
    }

    /// Answers one handed-on request, as the router would.
    func respond() throws {
        try writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        try writeOutbound(HTTPResponsePart.end(nil))
        while try readOutbound(as: HTTPResponsePart.self) != nil {}
    }

    /// The response the handler wrote: head and body, ended.
    func response() throws -> (HTTPResponse, ByteBuffer) {
        guard case .head(let head) = try readOutbound(as: HTTPResponsePart.self) else { throw ExpectedPart.head }
        guard case .body(let body) = try readOutbound(as: HTTPResponsePart.self) else { throw ExpectedPart.body }
        guard case .end = try readOutbound(as: HTTPResponsePart.self) else { throw ExpectedPart.end }
        return (head, body)
    }

    enum ExpectedPart: Error { case head, body, end }
}
