import HTTPDNSInterceptor
import Testing

/// Every rule of docs/CANONICAL-REQUEST.md in both modes: the spec's vectors, cases derived from each rule, idempotence,
/// and bad input.
@Suite struct CanonicalRequestTests {
    typealias Header = CanonicalRequest.Header

    static func normalize(_ url: String, _ mode: CanonicalRequest.Configuration.Mode) throws -> CanonicalRequest {
        try #require(try CanonicalRequest.normalize(method: "GET", url: url, configuration: .init(mode: mode)))
    }

    struct Vector: Sendable, CustomTestStringConvertible {
        let mode: CanonicalRequest.Configuration.Mode
        let url: String
        let canonical: String
        var testDescription: String { "\(mode): \(url)" }
    }

    static let vectors: [Vector] = [
        // The spec's samples (apple).
        Vector(mode: .apple, url: "http://www.apple.com", canonical: "http://www.apple.com/"),
        Vector(mode: .apple, url: "HTTP://WWW.APPLE.COM/", canonical: "http://www.apple.com/"),
        Vector(mode: .apple, url: "HtTpS://Example.COM/Path/File.HTML", canonical: "https://example.com/Path/File.HTML"),
        Vector(mode: .apple, url: "http:www.apple.com", canonical: "http://www.apple.com/"),
        Vector(mode: .apple, url: "http://www.apple.com:8080", canonical: "http://www.apple.com:8080/"),
        Vector(mode: .apple, url: "http://www.apple.com:80/", canonical: "http://www.apple.com:80/"),
        Vector(mode: .apple, url: "http://User:PW@WWW.Apple.COM/", canonical: "http://User:PW@www.apple.com/"),
        // The reference's rules, derived.
        Vector(mode: .apple, url: "http:/www.apple.com/x", canonical: "http://www.apple.com/x"),
        Vector(mode: .apple, url: "http://a.example?q=1", canonical: "http://a.example/?q=1"),
        Vector(mode: .apple, url: "http://a.example#Top", canonical: "http://a.example/#Top"),
        Vector(mode: .apple, url: "http://:8080/x", canonical: "http://localhost:8080/x"),
        Vector(mode: .apple, url: "http:///x", canonical: "http://localhost/x"),
        Vector(mode: .apple, url: "http://[2001:DB8::1]:8443/A", canonical: "http://[2001:db8::1]:8443/A"),
        Vector(mode: .apple, url: "http://a.example/%7e/./x/../y?Q=%2f", canonical: "http://a.example/%7e/./x/../y?Q=%2f"),
        Vector(mode: .apple, url: "https://a.example:443/", canonical: "https://a.example:443/"),
        // Standard: the reference plus RFC 3986 §6.
        Vector(mode: .standard, url: "HTTP://WWW.APPLE.COM", canonical: "http://www.apple.com/"),
        Vector(mode: .standard, url: "http:www.apple.com", canonical: "http://www.apple.com/"),
        Vector(mode: .standard, url: "http://www.apple.com:80/", canonical: "http://www.apple.com:80/"),
        Vector(mode: .standard, url: "http://a.example/%7e%41%2f%2F", canonical: "http://a.example/~A%2F%2F"),
        Vector(mode: .standard, url: "http://a.example/a/./b/../c", canonical: "http://a.example/a/c"),
        Vector(mode: .standard, url: "http://a.example/a/b/..", canonical: "http://a.example/a/"),
        Vector(mode: .standard, url: "http://a.example/../../x", canonical: "http://a.example/x"),
        Vector(mode: .standard, url: "http://a.example/%2e%2E/x", canonical: "http://a.example/x"),
        Vector(mode: .standard, url: "http://a.example/p?q=%7e%3d", canonical: "http://a.example/p?q=~%3D"),
        Vector(mode: .standard, url: "http://a.example/p#frag", canonical: "http://a.example/p"),
        Vector(mode: .standard, url: "http://[2001:DB8:0:0::1]/", canonical: "http://[2001:db8::1]/"),
        Vector(mode: .standard, url: "http://A.Example./x", canonical: "http://a.example./x"),
        Vector(mode: .standard, url: "http://us%65r@a.example/", canonical: "http://user@a.example/"),
        Vector(mode: .standard, url: "http://a.example:/x", canonical: "http://a.example/x"),
        Vector(mode: .standard, url: "http://[::1:2]/", canonical: "http://[::1:2]/"),
        Vector(mode: .standard, url: "http://[::FFFF:192.0.2.1]/", canonical: "http://[::ffff:192.0.2.1]/"),
        Vector(mode: .standard, url: "http://[2001:db8:0:1:0:0:0:1]/", canonical: "http://[2001:db8:0:1::1]/"),
        Vector(mode: .standard, url: "http://[2001:0:0:1:0:0:0:1]/", canonical: "http://[2001:0:0:1::1]/"),
        Vector(mode: .standard, url: "http://[2001:db8:1:1:1:1:1:1]/", canonical: "http://[2001:db8:1:1:1:1:1:1]/"),
        Vector(mode: .standard, url: "http://a.example:0080/", canonical: "http://a.example:80/"),
        Vector(mode: .standard, url: "http://a.example/.", canonical: "http://a.example/"),
        Vector(mode: .standard, url: "http://a.example/a/..", canonical: "http://a.example/"),
        Vector(mode: .standard, url: "http://a.example//x/./", canonical: "http://a.example//x/"),
        Vector(mode: .standard, url: "http:a.example:8080", canonical: "http://a.example:8080/"),
        Vector(mode: .standard, url: "http://a.example/?", canonical: "http://a.example/?"),
        Vector(mode: .standard, url: "http://u:p%40@a_b.example/", canonical: "http://u:p%40@a_b.example/"),
        Vector(mode: .apple, url: "http://a.example/p?q=1#Frag", canonical: "http://a.example/p?q=1#Frag"),
        // Canonical as given (kept whole, no copy made), and the near misses that are not.
        Vector(mode: .standard, url: "https://a.example/.well-known/x", canonical: "https://a.example/.well-known/x"),
        Vector(mode: .standard, url: "https://a.example/.../x", canonical: "https://a.example/.../x"),
        Vector(mode: .standard, url: "https://a.example/a/../x", canonical: "https://a.example/x"),
        Vector(mode: .standard, url: "https://a.example/a/..", canonical: "https://a.example/"),
        Vector(mode: .standard, url: "https://a.example/p?", canonical: "https://a.example/p?"),
        Vector(mode: .apple, url: "https://a.example/p#", canonical: "https://a.example/p#"),
        Vector(mode: .apple, url: "https://a.example/p?#", canonical: "https://a.example/p?#"),
        Vector(mode: .standard, url: "https://a.example/p#", canonical: "https://a.example/p"),
        Vector(mode: .standard, url: "https://a.example:/p", canonical: "https://a.example/p"),
        Vector(mode: .apple, url: "https://[2001:DB8::1]/", canonical: "https://[2001:db8::1]/"),
        Vector(mode: .apple, url: "https://[2001:db8::1]/", canonical: "https://[2001:db8::1]/"),
        Vector(mode: .standard, url: "https://u%7e@a.example/", canonical: "https://u~@a.example/"),
        Vector(mode: .standard, url: "https://u%7E@a.example/?q=%2F", canonical: "https://u~@a.example/?q=%2F"),
    ]

