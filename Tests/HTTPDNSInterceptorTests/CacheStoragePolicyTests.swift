import HTTPDNSInterceptor
import Testing

/// Every rule of docs/CACHE-STORAGE-POLICY.md in both modes: the spec's sample vectors and cases derived from each rule.
@Suite struct CacheStoragePolicyTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var mode: CacheStoragePolicy.Configuration.Mode = .standard
        var method = "GET"
        var scheme = "http"
        var status = 200
        var request: [(name: String, value: String)] = []
        var response: [(name: String, value: String)] = []
        var shared = false
        var ranges = false
        var disk = false
        let expected: CacheStoragePolicy
        let label: String
        var testDescription: String { "\(mode): \(label)" }

        func decide() -> CacheStoragePolicy {
            var configuration = CacheStoragePolicy.Configuration(mode: mode)
            configuration.sharedCache = shared
            configuration.supportsRanges = ranges
            configuration.httpsOnDisk = disk
            return CacheStoragePolicy.decide(
                method: method, scheme: scheme, requestHeaders: request, status: status, responseHeaders: response,
                configuration: configuration
            )
        }
    }

    static let apple: [Case] = [
        // The spec's vectors.
        Case(mode: .apple, scheme: "https", expected: .allowedInMemoryOnly, label: "https 200"),
        Case(mode: .apple, expected: .allowed, label: "http 200"),
        Case(mode: .apple, status: 204, expected: .notAllowed, label: "http 204"),
        Case(mode: .apple, response: [("Cache-Control", "no-cache")], expected: .allowed, label: "response no-cache"),
        Case(mode: .apple, request: [("Cache-Control", "no-store, no-cache")], expected: .notAllowed, label: "request no-store, no-cache"),
        // Derived.
        Case(mode: .apple, scheme: "HTTPS", expected: .allowedInMemoryOnly, label: "scheme in capitals"),
        Case(mode: .apple, status: 304, expected: .allowed, label: "304 is on the reference's list"),
        Case(mode: .apple, status: 206, expected: .allowed, label: "206 is on the reference's list"),
        Case(mode: .apple, status: 410, expected: .allowed, label: "410"),
        Case(mode: .apple, status: 302, expected: .notAllowed, label: "302 is not on the list"),
        Case(mode: .apple, status: 500, expected: .notAllowed, label: "500"),
        Case(mode: .apple, method: "POST", expected: .allowed, label: "the reference ignores the method"),
        Case(mode: .apple, request: [("cache-control", "no-store")], expected: .allowed, label: "request no-store alone: the reference's weakness"),
        Case(mode: .apple, response: [("CACHE-CONTROL", "private, NO-STORE")], expected: .notAllowed, label: "response no-store, any case"),
        Case(mode: .apple, response: [("Cache-Control", "x-no-store-please")], expected: .notAllowed, label: "substring matching, as the reference"),
        Case(mode: .apple, request: [("Cache-Control", "no-store"), ("Cache-Control", "no-cache")], expected: .notAllowed, label: "request lines joined"),
        Case(mode: .apple, response: [("Vary", "*")], expected: .allowed, label: "the reference ignores Vary"),
    ]

    static let standard: [Case] = [
        // The spec's vectors.
        Case(request: [("Cache-Control", "no-store")], expected: .notAllowed, label: "request no-store"),
        Case(status: 304, expected: .notAllowed, label: "304"),
        Case(response: [("Vary", "*")], expected: .notAllowed, label: "Vary: *"),
        // Methods.
        Case(method: "HEAD", expected: .allowed, label: "HEAD"),
        Case(method: "POST", response: [("Cache-Control", "max-age=60")], expected: .notAllowed, label: "POST never"),
        Case(method: "get", expected: .notAllowed, label: "methods are case-sensitive"),
        // Statuses.
        Case(status: 101, expected: .notAllowed, label: "1xx never"),
        Case(status: 204, expected: .allowed, label: "204 heuristically cacheable"),
        Case(status: 308, expected: .allowed, label: "308"),
        Case(status: 501, expected: .allowed, label: "501"),
        Case(status: 302, expected: .notAllowed, label: "302 without freshness"),
        Case(status: 302, response: [("Cache-Control", "max-age=60")], expected: .allowed, label: "302 with max-age"),
        Case(status: 500, response: [("Expires", "Thu, 01 Dec 2026 16:00:00 GMT")], expected: .allowed, label: "500 with Expires"),
        Case(status: 503, response: [("Cache-Control", "public")], expected: .allowed, label: "503 public"),
        Case(status: 302, response: [("Cache-Control", "s-maxage=60")], expected: .notAllowed, label: "s-maxage counts only for a shared cache"),
        Case(status: 302, response: [("Cache-Control", "s-maxage=60")], shared: true, expected: .allowed, label: "s-maxage, shared"),
        Case(status: 206, expected: .notAllowed, label: "206 without range handling"),
        Case(status: 206, ranges: true, expected: .allowed, label: "206 with range handling"),
        Case(status: 600, expected: .notAllowed, label: "out of range"),
        Case(status: 203, expected: .allowed, label: "203"),
        Case(status: 300, expected: .allowed, label: "300"),
        Case(status: 404, expected: .allowed, label: "404"),
        Case(status: 405, expected: .allowed, label: "405"),
        Case(status: 410, expected: .allowed, label: "410"),
        Case(status: 414, expected: .allowed, label: "414"),
        Case(status: 302, response: [("Cache-Control", "private")], expected: .allowed, label: "private makes a response storable in a private cache"),
        Case(status: 302, response: [("Cache-Control", "private")], shared: true, expected: .notAllowed, label: "but not in a shared one"),
        Case(status: 500, response: [("expires", "0")], expected: .allowed, label: "Expires, any case, even invalid"),
        Case(scheme: "https", shared: true, expected: .allowedInMemoryOnly, label: "https, shared cache"),
        Case(request: [("Authorization", "Bearer x")], response: [("Cache-Control", "s-maxage=60")], shared: true, expected: .allowed, label: "Authorization with s-maxage"),
        Case(request: [("Cache-Control", "max-age=")], expected: .notAllowed, label: "a request Cache-Control that does not parse"),
        Case(response: [("Vary", "Accept"), ("Vary", " * ")], expected: .notAllowed, label: "Vary: * on a line of its own, padded"),
        // Cache-Control, parsed.
        Case(response: [("Cache-Control", "No-Store")], expected: .notAllowed, label: "response no-store, any case"),
        Case(response: [("Cache-Control", "x-no-store-please")], expected: .allowed, label: "no substring matching"),
        Case(response: [("Cache-Control", "private=\"no-store\"")], expected: .allowed, label: "no-store inside a quoted argument"),
        Case(response: [("Cache-Control", "no-cache")], expected: .allowed, label: "no-cache may be stored (revalidated on use)"),
        Case(response: [("Cache-Control", "max-age=60 60")], expected: .notAllowed, label: "unreadable: not stored"),
        Case(request: [("Cache-Control", "no-cache")], expected: .allowed, label: "request no-cache alone"),
        // Vary.
        Case(response: [("Vary", "Accept-Encoding, *")], expected: .notAllowed, label: "* among others"),
        Case(response: [("vary", "Accept-Encoding")], expected: .allowed, label: "Vary on a field"),
        // Shared cache.
        Case(response: [("Cache-Control", "private")], expected: .allowed, label: "private, private cache"),
        Case(response: [("Cache-Control", "private")], shared: true, expected: .notAllowed, label: "private, shared cache"),
        Case(request: [("Authorization", "Bearer x")], expected: .allowed, label: "Authorization, private cache"),
        Case(request: [("authorization", "Bearer x")], shared: true, expected: .notAllowed, label: "Authorization, shared cache"),
        Case(request: [("Authorization", "Bearer x")], response: [("Cache-Control", "public")], shared: true, expected: .allowed, label: "Authorization with public"),
        Case(request: [("Authorization", "Bearer x")], response: [("Cache-Control", "must-revalidate")], shared: true, expected: .allowed, label: "Authorization with must-revalidate"),
        // The medium.
        Case(scheme: "https", expected: .allowedInMemoryOnly, label: "https in memory"),
        Case(scheme: "https", disk: true, expected: .allowed, label: "https on disk when configured"),
    ]

    @Test(arguments: apple + standard)
    func decides(_ test: Case) {
        #expect(test.decide() == test.expected)
    }

    @Test func standardIsTheDefault() {
        let decided = CacheStoragePolicy.decide(method: "GET", scheme: "http", requestHeaders: [], status: 304, responseHeaders: [])
        #expect(decided == .notAllowed, "the apple mode would allow a 304")
    }
}
