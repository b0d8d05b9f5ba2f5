import AsyncHTTPClient
import NIOHTTP1
import Testing

@testable import HTTPDNSInterceptor

/// A response's cache storage policy is decided when first read, from the request and the head as they arrived.
@Suite("A response's cache storage policy")
struct ResponseStoragePolicyTests {
    static func response(_ fields: HTTPHeaders, method: String = "GET") throws -> InterceptingHTTPClient.Response {
        let request = try #require(try CanonicalRequest.normalize(method: method, url: "https://api.example/pets"))
        return InterceptingHTTPClient.Response(
            response: HTTPClientResponse(status: .ok, headers: fields), request: request, connectedAddress: nil, redirects: 0,
            resolvedByFallback: false, storagePolicy: .init()
        )
    }

    @Test func itIsTheDecisionForTheRequestAndTheHead() throws {
        #expect(try Self.response(["cache-control": "max-age=60"]).cacheStoragePolicy == .allowedInMemoryOnly)
        #expect(try Self.response(["cache-control": "no-store"]).cacheStoragePolicy == .notAllowed)
        #expect(try Self.response(["cache-control": "max-age=60"], method: "POST").cacheStoragePolicy == .notAllowed)
    }

    /// Changing the head or the request afterwards changes nothing; a policy set is the one read.
    @Test func laterChangesDoNotMoveItAndASetPolicyHolds() throws {
        var response = try Self.response(["cache-control": "no-store"])
        response.response.headers = ["cache-control": "max-age=60"]
        response.request = try #require(try CanonicalRequest.normalize(method: "GET", url: "http://api.example/pets"))
        #expect(response.cacheStoragePolicy == .notAllowed)
        // Not what the head as it is now would give (plain http, max-age: allowed).
        response.cacheStoragePolicy = .allowedInMemoryOnly
        #expect(response.cacheStoragePolicy == .allowedInMemoryOnly)
    }
}