    @Test(arguments: vectors)
    func normalizesTheURL(_ vector: Vector) throws {
        let request = try Self.normalize(vector.url, vector.mode)
        #expect(request.url == vector.canonical)
        // Idempotent.
        let again = try Self.normalize(request.url, vector.mode)
        #expect(again.url == request.url)
        #expect(again == request)
    }

    struct Components: Sendable, CustomTestStringConvertible {
        let mode: CanonicalRequest.Configuration.Mode
        let url: String
        let scheme: String
        let userInfo: String?
        let host: String
        let port: Int?
        let path: String
        let query: String?
        let fragment: String?
        var testDescription: String { "\(mode): \(url)" }
    }

    /// The components are read from the canonical URL: the URL given when it was canonical, else the one written.
    static let components: [Components] = [
        Components(mode: .standard, url: "https://u:p@a.example:8443/x/y?q=1", scheme: "https", userInfo: "u:p", host: "a.example", port: 8443, path: "/x/y", query: "q=1", fragment: nil),
        Components(mode: .standard, url: "HTTP://U:P@A.Example:08443/x/./y?q=%7e#f", scheme: "http", userInfo: "U:P", host: "a.example", port: 8443, path: "/x/y", query: "q=~", fragment: nil),
        Components(mode: .apple, url: "http://a.example/p?#f", scheme: "http", userInfo: nil, host: "a.example", port: nil, path: "/p", query: "", fragment: "f"),
        Components(mode: .apple, url: "http:A.example?q#F", scheme: "http", userInfo: nil, host: "a.example", port: nil, path: "/", query: "q", fragment: "F"),
        Components(mode: .standard, url: "http://[2001:DB8::0:1]:80", scheme: "http", userInfo: nil, host: "[2001:db8::1]", port: 80, path: "/", query: nil, fragment: nil),
        Components(mode: .standard, url: "https://long-host-name.example.com/a-path-longer-than-fifteen-bytes?a-query-longer-than-fifteen", scheme: "https", userInfo: nil, host: "long-host-name.example.com", port: nil, path: "/a-path-longer-than-fifteen-bytes", query: "a-query-longer-than-fifteen", fragment: nil),
    ]

