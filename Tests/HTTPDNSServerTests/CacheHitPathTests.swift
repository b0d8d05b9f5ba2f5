import HTTPDNSCore
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTesting
import Logging
import Metrics
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Prometheus
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSServerTransport

/// Cache hits answered on the event loop (``CacheHitResponder``): the same bytes as the router over a live HTTP/1.1
/// connection (``HTTP1FrontHandler``), the same admission and metrics, and targets read as the router reads them.
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
        let viaRouter = try ServiceFixture(NativeAPITests.dual)
        let viaEventLoop = try ServiceFixture(NativeAPITests.dual)
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
        let f = try ServiceFixture(NativeAPITests.dual)
        let responder = f.service.cacheHitResponder(logger: Logger(label: "httpdns.test"))
        let channel = try Self.channel()
        #expect(responder.reply(toGET: "/d?host=api.example.test", channel: channel) == nil, "a miss is the router's")
        try await f.prime("api.example.test")

        let (reply, route) = try #require(responder.reply(toGET: "/d?host=api.example.test", channel: channel))
        #expect(route == "/d")
        #expect(reply.status == .ok)
        #expect(String(buffer: reply.body) == #"{"host":"api.example.test","ips":["192.0.2.10"],"ttl":60,"origin_ttl":60}"#)
        #expect(reply.cacheControl == .maxAge(60))
        #expect(f.source.queryCount("api.example.test") == 1)
    }

    @Test func whatTheRouterMustAnswerIsHandedOn() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.prime("api.example.test")
        let responder = f.service.cacheHitResponder(logger: Logger(label: "httpdns.test"))
        let channel = try Self.channel()
        // Each of these names a cached host, yet is the router's to answer.
        let others = [
            "/d?host=api.example.test&query=5",
            "/d?host=-bad-",
            "/d",
            "/resolve?host=api.example.test",
            "/acct/d?host=api.example.test",
            "/d?host=api.example.test&pad=" + String(repeating: "x", count: 2048),
            "https://resolver.test/elsewhere?host=api.example.test",
        ]
        for target in others {
            #expect(responder.reply(toGET: target, channel: channel) == nil, "\(target.prefix(60))")
        }
    }

    @Test func hitsTakeTokensFromTheSameBuckets() async throws {
        let f = try ServiceFixture(NativeAPITests.dual) {
            $0.rateLimitPerSecond = 0.5
            $0.rateLimitBurst = 2
        }
        try await f.prime("api.example.test")
        let registry = f.registry
        try withMetricsFactory(PrometheusMetricsFactory(registry: registry)) {
            let responder = f.service.cacheHitResponder(logger: Logger(label: "httpdns.test"))
            var timers = RequestMetrics.HitTimers(metrics: responder.requestMetrics)
            let channel = try Self.channel()
            func hit() throws -> Reply {
                let (reply, route) = try #require(responder.reply(toGET: "/d?host=api.example.test", channel: channel))
                timers.record(route: route, status: reply.status, since: .now)
                return reply
            }
            #expect(try hit().status == .ok)
            #expect(try hit().status == .ok)
            let limited = try hit()
            #expect(limited.status == .tooManyRequests)
            #expect(limited.otherFields[.retryAfter] == "2")
            #expect(String(buffer: limited.body).contains(#""code":"RateLimited""#))
            f.clock.advance(seconds: 2)
            #expect(try hit().status == .ok)

            var text: [UInt8] = []
            registry.emit(into: &text)
            let metrics = String(decoding: text, as: UTF8.self)
            #expect(metrics.contains(#"httpdns_server_rejected_total{reason="rate_limited"} 1"#))
            #expect(metrics.contains(#"http_server_request_duration_seconds_count{route="/d",method="GET",status="200"} 3"#))
            #expect(metrics.contains(#"http_server_request_duration_seconds_count{route="/d",method="GET",status="429"} 1"#))
        }
    }

    /// The cache-hit paths read targets without Hummingbird's `URI` when they can; what they read must be what
    /// `URI` would have given the router.
    @Test(arguments: [
        "/dns-query?dns=AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB",
        "/d?host=a.test&query=4,6",
        "/d?query=6&host=a.test&host=b.test",
        "/d?host=&query",
        "/d?host",
        "/d?=x&host=a.test#fragment",
        "/d?x=1&&host=a.test&",
        "/d?host=a=b",
        "/d",
        "/d?",
        "/dns-query?name=a.test&type=AAAA",
    ])
    func plainTargetsReadAsURIDoes(_ target: String) throws {
        let plain = try #require(PlainTarget(target))
        let uri = URI(target)
        #expect(String(plain.path) == uri.path)
        for name in ["dns", "host", "query", "name", "type", "x", ""] {
            #expect(plain.first(name) == uri.queryParameters.first(name), "\(name) in \(target)")
        }
    }

    @Test func targetsWithPercentEncodingOrAnAuthorityAreLeftToURI() {
        #expect(PlainTarget("/d?host=a%2Etest") == nil)
        #expect(PlainTarget("https://a.test/d?host=a.test") == nil)
        #expect(PlainTarget("*") == nil)
    }

    private static func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        // EmbeddedChannel only records the address; nothing is sent anywhere.
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        return channel
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
    /// Fills the cache with `host`'s IPv4 answer, as a miss through the router would.
    func prime(_ host: String) async throws {
        _ = try await cache.resolve(HostName(host), families: .ipv4)
    }
}
