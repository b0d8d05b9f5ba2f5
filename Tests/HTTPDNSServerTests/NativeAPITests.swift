@testable import HTTPDNSServer
@testable import HTTPDNSServerTransport
import Foundation
import HTTPDNSCore
import HTTPDNSTesting
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The native API (docs/WIRE-FORMATS.md §1): shapes, TTLs, Cache-Control and every error row.
@Suite struct NativeAPITests {
    static let dual: [String: StaticSource.Reply] = [
        "api.example.test": .addresses(ipv4: ["192.0.2.10"], ipv6: ["2001:db8::10"], ttl: 60),
        "v4.example.test": .addresses(ipv4: ["192.0.2.11", "192.0.2.12"], ipv6: [], ttl: 120),
        "down.example.test": .failure(.timeout),
    ]

    private func object(_ response: TestResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.text.utf8)) as? [String: Any])
    }

    @Test func singleHostDefaultsToIPv4() async throws {
        let f = try ServiceFixture(Self.dual)
        try await f.test { client in
            let response = try await client.execute(uri: "/d?host=api.example.test", method: .get)
            #expect(response.status == .ok)
            #expect(response.text == #"{"host":"api.example.test","ips":["192.0.2.10"],"ttl":60,"origin_ttl":60}"#)
            #expect(response.headers[.cacheControl] == "max-age=60")
            #expect(response.headers[.contentType] == "application/json")
        }
    }

    @Test func bothFamiliesAndACountingDownTTL() async throws {
        let f = try ServiceFixture(Self.dual)
        try await f.test { client in
            _ = try await client.execute(uri: "/d?host=api.example.test&query=4,6", method: .get)
            f.clock.advance(seconds: 3)
            let response = try await client.execute(uri: "/d?host=api.example.test&query=6,4", method: .get)
            #expect(response.text == #"{"host":"api.example.test","ips":["192.0.2.10"],"ipsv6":["2001:db8::10"],"ttl":57,"origin_ttl":60}"#)
            #expect(response.headers[.cacheControl] == "max-age=57")
            #expect(f.source.queryCount("api.example.test") == 1)
        }
    }

    @Test func aNameWithoutAddressesIsAnEmptyAnswerWithTheNegativeTTL() async throws {
        let f = try ServiceFixture(Self.dual)
        try await f.test { client in
            let missing = try await client.execute(uri: "/d?host=missing.example.test", method: .get)
            #expect(missing.status == .ok)
            #expect(missing.text == #"{"host":"missing.example.test","ips":[],"ttl":30,"origin_ttl":30}"#)
            let noV6 = try await client.execute(uri: "/d?host=v4.example.test&query=6", method: .get)
            #expect(noV6.text == #"{"host":"v4.example.test","ipsv6":[],"ttl":30,"origin_ttl":30}"#)
        }
    }

    @Test func anUpstreamFailureWithNothingCachedIs503() async throws {
        let f = try ServiceFixture(Self.dual)
        try await f.test { client in
            let response = try await client.execute(uri: "/d?host=down.example.test", method: .get)
            #expect(response.status == .serviceUnavailable)
            #expect(try object(response)["code"] as? String == "UpstreamUnavailable")
            #expect(response.headers[.retryAfter] == "5")
        }
    }

    @Test func anExpiredAnswerIsServedStaleWhileTheUpstreamFails() async throws {
        let f = try ServiceFixture(Self.dual)
        try await f.test { client in
            _ = try await client.execute(uri: "/d?host=api.example.test", method: .get)
            f.source.set("api.example.test", .failure(.timeout))
            f.clock.advance(seconds: 61)
            let response = try await client.execute(uri: "/d?host=api.example.test", method: .get)
            #expect(response.status == .ok)
            #expect(response.text == #"{"host":"api.example.test","ips":["192.0.2.10"],"ttl":30,"origin_ttl":60,"stale":true}"#)
        }
    }

    @Test(arguments: [
        ("/d", HTTPResponse.Status.badRequest, "MissingArgument"),
        ("/d?host=", .badRequest, "MissingArgument"),
        ("/d?host=bad_name.test", .badRequest, "InvalidHost"),
        ("/d?host=192.0.2.1", .badRequest, "InvalidHost"),
        ("/d?host=api.example.test&query=5", .badRequest, "InvalidQuery"),
        ("/d?host=api.example.test&query=", .badRequest, "InvalidQuery"),
        ("/resolve", .badRequest, "MissingArgument"),
        ("/resolve?host=a.test,b.test,c.test,d.test,e.test,f.test", .badRequest, "TooManyHosts"),
        ("/resolve?host=a.test,,b.test", .badRequest, "InvalidHost"),
    ])
    func errorRows(uri: String, status: HTTPResponse.Status, code: String) async throws {
        let f = try ServiceFixture(Self.dual)
        try await f.test { client in
            let response = try await client.execute(uri: uri, method: .get)
            #expect(response.status == status)
            #expect(try object(response)["code"] as? String == code)
            #expect(response.headers[.contentType] == "application/json")
        }
    }

    @Test func otherMethodsGet405WithTheAllowHeader() async throws {
        let f = try ServiceFixture(Self.dual)
        try await f.test { client in
            for (uri, method) in [("/d?host=api.example.test", HTTPRequest.Method.post), ("/resolve?host=a.test", .delete), ("/metrics", .put)] {
                let response = try await client.execute(uri: uri, method: method)
                #expect(response.status == .methodNotAllowed)
                #expect(try object(response)["code"] as? String == "MethodNotAllowed")
                #expect(response.headers[.allow] == "GET")
            }
        }
    }

    /// Each record carries its own family's TTL (v4.example.test: A 120, the missing AAAA 30); Cache-Control
    /// follows the smallest.
    @Test func batchAnswersEveryHostAndFamilyInOrder() async throws {
        let f = try ServiceFixture(Self.dual)
        try await f.test { client in
            let response = try await client.execute(uri: "/resolve?host=api.example.test,v4.example.test&query=4,6", method: .get)
            #expect(response.status == .ok)
            #expect(
                response.text
                    == #"{"dns":[{"host":"api.example.test","ips":["192.0.2.10"],"type":1,"ttl":60},{"host":"api.example.test","ips":["2001:db8::10"],"type":28,"ttl":60},{"host":"v4.example.test","ips":["192.0.2.11","192.0.2.12"],"type":1,"ttl":120},{"host":"v4.example.test","ips":[],"type":28,"ttl":30}]}"#
            )
            #expect(response.headers[.cacheControl] == "max-age=30")
        }
    }

    @Test func anOverlongURLIs414() async throws {
        let f = try ServiceFixture(Self.dual) { $0.maxURLLength = 64 }
        try await f.test { client in
            let response = try await client.execute(uri: "/d?host=" + String(repeating: "a", count: 60) + ".test", method: .get)
            #expect(response.status == .uriTooLong)
            #expect(try object(response)["code"] as? String == "URLTooLong")
        }
    }

    /// A request that read the clock before another one took the lock must not refill the bucket.
    @Test func anOlderTimestampNeverRefillsTheBucket() {
        let limiter = RateLimiterProbe(ratePerSecond: 1, burst: 2)
        #expect(limiter.admit("a", nowNanoseconds: 10_000_000_000) == nil)
        #expect(limiter.admit("a", nowNanoseconds: 10_000_000_000) == nil)
        #expect(limiter.admit("a", nowNanoseconds: 9_999_000_000) != nil)
        #expect(limiter.admit("a", nowNanoseconds: 10_000_000_000) != nil)
        #expect(limiter.admit("a", nowNanoseconds: 11_000_000_000) == nil)
    }

    @Test func clientsOverTheirRateGet429WithRetryAfter() async throws {
        let f = try ServiceFixture(Self.dual) {
            $0.rateLimitPerSecond = 0.5
            $0.rateLimitBurst = 2
        }
        try await f.test { client in
            for _ in 0..<2 {
                #expect(try await client.execute(uri: "/d?host=api.example.test", method: .get).status == .ok)
            }
            let limited = try await client.execute(uri: "/d?host=api.example.test", method: .get)
            #expect(limited.status == .tooManyRequests)
            #expect(try object(limited)["code"] as? String == "RateLimited")
            #expect(limited.headers[.retryAfter] == "2")
            // The bucket refills with the clock.
            f.clock.advance(seconds: 2)
            #expect(try await client.execute(uri: "/d?host=api.example.test", method: .get).status == .ok)
        }
    }
}

typealias RateLimiterProbe = RateLimiter