    @Test(arguments: components)
    func readsEachComponentFromTheCanonicalURL(_ expected: Components) throws {
        let request = try Self.normalize(expected.url, expected.mode)
        #expect(request.scheme == expected.scheme)
        #expect(request.userInfo == expected.userInfo)
        #expect(request.host == expected.host)
        #expect(request.port == expected.port)
        #expect(request.path == expected.path)
        #expect(request.query == expected.query)
        #expect(request.fragment == expected.fragment)
    }

    @Test func theHostHeaderOmitsADefaultPortAndTheNameToResolveItsTrailingDot() throws {
        #expect(try Self.normalize("http://a.example:80/", .standard).hostHeader == "a.example")
        #expect(try Self.normalize("https://a.example:443/", .standard).hostHeader == "a.example")
        #expect(try Self.normalize("https://a.example:80/", .standard).hostHeader == "a.example:80")
        #expect(try Self.normalize("http://[::1]:8080/", .standard).hostHeader == "[::1]:8080")
        #expect(try Self.normalize("http://A.Example./", .standard).nameToResolve == "a.example")
        #expect(try Self.normalize("http://a.example/", .standard).nameToResolve == "a.example")
        #expect(try Self.normalize("http://127.0.0.1/", .standard).nameToResolve == nil)
        #expect(try Self.normalize("http://[::1]/", .standard).nameToResolve == nil)
        #expect(try Self.normalize("http://127.0.0.1./", .standard).nameToResolve == nil, "an address with a trailing dot is no name")
        #expect(try Self.normalize("https://[::1]:443/", .standard).hostHeader == "[::1]")
        #expect(try Self.normalize("http:///", .apple).hostHeader == "localhost")
    }

    @Test func otherSchemesAreNotOurs() throws {
        #expect(try CanonicalRequest.normalize(method: "GET", url: "ftp://a.example/") == nil)
        #expect(try CanonicalRequest.normalize(method: "GET", url: "file:///etc/hosts") == nil)
        #expect(try CanonicalRequest.normalize(method: "GET", url: "ftp://a b/") == nil, "not ours, whatever else it holds")
        #expect(try CanonicalRequest.normalize(method: "GET", url: "HTTPS://a.example/")?.scheme == "https")
    }

    // MARK: Headers

    @Test func appleAddsTheThreeDefaultsToABareGET() throws {
        var configuration = CanonicalRequest.Configuration(mode: .apple)
        configuration.decodedEncodings = ["gzip", "deflate"]
        let request = try #require(try CanonicalRequest.normalize(method: "GET", url: "http://a.example", configuration: configuration))
        #expect(request.headers == [Header("Accept", "*/*"), Header("Accept-Encoding", "gzip, deflate"), Header("Accept-Language", "en-us")])
    }

    @Test func standardAddsOnlyWhatIsConfigured() throws {
        let bare = try #require(try CanonicalRequest.normalize(method: "GET", url: "http://a.example"))
        #expect(bare.headers == [Header("Accept", "*/*")], "no encoding the transport does not decode, no language not configured")
        var configuration = CanonicalRequest.Configuration()
        configuration.acceptLanguage = "de-DE"
        configuration.decodedEncodings = ["gzip"]
        let configured = try #require(try CanonicalRequest.normalize(method: "GET", url: "http://a.example", configuration: configuration))
        #expect(configured.headers == [Header("Accept", "*/*"), Header("Accept-Encoding", "gzip"), Header("Accept-Language", "de-DE")])
    }

    struct HeaderCase: Sendable, CustomTestStringConvertible {
        let method: String
        let hasBody: Bool
        let given: [Header]
        let contentType: String?
        let label: String
        var testDescription: String { label }
    }

    static let headerCases: [HeaderCase] = [
        HeaderCase(method: "POST", hasBody: true, given: [], contentType: "application/x-www-form-urlencoded", label: "POST with a body"),
        HeaderCase(method: "post", hasBody: true, given: [], contentType: "application/x-www-form-urlencoded", label: "post, any case"),
        HeaderCase(method: "POST", hasBody: false, given: [], contentType: nil, label: "POST without a body"),
        HeaderCase(method: "PUT", hasBody: true, given: [], contentType: nil, label: "PUT with a body"),
        HeaderCase(method: "POST", hasBody: true, given: [Header("content-type", "application/json")], contentType: "application/json", label: "given, any case"),
    ]

    @Test(arguments: headerCases)
    func contentTypeOnlyForAPOSTWithABody(_ test: HeaderCase) throws {
        let request = try #require(try CanonicalRequest.normalize(method: test.method, url: "http://a.example/", headers: test.given, hasBody: test.hasBody))
        let types = request.headers.filter { $0.name.lowercased() == "content-type" }
        #expect(types.map(\.value) == (test.contentType.map { [$0] } ?? []))
    }

    @Test func theLanguageDefaultFollowsTheModeUnlessConfigured() throws {
        var configuration = CanonicalRequest.Configuration()
        configuration.mode = .apple
        let apple = try #require(try CanonicalRequest.normalize(method: "GET", url: "http://a.example/", configuration: configuration))
        #expect(apple.headers.contains(Header("Accept-Language", "en-us")), "apple's default, even when the mode is set later")
        configuration.acceptLanguage = "fr"
        let configured = try #require(try CanonicalRequest.normalize(method: "GET", url: "http://a.example/", configuration: configuration))
        #expect(configured.headers.contains(Header("Accept-Language", "fr")))
        let given = [Header("accept-language", "de"), Header("Accept-Encoding", "br")]
        configuration.decodedEncodings = ["gzip"]
        let kept = try #require(try CanonicalRequest.normalize(method: "GET", url: "http://a.example/", headers: given, configuration: configuration))
        #expect(Array(kept.headers.dropFirst(2)) == [Header("Accept", "*/*")], "given fields are never overwritten: \(kept.headers)")
    }

    @Test func aGivenFieldIsKeptAndNeverDoubled() throws {
        let given = [Header("accept", "text/html"), Header("X-Trace", "1")]
        let request = try #require(try CanonicalRequest.normalize(method: "GET", url: "http://a.example/", headers: given, configuration: .init(mode: .apple)))
        #expect(request.headers.filter { $0.name.lowercased() == "accept" } == [Header("accept", "text/html")])
        #expect(Array(request.headers.prefix(2)) == given, "the request's fields first, in their order")
        let again = try #require(try CanonicalRequest.normalize(method: "GET", url: request.url, headers: Array(request.headers), configuration: .init(mode: .apple)))
        #expect(again.headers == request.headers, "idempotent")
    }

    // MARK: Bad input

    struct Bad: Sendable, CustomTestStringConvertible {
        let url: String
        let reason: String
        var mode: CanonicalRequest.Configuration.Mode = .standard
        var testDescription: String { "\(mode): \(url)" }
    }

    static let bad: [Bad] = [
        Bad(url: "a.example/x", reason: "not an absolute URL"),
        Bad(url: "http://a example/", reason: "a space or control character at byte 8"),
        Bad(url: "http://a.example/\u{7}", reason: "a space or control character"),
        Bad(url: "http://a.example:99999/", reason: "port 99999 is out of range"),
        Bad(url: "http://a.example:8o/", reason: "'8o' is not a port number"),
        Bad(url: "http://a.example:1234567/", reason: "is not a port number"),
        Bad(url: "http:///x", reason: "the host is empty"),
        Bad(url: "http://:8080/", reason: "the host is empty"),
        Bad(url: "http://a..example/", reason: "an empty label"),
        Bad(url: "http://\(String(repeating: "a", count: 64)).example/", reason: "longer than 63 bytes"),
        Bad(url: "http://\(Array(repeating: String(repeating: "a", count: 60), count: 5).joined(separator: "."))/", reason: "longer than 253 bytes"),
        Bad(url: "http://a.ex*ample/", reason: "holds a character a host name cannot"),
        Bad(url: "http://bücher.example/", reason: "holds a character a host name cannot"),
        Bad(url: "http://a.example/%zz", reason: "not followed by two hex digits"),
        Bad(url: "http://a.example/%4", reason: "not followed by two hex digits"),
        Bad(url: "http://a.example/é", reason: "not ASCII in the path"),
        Bad(url: "http://[2001:db8::1/", reason: "without its closing ']'"),
        Bad(url: "http://[2001:db8::g]/", reason: "is not an IPv6 address"),
        Bad(url: "http://[::1]x/", reason: "text after the IPv6 literal"),
        Bad(url: "http://./x", reason: "an empty label"),
        Bad(url: "http://./x", reason: "an empty label", mode: .apple),
        Bad(url: "http://a.example:0/", reason: "port 0 is out of range"),
        Bad(url: "http://a.example:/x", reason: "an empty port", mode: .apple),
        Bad(url: "http://a.example:080/", reason: "has leading zeros", mode: .apple),
        Bad(url: "http://a.example/?q=%g1", reason: "not followed by two hex digits"),
        Bad(url: "http://us%zzer@a.example/", reason: "not followed by two hex digits"),
        Bad(url: "http://a example/", reason: "a space or control character", mode: .apple),
        Bad(url: "http://a.example:70000/", reason: "out of range", mode: .apple),
    ]

    @Test(arguments: bad)
    func badInputIsATypedErrorSayingWhy(_ test: Bad) {
        let error = #expect(throws: CanonicalRequestError.self) {
            try CanonicalRequest.normalize(method: "GET", url: test.url, configuration: .init(mode: test.mode))
        }
        #expect(error?.reason.contains(test.reason) == true, "\(String(describing: error))")
        #expect(error?.url == test.url)
    }
}
